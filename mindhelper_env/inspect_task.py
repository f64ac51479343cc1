"""The benchmark as an Inspect AI task (``inspect`` extra).

::

    inspect eval mindhelper_env/mindhelper --model anthropic/claude-sonnet-4-0 \\
        -T suite=vh-dev-v5 -T agent=direct-vlm [-T limit=20] [-T seed=0] \\
        [-T window_ticks=3] [-T agent_options='{"max_calls": 8}'] [-T obs=rgb] --log-dir runs/logs

The package registers this module as an Inspect extension (``[project.entry-points.
inspect_ai]`` in pyproject.toml), so Inspect finds the task by name from any folder.

One sample per suite episode (id: the episode id; metadata: suite, index, family). The
solver plays the episode through the Gymnasium env (``MindHelper-VirtualHome-v3``) with the
chosen agent; a model-backed agent (``direct-vlm``, ``mindclaw``) talks to the task's model
(Inspect's ``--model``) through :func:`~mindhelper_env.models.inspect_client.bridged_client`,
so every call is a model event of the sample and its tokens count in Inspect's usage. The
episode is played as ``evaluate`` plays it (env seed ``seed + index``, agent seed
:func:`~mindhelper_env.evaluation.settings.trial_seed` of the epoch, no timing), in a
worker thread while the task's event loop serves the model calls.

``-T obs=rgb`` plays the vision track (``obs_mode="rgb"``: the agent gets the window's
frames only, docs/vision.md; ``-T frame_size=PX``, by default the suite's lossless size, as
``evaluate --obs rgb``): ``direct-vlm`` and ``mindclaw-vlm`` send
the frames as Inspect image content (``ContentImage``, PNG data URLs), so any Inspect
provider with vision can be evaluated; the records' provenance says ``rgb`` once imported.

The transcript has, for every window, the narration the agent saw (on the vision track: the
number of frames), the model's answer (the
model event) and the program the agent returned, then the lines the robot executed. The
scorer's value is 1 when the episode was handled as the benchmark wants (help needed: the
first intervention in the window, the task done, no harm; no help needed: silent), its
metadata the result record, the reference and the outcome
(:func:`mindhelper_env.metrics.episode_outcome`). The task's metrics PHA, PHR, PSR, PIR,
PIA and TA are :func:`mindhelper_env.metrics.compute_metrics` of the records (fractions;
NaN when the set they average over is empty), so they equal ``mindhelper score`` on the
same records. ``mindhelper import-inspect LOG --out DIR`` writes the records of a log as
``evaluate``'s files (:func:`records_from_log`).

Importing this module imports Inspect; ``import mindhelper_env`` does not.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

try:
    from inspect_ai import Task, task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.log import transcript
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, get_model
    from inspect_ai.scorer import SampleScore, Score, metric, scorer
    from inspect_ai.solver import Generate, TaskState, solver
except ImportError as err:  # pragma: no cover - the inspect extra is missing
    raise ImportError("the Inspect task needs Inspect AI: pip install "
                      "'mindhelper-env[inspect]'") from err

from mindhelper_env.evaluation.episode import (
    MAX_STEPS,
    make_env,
    play_episode,
    pop_agent_error,
    suite_env_id,
)
from mindhelper_env.evaluation.settings import (
    check_agents,
    check_suite,
    suite_episode_ids,
    suite_reference,
    trial_seed,
)
from mindhelper_env.metrics import compute_metrics, episode_outcome

__all__ = ["mindhelper", "play", "episode_scorer", "records_from_log", "METRIC_KEYS",
           "SCORER_NAME"]

#: The task's metrics (keys of :func:`~mindhelper_env.metrics.compute_metrics`).
METRIC_KEYS = ("PHA", "PHR", "PSR", "PIR", "PIA", "TA")
#: The scorer's name in Inspect logs.
SCORER_NAME = "episode_scorer"
#: Agents that take the task's model.
MODEL_AGENTS = ("direct-vlm", "mindclaw", "mindclaw-vlm", "mindclaw-pixels")
#: Values of ``-T obs`` (the env's ``obs_mode``).
OBS_CHOICES = ("text", "text+rgb", "rgb")


def _options(agent_options: Any) -> dict[str, Any]:
    if agent_options in (None, ""):
        return {}
    if isinstance(agent_options, str):
        try:
            agent_options = json.loads(agent_options)
        except ValueError:
            raise ValueError(f"agent_options must be a JSON object, got {agent_options!r}"
                             ) from None
    if not isinstance(agent_options, Mapping):
        raise ValueError(f"agent_options must be a JSON object, got {agent_options!r}")
    return dict(agent_options)


@task
def mindhelper(suite: str = "vh-dev-v5", agent: str = "direct-vlm", limit: int | None = None,
               seed: int = 0, window_ticks: int | None = None,
               agent_options: Any = None, obs: str = "text",
               frame_size: int | None = None) -> Task:
    """MindHelper-Env's ``suite`` played by ``agent`` (see the module docstring)."""
    check_suite(suite)
    check_agents([agent])
    ids = suite_episode_ids(suite)
    n = len(ids) if limit is None else min(int(limit), len(ids))
    if n < 1:
        raise ValueError(f"limit must be a positive int, got {limit!r}")
    from mindhelper_env.scenarios.suites import suite_family

    samples = [Sample(input=f"Episode {ids[i]}: help the people of this home, and only when "
                            "a false belief or an implicit goal blocks one of them.",
                      id=ids[i], metadata={"suite": suite, "index": i,
                                           "family": suite_family(suite, i)})
               for i in range(n)]
    env_kwargs: dict[str, Any] = ({"window_ticks": int(window_ticks)}
                                  if window_ticks is not None else {})
    if obs not in OBS_CHOICES:
        raise ValueError(f"obs must be one of {OBS_CHOICES}, got {obs!r}")
    if obs != "text":
        env_kwargs["obs_mode"] = obs
    if frame_size is not None:
        if obs == "text":
            raise ValueError("frame_size needs obs=rgb or obs=text+rgb")
        env_kwargs["frame_size"] = int(frame_size)
    # rgb without frame_size: the suite's lossless size, as evaluate plays it; a pixel
    # reader at a smaller size is refused here, before Inspect writes its log
    from mindhelper_env.evaluation.frame_sizes import check_frame_size, rgb_env_kwargs

    env_kwargs = rgb_env_kwargs(suite, env_kwargs)
    check_frame_size(suite, env_kwargs, [agent], {agent: _options(agent_options)})
    return Task(dataset=MemoryDataset(samples, name=suite),
                solver=play(agent=agent, seed=int(seed), env_kwargs=env_kwargs,
                            agent_options=_options(agent_options)),
                scorer=episode_scorer(),
                metadata={"suite": suite, "agent": agent, "seed": int(seed),
                          "env_id": suite_env_id(suite), "env_kwargs": env_kwargs})


