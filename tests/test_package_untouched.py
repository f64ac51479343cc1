"""Nothing writes into the installed package: every command, run with its default arguments
from a fresh folder, leaves the package's files byte for byte as they were (the shipped
skills, Trigger, suites ledger and pool are read-only inputs); ``mine-skills`` writes under
``runs/`` and refuses a path inside the package."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import mindhelper_env
import mindhelper_env.agents
import mindhelper_env.wrappers
from mindhelper_env.cli.main import main
from mindhelper_env.cli.mine_skills import DEFAULT_OUT


def _package_files() -> dict[str, str]:
    roots = {Path(m.__file__).resolve().parent
             for m in (mindhelper_env, mindhelper_env.agents, mindhelper_env.wrappers)}
    out = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture()
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_command_leaves_the_package_unchanged(fresh: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    before = _package_files()
    commands = [
        ["list"],
        ["suite", "export", "vh-dev-v2", "suite"],
        ["suite", "validate", "suite"],
        ["evaluate", "--suite", "vh-dev-v2", "--agents", "silent,mindclaw,learned-trigger",
         "--out", "run", "--limit", "1", "--no-progress"],
        ["score", "run"],
        ["mine-skills", "--episodes", "2"],
    ]
    try:
        import imageio  # noqa: F401
        import matplotlib  # noqa: F401

        commands.append(["render", "--suite", "vh-dev-v2", "--index", "0", "--agent",
                         "mindclaw", "--out", "ep.gif"])
    except ImportError:
        pass
    try:
        import jinja2  # noqa: F401

        commands.append(["report", "run", "--out", "report"])
    except ImportError:
        pass
    for argv in commands:
        assert main(argv) == 0, (argv, capsys.readouterr().err)
    after = _package_files()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"commands wrote into the package: {changed}"
    # mine-skills wrote its book under runs/ and says how to use it
    book = json.loads((fresh / DEFAULT_OUT).read_text())
    assert book["format"] == "mindclaw-skills-1"
    assert f"--agent mindclaw:skills={DEFAULT_OUT}" in capsys.readouterr().out


def test_mine_skills_refuses_a_path_inside_the_package(fresh: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from mindhelper_env.agents.mindclaw.skills import default_skills_path

    before = default_skills_path().read_bytes()
    rc = main(["mine-skills", "--episodes", "1", "--out", str(default_skills_path())])
    err = capsys.readouterr().err
    assert rc == 2 and "inside the installed package" in err and len(err.splitlines()) == 1
    assert default_skills_path().read_bytes() == before
