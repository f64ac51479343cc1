"""The settings of one evaluation run, and every check made before a file is touched.

:class:`EvalSettings` replaces :func:`~mindhelper_env.evaluation.evaluate`'s keyword
arguments. :meth:`EvalSettings.run_record` is what ``run.json`` records and what a resumed
run must share (the settings that change records); :meth:`EvalSettings.check` runs every
check of the suite, the agents (names, import paths, models), the extras the run needs and
the scalar arguments, so a bad run fails before its output folder is created.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mindhelper_env.evaluation import safety
from mindhelper_env.evaluation.episode import make_env, suite_env_id

__all__ = [
    "EvalSettings",
    "BACKENDS",
    "MAX_WORKERS",
    "MAX_SEED",
    "MAX_VIDEOS",
    "MAX_TRIALS",
    "RUN_FORMAT",
    "check_suite",
    "check_agents",
    "check_evaluate_args",
    "suite_episode_ids",
    "suite_reference",
    "trial_seed",
    "settings_diff",
    "check_scale_args",
    "MAX_CONCURRENCY",
]

#: Version of ``run.json``'s content (the settings a resumed run must share).
RUN_FORMAT = 1
#: Execution backends of :func:`~mindhelper_env.evaluation.evaluate`.
BACKENDS = ("local", "ray")
#: Hard ceiling on ``workers``, even with ``force_workers=True``.
MAX_WORKERS = 512
#: Largest base seed (``seed + index`` stays a valid NumPy seed far beyond it).
MAX_SEED = 2**32 - 1
#: Largest ``videos`` value.
MAX_VIDEOS = 10_000
#: Largest ``trials`` value.
MAX_TRIALS = 100
RAY_INSTALL_HINT = "--backend ray needs Ray: pip install 'mindhelper-env[ray]'"


@dataclass(frozen=True)
class EvalSettings:
    """Everything that defines an evaluation run (see
    :func:`~mindhelper_env.evaluation.evaluate` for what each field does).

    ``agents`` may be given as a comma-separated string. ``trials=K`` plays every episode
    ``K`` times with different agent seeds (:func:`trial_seed`); ``overwrite`` allows a run
    into a folder that already holds results (else ``resume`` is needed there).
    """

    suite: str
    agents: Sequence[str]
    out_dir: str | os.PathLike[str]
    workers: int = 1
    resume: bool = False
    overwrite: bool = False
    limit: int | None = None
    #: None: the suite's own id (:func:`~mindhelper_env.evaluation.episode.suite_env_id`:
    #: ``MindHelper-VirtualHome-v0`` for the v2 suites, v1 for the v3, v2 for the v4, v3 for the
    #: v5 suites)
    env_id: str | None = None
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    agent_kwargs: Mapping[str, Mapping[str, Any]] | None = None
    seed: int = 0
    timing: bool = True
    trials: int = 1
    progress: bool = True
    plots: bool = True
    videos: int = 0
    force_workers: bool = False
    backend: str = "local"
    address: str | None = None
    #: episodes in flight per worker (threads; records do not depend on it)
    concurrency: int = 1
    #: stop (resumably) once this run's model spend reaches this many US dollars
    max_cost: float | None = None
    #: stop (resumably) once this run's model tokens (input + output) reach this many
    max_tokens: int | None = None
    #: US dollars per million input/output tokens by model spec, e.g.
    #: ``{"gpt-4o-mini": (0.15, 0.6)}`` (:mod:`mindhelper_env.evaluation.budget`)
    prices: Mapping[str, Any] | None = None
    #: episodes of the dry pass that estimates the cost before a run with a budget
    estimate_episodes: int = 2
    #: start even when the dry pass says one episode costs more than the budget
    allow_partial: bool = False

    def __post_init__(self) -> None:
        agents = self.agents
        if isinstance(agents, str):
            agents = [a.strip() for a in agents.split(",") if a.strip()]
        elif isinstance(agents, Sequence):
            agents = list(agents)
        object.__setattr__(self, "agents", tuple(agents) if isinstance(agents, list) else agents)
        kwargs = dict(self.env_kwargs or {})
        if kwargs.get("obs_mode") == "rgb" and isinstance(self.suite, str):
            # an rgb run without frame_size plays at the suite's lossless size (run.json
            # records it): every pixel of every episode shows
            from mindhelper_env.evaluation.frame_sizes import rgb_env_kwargs

            kwargs = rgb_env_kwargs(self.suite, kwargs)
        object.__setattr__(self, "env_kwargs", kwargs)
        if self.env_id is None:
            object.__setattr__(self, "env_id", suite_env_id(self.suite))

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def replace(self, **changes: Any) -> EvalSettings:
        return dataclasses.replace(self, **changes)

    @property
    def obs(self) -> str:
        """The observation track: ``"rgb"`` (``env_kwargs["obs_mode"] == "rgb"``: frames
        only) or ``"text"``; recorded in run.json's provenance and every rgb record's
        stamp."""
        from mindhelper_env.evaluation.provenance import obs_track

        return obs_track(self.env_kwargs)

    @property
    def out(self) -> Path:
        return Path(self.out_dir)

    def run_record(self) -> dict[str, Any]:
        """``run.json``'s content: the settings that change records. ``trials`` appears only
        when above 1, so one-trial folders keep the format written before trials existed."""
        record: dict[str, Any] = {"format": RUN_FORMAT, "suite": self.suite,
                                  "env_id": self.env_id, "env_kwargs": dict(self.env_kwargs),
                                  "seed": int(self.seed), "timing": bool(self.timing)}
        if self.trials != 1:
            record["trials"] = int(self.trials)
        return record

    def check(self) -> None:
        """Every check of :func:`~mindhelper_env.evaluation.evaluate` that needs no file:
        ``ValueError`` (bad arguments, unknown suite or agent, an agent without its model) or
        ``ImportError`` naming the missing extra."""
        check_suite(self.suite)
        check_agents(list(self.agents) if not isinstance(self.agents, str) else self.agents)
        check_evaluate_args(workers=self.workers, force_workers=self.force_workers,
                            limit=self.limit, seed=self.seed, videos=self.videos,
                            backend=self.backend, address=self.address, out_dir=self.out_dir,
                            trials=self.trials)
        check_scale_args(self)
        if self.agent_kwargs is not None and not isinstance(self.agent_kwargs, Mapping):
            raise ValueError(
                f"agent_kwargs must be a mapping, got {type(self.agent_kwargs).__name__}")
        try:
            json.dumps(self.run_record(), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"env_kwargs must be JSON-serializable: {exc}") from None
        check_models(self.agents, self.agent_kwargs or {})
        check_extras(self)
        _check_env_kwargs(self.env_id, self.env_kwargs)
        from mindhelper_env.evaluation.frame_sizes import check_frame_size

        check_frame_size(self.suite, self.env_kwargs, self.agents, self.agent_kwargs)


# --------------------------------------------------------------------------------------
# Suites (imported lazily: the suites module is optional for run_episode)
# --------------------------------------------------------------------------------------


def _suites_module() -> Any:
    from mindhelper_env.scenarios import suites

    return suites


def check_suite(name: str) -> None:
    """``ValueError`` for a suite this installation cannot play: an unknown name (naming the
    known suites), a withdrawn one (one line naming its replacement) or a released one the
    running generator would change (:func:`~mindhelper_env.scenarios.suites.require_suite`)."""
    _suites_module().require_suite(name)


def suite_episode_ids(name: str) -> list[str]:
    """Episode ids of a suite, in index order (no episode is generated)."""
    check_suite(name)
    mod = _suites_module()
    return [mod.suite_episode_id(name, i) for i in range(int(mod.SUITES[name]["n"]))]


def suite_reference(name: str, index: int) -> dict[str, Any]:
    """The reference record of episode ``index`` of suite ``name`` (as in
    ``suite_references``)."""
    mod = _suites_module()
    return dict(mod.reference_record(mod.suite_episode(name, index)))


# --------------------------------------------------------------------------------------
# Agents
# --------------------------------------------------------------------------------------


def check_agents(names: Sequence[str]) -> None:
    """Raise ``ValueError`` for an empty list, duplicates or unknown agent names."""
    from mindhelper_env.agents import AGENTS

    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ValueError(f"agents must be a list of names, got {names!r}")
    if not names:
        raise ValueError("no agents given")
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise ValueError(f"agent names must be non-empty strings, got {bad[0]!r}")
    from mindhelper_env.agents import resolve_agent

    for n in names:
        if n not in AGENTS:
            resolve_agent(n)  # an import path that must import; else a clear ValueError
    dup = sorted({n for n in names if list(names).count(n) > 1})
    if dup:
        raise ValueError(f"agent {dup[0]!r} given twice")


#: Agents that cannot run without a model spec (``model=`` or ``$MINDHELPER_MODEL``).
NEEDS_MODEL = ("direct-vlm", "mindclaw-vlm")


def agents_without_model(agents: Sequence[str],
                         agent_kwargs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The agents of ``agents`` that need a model and were given none."""
    from mindhelper_env.agents.hedge import split_prefix_suffix

    if os.environ.get("MINDHELPER_MODEL", "").strip():
        return []
    return [a for a in agents if split_prefix_suffix(a)[0] in NEEDS_MODEL
            and not (agent_kwargs.get(a) or {}).get("model")
            and (agent_kwargs.get(a) or {}).get("client") is None]