class _Narrated:
    """An agent whose every window goes to the sample's transcript (narration, tick and the
    program returned); everything else is the agent's own."""

    def __init__(self, agent: Any) -> None:
        self._agent = agent
        self._window = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._agent, name)

    def reset(self, *, seed: int | None = None) -> None:
        self._window = 0
        self._agent.reset(seed=seed)

    def act(self, obs: Any, info: Any) -> str:
        action = self._agent.act(obs, info)
        trace = getattr(self._agent, "trace", None)
        entry = trace[-1] if isinstance(trace, list) and trace else None
        data: dict[str, Any] = {"window": self._window}
        if isinstance(obs, Mapping):
            data.update(tick=int(obs.get("tick", 0)), narration=str(obs.get("narration", "")))
        else:  # the vision track: frames only
            data.update(tick=int(info.get("tick", 0)), frames=int(getattr(obs, "shape", [1])[0]))
        data["program"] = action if isinstance(action, str) else None
        if isinstance(entry, Mapping) and entry.get("window") == self._window:
            data["model_answer"] = str(entry.get("answer", ""))
            data["outcome"] = str(entry.get("outcome", ""))
        transcript().info(data, source="mindhelper window")
        self._window += 1
        return action


@solver
def play(agent: str = "direct-vlm", seed: int = 0, env_kwargs: dict[str, Any] | None = None,
         agent_options: dict[str, Any] | None = None) -> Any:
    """Play the sample's episode with ``agent`` (see the module docstring)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        import anyio

        import mindhelper_env  # noqa: F401  (registers the envs)
        from mindhelper_env.agents import make_agent
        from mindhelper_env.agents.hedge import split_prefix_suffix
        from mindhelper_env.models.inspect_client import bridged_client

        suite = state.metadata["suite"]
        index = int(state.metadata["index"])
        trial = max(0, int(getattr(state, "epoch", 1)) - 1)
        options = dict(agent_options or {})
        if split_prefix_suffix(agent)[0] in MODEL_AGENTS and "model" not in options:
            options["model"] = bridged_client(get_model(), asyncio.get_running_loop(),
                                              context_length=options.pop("context_length",
                                                                         None))

        def run() -> tuple[dict[str, Any], dict[str, Any]]:
            env = make_env(suite_env_id(suite), **dict(env_kwargs or {}))
            try:
                kwargs = {"env": env, "seed": seed, **options}
                wrapped = _Narrated(make_agent(agent, **kwargs))
                record, reference = play_episode(
                    env, wrapped, seed=seed + index,
                    options={"suite": suite, "index": index}, agent_name=agent,
                    timing=False, max_steps=MAX_STEPS,
                    agent_seed=trial_seed(seed, index, trial),
                    trial=trial if trial > 0 else None)
                pop_agent_error(record)
            finally:
                env.close()
            return record, reference or suite_reference(suite, index)

        record, reference = await anyio.to_thread.run_sync(run)
        executed = [{"tick": e.get("tick"), "line": e.get("line"), "ok": e.get("ok")}
                    for e in record.get("executed", [])]
        transcript().info({"executed": executed}, source="mindhelper episode")
        programs = [a for a in record.get("actions", [])
                    if str(a.get("program", "none")).strip().lower() != "none"]
        summary = ("; ".join(f"tick {a.get('tick')}: {a.get('program')}" for a in programs)
                   or "none (stayed silent)")
        state.messages.append(ChatMessageUser(content=f"Episode {record['episode_id']}"))
        state.messages.append(ChatMessageAssistant(content=f"Programs issued: {summary}"))
        state.output.completion = summary
        state.metadata["record"] = record
        state.metadata["reference"] = reference
        return state

    return solve


def _correct(outcome: Mapping[str, Any]) -> bool:
    if outcome["needs_help"]:
        return bool(outcome["helpful_precise"])
    return not outcome["intervened"]


def _explain(outcome: Mapping[str, Any], reference: Mapping[str, Any]) -> str:
    if not outcome["needs_help"]:
        return ("no help needed; " + ("the robot acted (false alarm)" if outcome["intervened"]
                                      else "the robot stayed silent"))
    window = reference.get("window") or {}
    timing = next(k for k in ("precise", "premature", "late", "missed") if outcome[k])
    return (f"help needed in ticks {window.get('onset_tick')}..{window.get('deadline_tick')}; "
            f"first intervention at tick {outcome['t_I']} ({timing}); task "
            f"{'done' if outcome['success'] else 'not done'}; "
            f"{'harm' if outcome['harm'] else 'no harm'}")


def _metric_value(scores: Sequence[SampleScore], key: str) -> float:
    records, refs = [], {}
    for s in scores:
        meta = s.score.metadata or {}
        if "record" in meta and "reference" in meta:
            records.append(meta["record"])
            refs[str(meta["record"]["episode_id"])] = meta["reference"]
    if not records:
        return math.nan
    value = compute_metrics(records, refs, by_family=False)[key]
    return math.nan if value is None else float(value)


def _make_metric(key: str) -> Any:
    def factory() -> Any:
        def compute(scores: list[SampleScore]) -> float:
            return _metric_value(scores, key)

        return compute

    factory.__name__ = key
    return metric(name=key)(factory)


PHA, PHR, PSR, PIR, PIA, TA = (_make_metric(k) for k in METRIC_KEYS)


@scorer(metrics=[PHA(), PHR(), PSR(), PIR(), PIA(), TA()], name=SCORER_NAME)
def episode_scorer() -> Any:
    """The episode's outcome (see the module docstring)."""

    async def score(state: TaskState, target: Any) -> Score:
        record = state.metadata["record"]
        reference = state.metadata["reference"]
        outcome = episode_outcome(record, reference)
        return Score(value=1.0 if _correct(outcome) else 0.0,
                     answer=state.output.completion,
                     explanation=_explain(outcome, reference),
                     metadata={"record": record, "reference": reference,
                               "outcome": outcome})

    return score


