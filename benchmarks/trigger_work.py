"""The Trigger env's work per step, measured without the machine's noise, and its trajectory.

Run: ``python benchmarks/trigger_work.py [hash|instructions] [--steps N] [--ref REF ...]``.

* ``hash``: a SHA-256 (first 16 hex digits) over ``--steps`` masked random steps of
  ``MindHelper-Trigger-v0`` from seed 0 on a cold cache: every observation, reward, flag,
  mask and ``info`` (final records included) and each finished episode's trace. A change
  that claims to play the same trajectories must leave it as it was.
* ``instructions``: CPU instructions per step of the same loop, counted by valgrind's
  callgrind (the loop of ``--steps`` steps minus the same process with no step, so imports
  and start-up cancel out). Unlike a timing it does not move with the load of a shared
  machine, so two versions can be compared to a percent; it needs ``valgrind``
  (``apt-get install valgrind``) and takes about 45 s per 1,000 steps.

``--ref`` (repeatable) also measures each git ref of this repository, unpacked into a
temporary folder with the package's layout (``agents`` and ``wrappers`` inside
``mindhelper_env``) and imported ahead of the installed copy; ``worktree`` is the working
tree as it is. Prints one JSON line per version.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def loop(steps: int) -> str:
    """``steps`` masked random steps (seed 0, cold cache); returns the trajectory hash."""
    import hashlib

    import gymnasium as gym
    import numpy as np

    import mindhelper_env  # noqa: F401  (registers the envs)

    env = gym.make("MindHelper-Trigger-v0")
    u = env.unwrapped
    rng = np.random.default_rng(0)
    h = hashlib.sha256()

    def add(*xs) -> None:
        for x in xs:
            h.update(x.tobytes() if isinstance(x, np.ndarray)
                     else json.dumps(x, sort_keys=True, default=repr).encode())

    add(*env.reset(seed=0))
    for _ in range(steps):
        mask = u.action_masks()
        obs, reward, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        add(obs, float(reward), term, trunc, info, mask)
        if term or trunc:
            add(u.agent.trace)
            add(*env.reset())
    env.close()
    return h.hexdigest()[:16]


def _tree(ref: str, into: Path) -> Path | None:
    """The package of ``ref`` laid out under ``into`` (None for ``worktree``: the
    installed editable copy is the working tree)."""
    if ref == "worktree":
        return None
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "mindhelper_env", "agents",
                           "wrappers"], check=True, capture_output=True).stdout
    with tempfile.NamedTemporaryFile(suffix=".tar") as tmp:
        tmp.write(blob)
        tmp.flush()
        with tarfile.open(tmp.name) as tar:
            tar.extractall(into, filter="data")
    for sub in ("agents", "wrappers"):
        shutil.move(str(into / sub), str(into / "mindhelper_env" / sub))
    return into


def _run(tree: Path | None, steps: int, tool: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, MINDHELPER_CACHE_DIR=tempfile.mkdtemp(prefix="mindhelper-work-"))
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); " \
           f"import trigger_work; print(trigger_work.loop({steps}))"
    return subprocess.run([*tool, sys.executable, "-c", code], env=env, cwd=tempfile.gettempdir(),
                          check=True, capture_output=True, text=True)


def instructions(tree: Path | None, steps: int) -> int:
    """Instructions per step (callgrind's ``Ir``), the empty run subtracted."""
    counts = []
    for n in (0, steps):
        out = _run(tree, n, ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"])
        line = next(x for x in out.stderr.splitlines() if "Collected" in x)
        counts.append(int(line.split()[-1]))
    return round((counts[1] - counts[0]) / steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["hash", "instructions"])
    ap.add_argument("--steps", type=int, default=None,
                    help="steps of the loop (default: 6000 for hash, 1500 for instructions)")
    ap.add_argument("--ref", action="append", default=None,
                    help="a git ref to measure (repeatable; 'worktree': the working tree)")
    args = ap.parse_args()
    steps = args.steps or (6000 if args.what == "hash" else 1500)
    if args.what == "instructions" and shutil.which("valgrind") is None:
        sys.exit("instructions needs valgrind (apt-get install valgrind)")
    for ref in args.ref or ["worktree"]:
        with tempfile.TemporaryDirectory(prefix="mindhelper-ref-") as tmp:
            tree = _tree(ref, Path(tmp))
            if args.what == "hash":
                result = {"hash": _run(tree, steps, []).stdout.strip()}
            else:
                result = {"instructions_per_step": instructions(tree, steps)}
            print(json.dumps({"ref": ref, "steps": steps, **result}), flush=True)


if __name__ == "__main__":
    main()