def check_models(agents: Sequence[str], agent_kwargs: Mapping[str, Mapping[str, Any]]) -> None:
    """``ValueError`` for an agent that needs a model and has none."""
    missing = agents_without_model(agents, agent_kwargs)
    if missing:
        raise ValueError(f"agent {missing[0]!r} needs a model: pass "
                         f"agent_kwargs={{{missing[0]!r}: {{'model': SPEC}}}} (on the command "
                         "line: --model SPEC) or set $MINDHELPER_MODEL")


def agent_modules(names: Sequence[str]) -> tuple[str, ...]:
    """Modules whose import registers the agents ``names`` (for workers that did not
    import them, e.g. Ray workers); ``__main__`` and the package itself are left out."""
    from mindhelper_env.agents import AGENTS
    from mindhelper_env.agents.hedge import split_prefix_suffix

    mods = []
    for n in names:
        mod = getattr(AGENTS.get(split_prefix_suffix(n)[0]), "__module__", None)
        if isinstance(mod, str) and mod != "__main__" and not mod.startswith("mindhelper_env.") \
                and mod not in mods:
            mods.append(mod)
    return tuple(mods)


# --------------------------------------------------------------------------------------
# Extras and arguments
# --------------------------------------------------------------------------------------


def check_extras(settings: EvalSettings) -> None:
    """``ImportError`` naming the extra a run needs and lacks: ``tdw`` for suites set in TDW
    houses, ``video`` for videos, ``ray`` for the Ray backend."""
    house = _suites_module().SUITES[settings.suite].get("house")
    if house == "tdw" and importlib.util.find_spec("tdw") is None:
        raise ImportError(f"suite {settings.suite} is set in TDW houses, which need the tdw "
                          "extra: pip install 'mindhelper-env[tdw]'")
    if settings.videos:
        _check_video_extra()
    if settings.backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ImportError(RAY_INSTALL_HINT) from None


