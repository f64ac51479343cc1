"""Figures that cannot go stale, and numbers in docstrings that come from the registry.

Every image of the README and the docs is made by ``docs/tools/make_figures.py``, which
records beside each, in ``docs/figures.json``, the generator version it was made with and
the file's sha256. These tests fail when a figure was made on another generator than the
package's (rerun the script), when a file was changed without the script, and when an image
is used or shipped in ``docs/`` without an entry.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mindhelper_env.scenarios.spec import FAMILIES, GENERATOR_VERSION, V3_FAMILIES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MANIFEST = DOCS / "figures.json"
SCRIPT = DOCS / "tools" / "make_figures.py"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")
#: Markdown images ``![alt](path)`` and HTML ``<img src="path">``.
IMAGE_REF = re.compile(r"!\[[^\]]*\]\(([^)\s]+)|<img[^>]*\bsrc=[\"']([^\"']+)")


def _manifest() -> dict:
    return json.loads(MANIFEST.read_text(encoding="utf-8"))["figures"]


def _used_images() -> set[str]:
    """Local images referenced by the README and the docs pages, as names under docs/."""
    used = set()
    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        for match in IMAGE_REF.finditer(page.read_text(encoding="utf-8")):
            ref = match.group(1) or match.group(2)
            if "://" in ref or ref.startswith("data:"):
                continue
            path = (page.parent / ref.split("#")[0]).resolve()
            assert path.is_file(), f"{page.relative_to(ROOT)}: image {ref} does not exist"
            used.add(path.relative_to(DOCS).as_posix())
    return used


def test_every_figure_is_made_by_the_script_on_the_current_generator() -> None:
    figures = _manifest()
    stale = {name: entry["generator"] for name, entry in figures.items()
             if entry["generator"] != GENERATOR_VERSION}
    assert not stale, (f"figures made on another generator than {GENERATOR_VERSION}: {stale}; "
                       "rerun python docs/tools/make_figures.py")
    for name, entry in figures.items():
        digest = _digest(name)
        assert digest == entry["sha256"], (f"{name} changed without docs/tools/make_figures.py "
                                           "(its sha256 differs from docs/figures.json)")
        assert entry["shows"] and entry["recipe"], name


#: ``<!-- figure: NAME -->`` ... ``<!-- /figure -->``: a table the script writes into a page.
BLOCK = re.compile(r"<!-- figure: ([\w-]+) -->\n(.*?)<!-- /figure -->", re.S)


def _digest(name: str) -> str:
    """The sha256 of a figure file, or of block ``NAME`` of page ``PAGE`` for ``PAGE#NAME``."""
    if "#" in name:
        page, block = name.split("#", 1)
        bodies = [m.group(2) for m in BLOCK.finditer((DOCS / page).read_text(encoding="utf-8"))
                  if m.group(1) == block]
        assert len(bodies) == 1, f"{page}: expected one block {block!r}, found {len(bodies)}"
        assert bodies[0].strip().startswith("|"), f"{name}: the block holds no table"
        return hashlib.sha256(bodies[0].encode("utf-8")).hexdigest()
    path = DOCS / name
    assert path.is_file(), name
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_table_block_in_the_docs_has_an_entry() -> None:
    figures = set(_manifest())
    blocks = {f"{page.relative_to(DOCS).as_posix()}#{m.group(1)}"
              for page in DOCS.rglob("*.md")
              for m in BLOCK.finditer(page.read_text(encoding="utf-8"))}
    assert blocks, "no table block found in the docs (the pattern is wrong)"
    assert blocks <= figures, f"table blocks without an entry: {blocks - figures}"
    assert {n for n in figures if "#" in n} <= blocks


