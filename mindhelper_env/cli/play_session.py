"""``mindhelper play``: a person is the robot, recorded and scored like any agent.

:func:`play` runs one suite episode (or a sampled one) with a
:class:`~mindhelper_env.agents.human.HumanAgent` and writes the result record to
``<out>/human.jsonl`` (the same format ``mindhelper evaluate`` writes, so ``mindhelper
score`` reads it): a new episode is appended, an episode played again replaces its earlier
record (``score`` refuses two records of one episode), and the player is told where the
record went. Ctrl-C stops the episode and records nothing. A file that holds another suite's
records is refused before the episode starts (``score`` reads one suite per file).

A suite episode's record carries the provenance stamp ``evaluate`` writes
(:func:`mindhelper_env.evaluation.provenance.stamp`: the run key of agent ``human``, the
generator, the suite's digest, the episode's reference, the checksum; ``obs`` on the vision
track), so ``score`` checks it like any other (a sampled episode, ``suite=None``, has no
suite to stamp against). ``legend=True`` writes the vision track's picture legend
(:mod:`mindhelper_env.render.legend`) as ``legend.png`` beside the record before the episode
starts.
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
    suite: str | None = "vh-dev-v5",
    index: int | None = 0,
    seed: int = 0,
    out_dir: str | os.PathLike[str] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    input_fn: Callable[[str], str] | None = None,
    output_fn: Callable[[str], None] | None = None,
    legend: bool = False,
) -> dict[str, Any]:
    """Play one episode as the robot; returns ``{"record", "outcome", "verdict"}`` (and,
    with ``out_dir``, ``path`` and ``replaced``).

    ``suite``/``index`` pick a suite episode; ``suite=None`` samples one with ``seed``.
    With ``out_dir`` the record goes to ``<out_dir>/human.jsonl``: appended, or replacing
    the record of the same episode. ``KeyboardInterrupt`` (Ctrl-C) propagates and nothing
    is written. ``legend=True`` writes ``legend.png`` (the picture legend) into ``out_dir``
    (the current folder without one) first; the path is in ``legend``.
    """

    import mindhelper_env  # noqa: F401 - registers the env
    from mindhelper_env.agents.human import GRAMMAR, INTRO, HumanAgent
    from mindhelper_env.evaluation import make_env, suite_env_id
    from mindhelper_env.evaluation.episode import play_episode, pop_agent_error
    from mindhelper_env.metrics import episode_outcome

    say = output_fn or print
    options = {"suite": suite, "index": index} if suite is not None else None
    if suite is not None:  # a bad suite or index fails before the banner
        from mindhelper_env.evaluation import suite_episode_ids

        n = len(suite_episode_ids(suite))
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
            raise ValueError(f"episode index {index!r} is out of range for {suite} "
                             f"(0..{n - 1})")
    if out_dir is not None:
        check_out_file(out_dir, suite)
    legend_path = None
    if legend:
        from mindhelper_env.render.legend import write_legend

        legend_path = write_legend(Path(out_dir if out_dir is not None else ".") / "legend.png")
    env_kwargs = dict(env_kwargs or {})
    if suite is not None:  # rgb without frame_size: the suite's lossless size
        from mindhelper_env.evaluation.frame_sizes import rgb_env_kwargs

        env_kwargs = rgb_env_kwargs(suite, env_kwargs)
    env = make_env(suite_env_id(suite), **env_kwargs)
    try:
        say(INTRO + "\n\n" + GRAMMAR)
        if legend_path is not None:
            say(f"The legend of the pictures (every glyph, pose and icon of the rgb frames, "
                f"with its name) is in {legend_path}.")
        agent = HumanAgent(input_fn=input_fn, output_fn=output_fn)
        record, ref = play_episode(env, agent, seed=seed, options=options, agent_name="human",
                                   timing=True)
        pop_agent_error(record)
        reference = env.unwrapped.ground_truth.to_dict()
        if suite is not None:
            _stamp(record, ref, suite, suite_env_id(suite), env_kwargs or {}, seed)
    finally:
        env.close()
    outcome = episode_outcome(record, reference)
    verdict = describe_outcome(outcome, reference)
    say(verdict)
    out: dict[str, Any] = {"record": record, "outcome": outcome, "verdict": verdict}
    if legend_path is not None:
        out["legend"] = legend_path
    if out_dir is not None:
        path, replaced, total = _write_record(Path(out_dir) / RESULT_FILE, record)
        out.update(path=path, replaced=replaced)
        what = "replaced your earlier record of this episode" if replaced else "added"
        say(f"Recorded in {path} ({what}; {total} episode(s) in the file). Score it with: "
            f"mindhelper score {path}")
    return out


def _stamp(record: dict[str, Any], reference: dict[str, Any] | None, suite: str, env_id: str,
           env_kwargs: dict[str, Any], seed: int) -> None:
    """Give ``record`` the provenance stamp ``evaluate`` gives its records: agent
    ``human`` (spec ``human``, no options) in a one-trial run of ``suite`` with this env
    and seed."""
    from mindhelper_env.evaluation.provenance import agent_provenance, run_provenance, stamp

    run = run_provenance(suite=suite, env_id=env_id, env_kwargs=env_kwargs, seed=seed,
                         trials=1, agents={"human": agent_provenance("human", "human", {})})
    stamp(record, run, "human", reference)


#: The file ``play`` writes in its output folder.
RESULT_FILE = "human.jsonl"


def _read_records(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{k}: not a result record ({err.msg}); give --out "
                             "another folder") from None
        if not isinstance(rec, dict):
            raise ValueError(f"{path}:{k}: not a result record; give --out another folder")
        out.append(rec)
    return out


def check_out_file(out_dir: str | os.PathLike[str], suite: str | None) -> None:
    """``ValueError`` (before the episode starts) when ``<out_dir>/human.jsonl`` cannot take
    a record of ``suite``: it is not a result file, or it holds another suite's records."""
    path = Path(out_dir) / RESULT_FILE
    suites = {rec.get("suite") for rec in _read_records(path)}
    others = sorted(str(s) for s in suites - {suite})
    if others:
        raise ValueError(f"{path} holds records of {', '.join(others)}, not {suite}: a result "
                         f"file holds one suite; give --out another folder")


def _write_record(path: Path, record: dict[str, Any]) -> tuple[Path, bool, int]:
    """Write ``record`` into ``path``: replace the record of the same episode (and trial)
    if there is one, else append. Returns ``(path, replaced, records in the file)``."""
    from mindhelper_env.evaluation import safety

    path.parent.mkdir(parents=True, exist_ok=True)
    key = (record.get("episode_id"), record.get("trial"))
    kept = _read_records(path)
    rest = [r for r in kept if (r.get("episode_id"), r.get("trial")) != key]
    replaced = len(rest) < len(kept)
    if replaced:  # rewrite the whole file at once (a temporary file, renamed)
        lines = [json.dumps(r, sort_keys=True) for r in [*rest, record]]
        safety.atomic_write_bytes(path, ("\n".join(lines) + "\n").encode("utf-8"))
    else:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    return path, replaced, len(rest) + 1
