"""``mindhelper mine-skills``: mine a MindClaw skills file from training episodes.

The file goes under ``--out`` (default ``runs/skills/skills.json``), never into the installed
package: the shipped ``skills.json`` is a read-only input. Run MindClaw with the new book by
``--agent mindclaw:skills=runs/skills/skills.json``; its sha256 goes into the run's provenance.

The rollouts play the symbolic MindClaw with skills off on
:func:`mindhelper_env.validity.training_episodes` and score each with the metrics, so they sit
above the agents (where :func:`~mindhelper_env.agents.mindclaw.skills.mine_skills` lives)
and the evaluation layer; ``python -m mindhelper_env.cli.mine_skills`` runs the same.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mindhelper_env.cli.base import EXIT_OK, int_between, number_between, path_arg

__all__ = ["DEFAULT_OUT", "collect_rollouts", "mine", "register", "run"]

logger = logging.getLogger("mindhelper_env.cli")


#: Where ``mine-skills`` writes without ``--out`` (relative to the current folder).
DEFAULT_OUT = Path("runs") / "skills" / "skills.json"


def _default_out() -> Path:
    return DEFAULT_OUT


def collect_rollouts(specs: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Play symbolic MindClaw with skills off on each spec; return the reasoned cues
    (:class:`~mindhelper_env.agents.mindclaw.skills.CueOutcome`)."""
    import gymnasium as gym

    import mindhelper_env  # noqa: F401  (registers the env)
    from mindhelper_env.agents.mindclaw.agent import MindClawAgent
    from mindhelper_env.agents.mindclaw.skills import CueOutcome, SkillBook
    from mindhelper_env.metrics import episode_outcome

    env = gym.make("MindHelper-VirtualHome-v3")
    agent = MindClawAgent(skills=SkillBook())
    out: list[CueOutcome] = []
    try:
        for spec in specs:
            obs, info = env.reset(options={"episode": dict(spec)})
            agent.reset()
            while True:
                obs, _, term, trunc, info = env.step(agent.act(obs, info))
                if term or trunc:
                    break
            record = info["episode_record"]
            ref = {**record["reference"], "episode_id": record["episode_id"]}
            res = episode_outcome(record, ref)
            if ref["needs_intervention"]:
                success = bool(res["helpful_precise"])
            else:
                success = not bool(res["intervened"])
            for w in agent.trace:
                for r in w.get("reasoning", []):
                    op = "action_run" if r.get("blocked") else "noop"
                    out.append(CueOutcome(dict(r["signature"]), op, success))
    finally:
        env.close()
    return out


def mine(episodes: int = 600, seed: int = 0, min_support: int = 20,
         min_confidence: float = 0.97, out: str | Path | None = None) -> Any:
    """Mine a skill book from ``episodes`` training episodes and save it to ``out`` (default:
    :data:`DEFAULT_OUT`; the shipped file is never written); returns the book."""
    from mindhelper_env.agents.mindclaw.skills import mine_skills
    from mindhelper_env.scenarios.spec import GENERATOR_VERSION
    from mindhelper_env.validity import training_episodes

    specs = training_episodes(episodes, seed)
    outcomes = collect_rollouts(specs)
    book = mine_skills(outcomes, min_support=min_support, min_confidence=min_confidence,
                       source={"episodes": episodes, "seed": seed, "cues": len(outcomes),
                               "episodes_from": "mindhelper_env.validity.training_episodes",
                               "generator": GENERATOR_VERSION, "min_support": min_support})
    path = Path(out) if out is not None else _default_out()
    _refuse_package_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save(path)
    logger.info("mined %d skills from %d cues into %s", len(book.skills), len(outcomes), path)
    return book


def _refuse_package_path(path: Path) -> None:
    """``ValueError`` for a path inside the installed package (its files are inputs)."""
    import mindhelper_env
    import mindhelper_env.agents
    import mindhelper_env.wrappers

    target = path.resolve()
    for mod in (mindhelper_env, mindhelper_env.agents, mindhelper_env.wrappers):
        pkg = Path(str(mod.__file__)).resolve().parent  # the folders may lie apart
        if target == pkg or pkg in target.parents:
            raise ValueError(f"{path}: inside the installed package ({pkg}); its files are "
                             "read-only inputs: write the skills elsewhere and run MindClaw "
                             "with --agent mindclaw:skills=PATH")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    ms = sub.add_parser("mine-skills", parents=[common],
                        help="re-mine MindClaw's skills file from training episodes")
    ms.add_argument("--episodes", type=int_between(1, 1_000_000), default=600,
                    help="training episodes to play (default 600)")
    ms.add_argument("--seed", type=int_between(0, 2**32 - 1), default=0,
                    help="seed of the training episodes (default 0)")
    ms.add_argument("--min-support", type=int_between(1, 1_000_000), default=20,
                    help="fewest occurrences of a kept skill (default 20)")
    ms.add_argument("--min-confidence", type=number_between(0.0, 1.0), default=0.97,
                    help="lowest confidence of a kept skill (default 0.97)")
    ms.add_argument("--out", type=path_arg, default=None,
                    help=f"skills file to write (default: {DEFAULT_OUT}; never the one shipped "
                         "with MindClaw)")
    ms.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = args.out or _default_out()
    _refuse_package_path(out)  # before minutes of rollouts
    book = mine(args.episodes, args.seed, args.min_support, args.min_confidence, out)
    print(f"mined {len(book.skills)} skills into {out}; use them with "
          f"--agent mindclaw:skills={out}")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    logging.basicConfig(level=logging.INFO)
    _parser = argparse.ArgumentParser(prog="python -m mindhelper_env.cli.mine_skills")
    register(_parser.add_subparsers(), argparse.ArgumentParser(add_help=False))
    raise SystemExit(run(_parser.parse_args(["mine-skills", *sys.argv[1:]])))
