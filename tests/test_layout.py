"""The package's layout: no import cycle, no import from a lower layer to a higher one, no
module over 900 lines (docs/design.md, "Layers"), and every folder and data file of the
sources shipped by pyproject.toml's setuptools configuration.

The import graph is built from the source with ``ast``: every ``import`` and ``from ...
import`` in a module counts, at module level and inside functions alike. An edge goes to the
module named (``from pkg import mod`` to ``pkg.mod`` when that is a module, else to ``pkg``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Import name -> source folder (setuptools' package-dir in pyproject.toml).
SOURCES = {"mindhelper_env": ROOT / "mindhelper_env",
           "mindhelper_env.agents": ROOT / "agents",
           "mindhelper_env.wrappers": ROOT / "wrappers"}
MAX_LINES = 900

#: Layers, lowest first; a module belongs to the layer of its longest matching prefix (the
#: package root ``mindhelper_env`` only by its exact name). A module may import its own
#: layer and the ones below.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # the root (registers the envs from a table), where files live, schemas and the names
    # and types of the episode format (they import nothing of the package)
    ("base", ("mindhelper_env", "mindhelper_env.paths", "mindhelper_env.schemas",
              "mindhelper_env.scenarios.spec", "mindhelper_env.envs.registration")),
    ("world", ("mindhelper_env.world",)),
    ("actors", ("mindhelper_env.actors",)),
    ("simulation", ("mindhelper_env.backends",)),
    ("scenarios", ("mindhelper_env.scenarios",)),
    ("scoring", ("mindhelper_env.metrics", "mindhelper_env.similarity",
                 "mindhelper_env.scenarios.trigger_labels")),
    ("render", ("mindhelper_env.render",)),
    # reads the frames back into events (and may import render's sprite spec); it imports
    # nothing of world, actors or scenarios (test_perception_reads_only_pixels)
    ("perception", ("mindhelper_env.perception",)),
    ("envs", ("mindhelper_env.envs",)),
    ("models", ("mindhelper_env.models",)),
    ("agents", ("mindhelper_env.agents", "mindhelper_env.wrappers")),
    ("evaluation", ("mindhelper_env.evaluation", "mindhelper_env.plots",
                    "mindhelper_env.ray_backend", "mindhelper_env.inspect_task")),
    # the HTML report replays recorded episodes and reads evaluate's result files
    ("report", ("mindhelper_env.report",)),
    ("validity", ("mindhelper_env.validity",)),
    # the Trigger env wraps MindClaw's engine and trains it: it sits above the agents (it
    # moves next to MindClaw with trigger training, docs/design.md)
    ("training", ("mindhelper_env.agents.mindclaw.training", "mindhelper_env.trigger_training",
                  "mindhelper_env.envs.trigger",
                  "mindhelper_env.llm_training")),
    ("cli", ("mindhelper_env.cli",)),
)


def _mapped_elsewhere(prefix: str, parts: tuple[str, ...] | list[str]) -> bool:
    """``mindhelper_env/agents`` and ``/wrappers`` would shadow the folders that
    package-dir maps to those names (``agents/``, ``wrappers/``): skip them."""
    return prefix == "mindhelper_env" and bool(parts) and parts[0] in ("agents", "wrappers")


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for prefix, base in SOURCES.items():
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if _mapped_elsewhere(prefix, parts):
                continue
            mods[".".join([prefix, *parts])] = path
    return mods


MODULES = _modules()


def _known(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(name: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):  # every level: module body, functions, classes
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _known(alias.name)
                if target:
                    out.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                target = (f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES
                          else _known(module))
                if target:
                    out.add(target)
    out.discard(name)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(name: str) -> int:
    best, rank = -1, None
    for i, (_label, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            exact_only = prefix == "mindhelper_env"
            hit = name == prefix or (not exact_only and name.startswith(prefix + "."))
            if hit and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank is not None, f"{name} is in no layer: add it to LAYERS and docs/design.md"
    return rank


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(GRAPH):
        if root in index:
            continue
        work = [(root, iter(sorted(GRAPH[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(GRAPH[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_the_graph_sees_function_level_imports() -> None:
    # evaluation.settings imports the agents registry only inside functions
    assert "mindhelper_env.agents" in GRAPH["mindhelper_env.evaluation.settings"]
    assert "mindhelper_env.paths" in GRAPH["mindhelper_env.world.tdw_house"]


def test_no_import_cycle() -> None:
    cycles = _cycles()
    assert not cycles, "import cycles (module-level and function-level imports):\n" + \
        "\n".join(" <-> ".join(c) for c in cycles)


def test_no_import_from_a_lower_layer_to_a_higher_one() -> None:
    bad = [f"{a} ({LAYERS[_layer(a)][0]}) imports {b} ({LAYERS[_layer(b)][0]})"
           for a in sorted(GRAPH) for b in sorted(GRAPH[a]) if _layer(b) > _layer(a)]
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_is_at_most_900_lines(name: str) -> None:
    n = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{MODULES[name].relative_to(ROOT)}: {n} lines (split it by concern)"


def test_perception_reads_only_pixels() -> None:
    # the pixel-perception reference reads frames and the candidates' ids and classes, never
    # the world: nothing under world/, actors/ or scenarios/ (issue 51), also not through
    # another module of the package that does
    perception = sorted(n for n in GRAPH if n.startswith("mindhelper_env.perception"))
    assert perception, "mindhelper_env.perception is missing"
    banned = ("mindhelper_env.world", "mindhelper_env.actors", "mindhelper_env.scenarios")
    bad = []
    for name in perception:
        seen, todo = {name}, [name]
        while todo:
            for dep in GRAPH[todo.pop()]:
                if dep in seen:
                    continue
                seen.add(dep)
                todo.append(dep)
                if dep.startswith(banned):
                    bad.append(f"{name} -> ... -> {dep}")
    assert not bad, "perception/ reaches the world:\n" + "\n".join(sorted(set(bad)))


def test_design_map_names_every_package() -> None:
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    folders = sorted({p.parent.relative_to(ROOT / "mindhelper_env").as_posix()
                      for p in (ROOT / "mindhelper_env").rglob("__init__.py")} - {"."})
    missing = [f for f in folders if f"{f}/" not in design]
    assert not missing, f"docs/design.md's layout map lacks {missing}"
    top = sorted(p.name for p in (ROOT / "mindhelper_env").glob("*.py")
                 if p.name != "__init__.py")
    missing = [f for f in top if f not in design]
    assert not missing, f"docs/design.md's layout map lacks {missing}"


def _setuptools_config() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11 (CI runs 3.11)
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]


def _shipped_folders() -> dict[str, Path]:
    """Import name -> folder for every folder of the three sources, __pycache__ aside."""
    out: dict[str, Path] = {}
    for prefix, base in SOURCES.items():
        for path in [base, *sorted(p for p in base.rglob("*") if p.is_dir())]:
            parts = path.relative_to(base).parts
            if "__pycache__" in parts or _mapped_elsewhere(prefix, parts):
                continue
            out[".".join([prefix, *parts])] = path
    return out


def test_every_folder_is_a_listed_package_and_every_data_file_ships() -> None:
    # setuptools warns of a folder missing from `packages` ("package would be ignored") and
    # may leave it out of the wheel; a data file no package-data pattern matches is left out
    config = _setuptools_config()
    folders = _shipped_folders()
    listed = set(config["packages"])
    missing = sorted(set(folders) - listed)
    assert not missing, f"pyproject.toml [tool.setuptools] packages lacks {missing}"
    assert not listed - set(folders), "packages lists folders that do not exist"
    unmatched = []
    for name, folder in folders.items():
        patterns = config["package-data"].get(name, [])
        for path in sorted(p for p in folder.iterdir() if p.is_file()):
            if path.suffix not in (".py", ".pyc") and not any(path.match(g) for g in patterns):
                unmatched.append(path.relative_to(ROOT).as_posix())
    assert not unmatched, f"no package-data pattern ships {unmatched}"
    assert "pool_data" in {f.name for f in folders.values()}  # the walk sees data folders
