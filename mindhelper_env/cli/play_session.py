"""``mindhelper play``: a person is the robot, recorded and scored like any agent.

:func:`play` runs one suite episode (or a sampled one) with a
:class:`~mindhelper_env.agents.human.HumanAgent`, appends the result record to
``<out>/human.jsonl`` (the same format ``mindhelper evaluate`` writes, so ``mindhelper
score`` reads it) and returns the record with its scored outcome.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["play", "describe_outcome"]


def describe_outcome(outcome: dict[str, Any], reference: dict[str, Any]) -> str:
    """A short verdict for the player (shown after the episode)."""
    if reference.get("needs_intervention"):
        w = reference["window"]
        if outcome["t_I"] is None:
            acted = "you never intervened"
        else:
            when = ("in time" if outcome["precise"] else "too early" if outcome["premature"]
                    else "too late")
            acted = f"you intervened {when} (tick {outcome['t_I']})"
        return (f"{reference['focus_name']} needed help ({reference['family']}): window ticks "
                f"{w['onset_tick']}-{w['deadline_tick']}; {acted}; "
                f"task {'succeeded' if outcome['success'] else 'failed'}"
                f"{'; harm done' if outcome['harm'] else ''}.")
    return (f"Nobody needed help ({reference['family']}): "
            + ("you rightly stayed out of it." if outcome["silent"]
               else f"you intervened at tick {outcome['t_I']} (a false alarm)."))


def play(
    *,
    suite: str | None = "vh-dev-v4",
    index: int | None = 0,
    seed: int = 0,
    out_dir: str | os.PathLike[str] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    input_fn: Callable[[str], str] | None = None,
    output_fn: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Play one episode as the robot; returns ``{"record", "outcome", "verdict"}``.

    ``suite``/``index`` pick a suite episode; ``suite=None`` samples one with ``seed``.
    With ``out_dir`` the record is appended to ``<out_dir>/human.jsonl``.
    """

    import mindhelper_env  # noqa: F401 - registers the env
    from mindhelper_env.agents.human import GRAMMAR, INTRO, HumanAgent
    from mindhelper_env.evaluation import make_env, run_episode, suite_env_id
    from mindhelper_env.metrics import episode_outcome

    say = output_fn or print
    options = {"suite": suite, "index": index} if suite is not None else None
    if suite is not None:  # a bad suite or index fails before the banner
        from mindhelper_env.evaluation import suite_episode_ids

        n = len(suite_episode_ids(suite))
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
            raise ValueError(f"episode index {index!r} is out of range for {suite} "
                             f"(0..{n - 1})")
    env = make_env(suite_env_id(suite), **(env_kwargs or {}))
    try:
        say(INTRO + "\n\n" + GRAMMAR)
        agent = HumanAgent(input_fn=input_fn, output_fn=output_fn)
        record = run_episode(env, agent, seed=seed, options=options, agent_name="human")
        reference = env.unwrapped.ground_truth.to_dict()
    finally:
        env.close()
    outcome = episode_outcome(record, reference)
    verdict = describe_outcome(outcome, reference)
    say(verdict)
    if out_dir is not None:
        path = Path(out_dir)
        path.mkdir(parents=True, exist_ok=True)
        with open(path / "human.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    return {"record": record, "outcome": outcome, "verdict": verdict}
