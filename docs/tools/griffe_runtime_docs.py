"""A griffe extension for the API reference (``mkdocs.yml``): docstrings as Python shows them.

* A few docstrings hold numbers that come from the package's own tables, filled in when the
  module is imported (``MindHelperEnv``'s family count comes from
  :data:`mindhelper_env.scenarios.spec.FAMILIES`). griffe reads the source, which holds the
  ``{n_...}`` placeholder; for those classes this extension imports the class and takes the
  docstring Python has. A placeholder left unfilled fails the build.
* The docstrings use Sphinx roles (``:class:`~pkg.mod.Name```); MkDocs renders Markdown, so a
  role becomes inline code of the name as Sphinx would print it (``~`` keeps the last part).
* Doctest examples (``>>>`` lines, their ``...`` continuations and expected output, up to a
  blank line) are plain text in the docstrings, as ``pytest --doctest-modules`` and ``help()``
  want them; Markdown would read each ``>`` as a quote, so each example becomes a fenced
  ``pycon`` block, its ``# doctest:`` flags dropped (as Sphinx's ``trim_doctest_flags``).
* A package re-exports classes and functions of its modules (``from mindhelper_env.agents
  import SilentAgent``). When the defining module has its own entry on an API page
  (``::: module`` in ``docs/api/*.md``), the re-export is not rendered a second time; the
  package's entry lists what it re-exports, with the module that documents each.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import griffe

#: A placeholder filled at import, as ``{n_families}``.
PLACEHOLDER = re.compile(r"\{n_[a-z_]+\}")
#: A Sphinx cross-reference role: ``:mod:`x```, ``:class:`~x.Y```, ``:meth:`.Y.z```.
ROLE = re.compile(r":(?:py:)?(?:mod|class|func|meth|data|attr|exc|obj|const):`(~?)\.?([^`]+)`")
#: The first line of a doctest example, and a doctest option comment.
PROMPT = re.compile(r"^([ \t]*)>>>(?: |$)")
FLAGS = re.compile(r"[ \t]*#\s*doctest:[^\n]*$")
#: The modules that have their own entry on an API page.
API_PAGES = Path(__file__).resolve().parents[1] / "api"
ENTRY = re.compile(r"^:::[ \t]+([\w.]+)[ \t]*$", re.M)


def _role(match: re.Match) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def fence_doctests(text: str) -> str:
    """Each doctest example of ``text`` (from a ``>>>`` line to the next blank line) as a
    fenced ``pycon`` block at the example's indentation, without ``# doctest:`` flags.
    Examples already inside a fenced block are left alone."""
    lines, out, i, fenced = text.split("\n"), [], 0, False
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        match = None if fenced else PROMPT.match(line)
        if match is None:
            out.append(line)
            i += 1
            continue
        indent = match.group(1)
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip():
            body = lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip()
            out.append(indent + FLAGS.sub("", body))
            i += 1
        out.append(f"{indent}```")
    return "\n".join(out)


def _clean(text: str) -> str:
    return fence_doctests(ROLE.sub(_role, text))


def documented_modules(pages: Path = API_PAGES) -> set[str]:
    """The dotted names that have a ``::: name`` entry on an API page."""
    return {name for page in sorted(pages.glob("*.md"))
            for name in ENTRY.findall(page.read_text(encoding="utf-8"))}


class RuntimeDocstrings(griffe.Extension):
    def __init__(self) -> None:
        super().__init__()
        self.documented = documented_modules()

    def on_class_instance(self, *, cls: griffe.Class, **kwargs) -> None:
        doc = cls.docstring
        if doc is None or not PLACEHOLDER.search(doc.value):
            return
        module = importlib.import_module(cls.module.path)
        runtime = getattr(module, cls.name).__doc__
        if runtime is None or PLACEHOLDER.search(runtime):
            raise ValueError(f"{cls.path}: its docstring placeholders are not filled at import")
        doc.value = _clean(inspect.cleandoc(runtime))

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _clean(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for module in [pkg, *_submodules(pkg)]:
            if module.path in self.documented:
                self._hide_reexports(module)

    def _hide_reexports(self, module: griffe.Module) -> None:
        """Hide the re-exports of ``module`` documented by their own module's entry, and list
        them (with that module) at the end of ``module``'s docstring."""
        by_home: dict[str, list[str]] = {}
        for name, member in module.members.items():
            if not member.is_alias or not member.is_public:
                continue
            home = self._documented_home(member, module)
            if home is None:
                continue
            member.public = False
            by_home.setdefault(home, []).append(name)
        if not by_home:
            return
        listing = "; ".join(f"{', '.join(f'`{n}`' for n in names)} (`{home}`)"
                            for home, names in by_home.items())
        note = f"Also importable from `{module.path}` (documented with their module below): {listing}."
        if module.docstring is None:
            module.docstring = griffe.Docstring(note, parent=module)
        else:
            module.docstring.value = f"{module.docstring.value.rstrip()}\n\n{note}"

    def _documented_home(self, alias: griffe.Alias, module: griffe.Module) -> str | None:
        """The last module along ``alias``'s chain of imports, other than ``module``, that has
        an entry on an API page and renders the object there (it defines it, or re-exports it
        publicly); None when there is none (the re-export is then ``module``'s to show)."""
        home, hop = None, alias
        try:
            while hop.is_alias:
                hop = hop.target
                parent = hop.parent
                if (parent is not None and parent.path != module.path
                        and parent.path in self.documented and (not hop.is_alias or hop.is_public)):
                    home = parent.path
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None
        return home


def _submodules(module: griffe.Module):
    for member in module.modules.values():
        if not member.is_alias:
            yield member
            yield from _submodules(member)