def _check_video_extra() -> None:
    try:
        import imageio  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"videos need the video extra ({exc}); install the video extra: "
                          "pip install 'mindhelper-env[video]'") from None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_evaluate_args(
    *,
    workers: int = 1,
    force_workers: bool = False,
    limit: int | None = None,
    seed: int = 0,
    videos: int = 0,
    backend: str = "local",
    address: str | None = None,
    out_dir: Any = ".",
    trials: int = 1,
) -> None:
    """Check :func:`evaluate`'s scalar arguments; ``ValueError`` naming the argument."""
    if not _is_int(workers) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    if workers > MAX_WORKERS:
        raise ValueError(f"workers must be at most {MAX_WORKERS}, got {workers}")
    cpus = safety.cpu_count()
    if workers > cpus and not force_workers:
        raise ValueError(f"workers={workers} exceeds the {cpus} CPUs available; more workers "
                         "than CPUs only slow the run down (force it with force_workers / "
                         "--force-workers)")
    if limit is not None and (not _is_int(limit) or limit < 1):
        raise ValueError(f"limit must be a positive int, got {limit!r}")
    if not _is_int(seed) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an int between 0 and {MAX_SEED}, got {seed!r}")
    if not _is_int(videos) or not 0 <= videos <= MAX_VIDEOS:
        raise ValueError(f"videos must be an int between 0 and {MAX_VIDEOS}, got {videos!r}")
    if not _is_int(trials) or not 1 <= trials <= MAX_TRIALS:
        raise ValueError(f"trials must be an int between 1 and {MAX_TRIALS}, got {trials!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if address is not None:
        if backend != "ray":
            raise ValueError("address is only used with backend='ray'")
        if not isinstance(address, str) or not address.strip():
            raise ValueError(f"address must be a non-empty string, got {address!r}")
    if not isinstance(out_dir, (str, os.PathLike)) or not os.fspath(out_dir).strip():
        raise ValueError(f"out_dir must be a non-empty path, got {out_dir!r}")
    if "\0" in os.fspath(out_dir):
        raise ValueError("out_dir contains a NUL character")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: exists and is not a directory")


#: Largest ``concurrency`` (episodes in flight per worker).
MAX_CONCURRENCY = 1024
#: Largest ``estimate_episodes``.
MAX_ESTIMATE_EPISODES = 100


def check_scale_args(settings: EvalSettings) -> None:
    """``concurrency``, ``max_cost``, ``max_tokens`` and ``estimate_episodes``; ValueError
    naming the argument. (Prices are checked with the agents' models, in
    :func:`mindhelper_env.evaluation.run.evaluate`.)"""
    c = settings.concurrency
    if not _is_int(c) or not 1 <= c <= MAX_CONCURRENCY:
        raise ValueError(f"concurrency must be an int between 1 and {MAX_CONCURRENCY}, "
                         f"got {c!r}")
    if c > 1 and settings.backend == "ray":
        raise ValueError("concurrency > 1 is for the local backend (Ray plays one episode "
                         "per task; give it more workers instead)")
    cost = settings.max_cost
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))
                             or not cost > 0 or cost == float("inf")):
        raise ValueError(f"max_cost must be a positive number of US dollars, got {cost!r}")
    tokens = settings.max_tokens
    if tokens is not None and (not _is_int(tokens) or tokens < 1):
        raise ValueError(f"max_tokens must be a positive int, got {tokens!r}")
    if not isinstance(settings.allow_partial, bool):
        raise ValueError(f"allow_partial must be True or False, got {settings.allow_partial!r}")
    k = settings.estimate_episodes
    if not _is_int(k) or not 0 <= k <= MAX_ESTIMATE_EPISODES:
        raise ValueError(f"estimate_episodes must be an int between 0 and "
                         f"{MAX_ESTIMATE_EPISODES}, got {k!r}")


