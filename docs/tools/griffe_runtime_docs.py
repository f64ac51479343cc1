"""A griffe extension for the API reference (``mkdocs.yml``): docstrings as Python shows them.

* A few docstrings hold numbers that come from the package's own tables, filled in when the
  module is imported (``MindHelperEnv``'s family count comes from
  :data:`mindhelper_env.scenarios.spec.FAMILIES`). griffe reads the source, which holds the
  ``{n_...}`` placeholder; for those classes this extension imports the class and takes the
  docstring Python has. A placeholder left unfilled fails the build.
* The docstrings use Sphinx roles (``:class:`~pkg.mod.Name```); MkDocs renders Markdown, so a
  role becomes inline code of the name as Sphinx would print it (``~`` keeps the last part).
"""

from __future__ import annotations

import importlib
import inspect
import re

import griffe

#: A placeholder filled at import, as ``{n_families}``.
PLACEHOLDER = re.compile(r"\{n_[a-z_]+\}")
#: A Sphinx cross-reference role: ``:mod:`x```, ``:class:`~x.Y```, ``:meth:`.Y.z```.
ROLE = re.compile(r":(?:py:)?(?:mod|class|func|meth|data|attr|exc|obj|const):`(~?)\.?([^`]+)`")


def _role(match: re.Match) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


class RuntimeDocstrings(griffe.Extension):
    def on_class_instance(self, *, cls: griffe.Class, **kwargs) -> None:
        doc = cls.docstring
        if doc is None or not PLACEHOLDER.search(doc.value):
            return
        module = importlib.import_module(cls.module.path)
        runtime = getattr(module, cls.name).__doc__
        if runtime is None or PLACEHOLDER.search(runtime):
            raise ValueError(f"{cls.path}: its docstring placeholders are not filled at import")
        doc.value = ROLE.sub(_role, inspect.cleandoc(runtime))

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_role, obj.docstring.value)