def records_from_log(path: str | Path) -> dict[str, Any]:
    """What an Inspect log of this task holds: ``{"suite", "seed", "env_kwargs", "trials"
    (the run's epochs), "records": {agent: records sorted by index and trial}, "unscored":
    samples without a score}``; ``ValueError`` (one line) for a file that is not such a log.
    With several epochs every record carries its ``trial`` (the first epoch's ``0`` too),
    as ``mindhelper evaluate --trials K`` writes them."""
    from inspect_ai.log import read_eval_log

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{p}: no such file")
    try:
        log = read_eval_log(str(p))
    except Exception as err:
        raise ValueError(f"{p}: not an Inspect log ({type(err).__name__}: "
                         f"{' '.join(str(err).split())[:200]})") from None
    task_name = str(getattr(log.eval, "task", ""))
    if not task_name.endswith("mindhelper"):
        raise ValueError(f"{p}: a log of task {task_name!r}, not of mindhelper_env's "
                         "'mindhelper' task")
    suite = (log.eval.task_args or {}).get("suite") or (log.eval.metadata or {}).get("suite")
    by_agent: dict[str, list[dict[str, Any]]] = {}
    missing = 0
    for sample in log.samples or []:
        score = (sample.scores or {}).get(SCORER_NAME)
        meta = getattr(score, "metadata", None) or {}
        record = meta.get("record")
        if not isinstance(record, dict):
            missing += 1
            continue
        suite = suite or record.get("suite")
        by_agent.setdefault(str(record["agent"]), []).append(record)
    if not by_agent:
        raise ValueError(f"{p}: no scored sample ({missing} without a score): nothing to "
                         "convert")
    epochs = int(getattr(getattr(log.eval, "config", None), "epochs", None) or 1)
    epochs = max([epochs] + [int(r.get("trial", 0)) + 1 for recs in by_agent.values()
                             for r in recs])
    for recs in by_agent.values():
        if epochs > 1:  # the solver cannot know the epochs: trial 0 is left out there
            recs[:] = [_with_trial(r) for r in recs]
        recs.sort(key=lambda r: (int(r["index"]), int(r.get("trial", 0))))
    meta = log.eval.metadata or {}
    return {"suite": str(suite), "seed": int(meta.get("seed", 0)),
            "env_kwargs": dict(meta.get("env_kwargs") or {}), "trials": epochs,
            "records": by_agent, "unscored": missing}


def _with_trial(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with ``trial`` right after ``index`` (``0`` where it has none), as a run
    of several trials writes it."""
    if "trial" in record:
        return record
    out: dict[str, Any] = {}
    for key, value in record.items():
        out[key] = value
        if key == "index":
            out["trial"] = 0
    return out