def test_an_edited_table_block_is_caught(tmp_path, monkeypatch) -> None:
    name = next(n for n in sorted(_manifest()) if "#" in n)
    page, block = name.split("#", 1)
    fake_docs = tmp_path / "docs"
    fake_docs.mkdir()
    text = (DOCS / page).read_text(encoding="utf-8")
    (fake_docs / page).write_text(text.replace("| 50.00 |", "| 51.00 |", 1), encoding="utf-8")
    assert (fake_docs / page).read_text(encoding="utf-8") != text
    (fake_docs / "figures.json").write_text(json.dumps({"figures": {name: _manifest()[name]}}))
    monkeypatch.setattr(sys.modules[__name__], "DOCS", fake_docs)
    monkeypatch.setattr(sys.modules[__name__], "MANIFEST", fake_docs / "figures.json")
    with pytest.raises(AssertionError, match="changed without"):
        test_every_figure_is_made_by_the_script_on_the_current_generator()


def test_every_image_used_or_shipped_in_the_docs_has_an_entry() -> None:
    figures = set(_manifest())
    used = _used_images()
    assert used, "no image found in the README and docs (the pattern is wrong)"
    assert used <= figures, f"images without an entry in docs/figures.json: {used - figures}"
    shipped = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*")
               if p.suffix.lower() in IMAGE_SUFFIXES}
    assert shipped <= figures, f"images in docs/ the script does not make: {shipped - figures}"


def test_every_entry_names_a_group_the_script_makes() -> None:
    spec = importlib.util.spec_from_file_location("make_figures", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    groups = set(module.MAKERS)
    for name, entry in _manifest().items():
        assert entry["group"] in groups, (name, entry["group"])
        assert name in module.__doc__, f"the script's docstring does not describe {name}"


def test_a_stale_or_edited_figure_is_caught(tmp_path, monkeypatch) -> None:
    """The checks themselves: an entry from an older generator and a file whose digest
    differs both fail."""
    figures = _manifest()
    name = next(n for n in sorted(figures) if "#" not in n)
    fake_docs = tmp_path / "docs"
    fake_docs.mkdir()
    (fake_docs / name).write_bytes((DOCS / name).read_bytes())
    old = {**figures[name], "generator": "mh-gen-0.0"}
    (fake_docs / "figures.json").write_text(json.dumps({"figures": {name: old}}))
    monkeypatch.setattr(sys.modules[__name__], "DOCS", fake_docs)
    monkeypatch.setattr(sys.modules[__name__], "MANIFEST", fake_docs / "figures.json")
    with pytest.raises(AssertionError, match="another generator"):
        test_every_figure_is_made_by_the_script_on_the_current_generator()
    (fake_docs / "figures.json").write_text(json.dumps({"figures": {name: figures[name]}}))
    test_every_figure_is_made_by_the_script_on_the_current_generator()
    (fake_docs / name).write_bytes(b"edited by hand")
    with pytest.raises(AssertionError, match="changed without"):
        test_every_figure_is_made_by_the_script_on_the_current_generator()


# ------------------------------------------------------------------ docstring numbers
def test_env_docstring_counts_the_registered_families() -> None:
    from mindhelper_env.envs import MindHelperEnv

    doc = MindHelperEnv.__doc__
    assert f"Episodes come from {len(V3_FAMILIES)} scenario families" in doc
    assert f"all\n      {len(V3_FAMILIES)}, weighted" in doc
    assert f"draws from the\n    {len(FAMILIES)} families" in doc
    assert "{n_families" not in doc
    source = (ROOT / "mindhelper_env" / "envs" / "virtualhome.py").read_text(encoding="utf-8")
    assert "Episodes come from {n_families} scenario families" in source   # not hard-coded


def test_env_docstring_follows_the_registry_when_it_changes() -> None:
    """With a registry of three families the module, imported again, says three (in a fresh
    interpreter, so no other test sees the changed registry)."""
    code = ("import importlib\n"
            "import mindhelper_env.scenarios.spec as spec\n"
            "import mindhelper_env.envs.virtualhome as vh\n"
            "spec.V3_FAMILIES = spec.V3_FAMILIES[:3]\n"
            "print(importlib.reload(vh).MindHelperEnv.__doc__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert "Episodes come from 3 scenario families" in out