def _check_env_kwargs(env_id: str, env_kwargs: Mapping[str, Any]) -> None:
    """Build (and close) the env once so bad ``env_kwargs`` fail before any file is touched."""
    import gymnasium as gym

    import mindhelper_env  # noqa: F401

    try:
        env = make_env(env_id, **dict(env_kwargs))
    except gym.error.Error as exc:
        raise ValueError(f"env {env_id!r}: {exc}") from None
    except TypeError as exc:
        raise ValueError(f"env_kwargs: {exc}") from None
    env.close()


# --------------------------------------------------------------------------------------
# Trials and run.json
# --------------------------------------------------------------------------------------


def trial_seed(seed: int, index: int, trial: int) -> int:
    """The agent's reset seed for ``trial`` of episode ``index``: ``seed + index`` for trial
    0 (what a one-trial run uses), else a seed drawn from NumPy's ``SeedSequence`` of
    ``(seed, index, trial)`` (deterministic, independent across trials)."""
    if trial == 0:
        return int(seed) + int(index)
    import numpy as np

    return int(np.random.SeedSequence((int(seed), int(index), int(trial)))
               .generate_state(1, np.uint32)[0])


def settings_diff(previous: Any, settings: Mapping[str, Any]) -> list[str]:
    """What differs between a ``run.json`` and the settings of this run (both ways)."""
    if not isinstance(previous, dict):
        return ["run.json is not a JSON object"]
    diffs = []
    for key, now in settings.items():
        if key not in previous:
            diffs.append(f"{key}: missing in run.json, now {json.dumps(now)}")
        elif previous[key] != now:
            diffs.append(f"{key}: {json.dumps(previous[key])} in run.json, now {json.dumps(now)}")
    for key in previous:
        if key not in settings:
            diffs.append(f"{key}: {json.dumps(previous[key])} in run.json, now not set")
    return diffs
