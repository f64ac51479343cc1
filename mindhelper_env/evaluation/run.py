"""``evaluate``: every agent on every episode of a suite, one JSON line each (see
:mod:`mindhelper_env.evaluation` for the records, the files and the safety rules)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mindhelper_env.evaluation import safety
from mindhelper_env.evaluation.budget import (
    BudgetExhausted,
    BudgetTooSmall,
    Meter,
    Price,
    check_prices,
    episode_over_budget,
    estimate_run,
    ledger_seed,
    model_spec_of,
    price_of,
    scale_estimate,
)
from mindhelper_env.evaluation.episode import make_env, pop_agent_error, suite_env_id
from mindhelper_env.evaluation.progress import Progress
from mindhelper_env.evaluation.results import (
    append_line,
    load_existing,
    result_file_name,
    rewrite_sorted,
    strict_json,
)
from mindhelper_env.evaluation.runners import RUN_KEY, Job, LocalRunner, Runner, freeze
from mindhelper_env.evaluation.settings import (
    EvalSettings,
    agent_modules,
    settings_diff,
    suite_episode_ids,
    suite_reference,
)
from mindhelper_env.evaluation.summary import (
    agent_errors,
    coverage,
    summarize,
    summarize_trials,
)

__all__ = ["evaluate", "write_videos", "RUN_FILE", "SUMMARY_FILE"]

logger = logging.getLogger("mindhelper_env.evaluation")

RUN_FILE = "run.json"
SUMMARY_FILE = "summary.json"
#: The run's budget ledger (:mod:`mindhelper_env.models.ledger`), rewritten by every run.
LEDGER_FILE = ".budget-ledger.json"
PLOT_FILES = ("metrics.png", "silent_all.png", "per_family.png", "breakdown.png")
VIDEO_DIR = "videos"


def make_runner(backend: str, workers: int, address: str | None, concurrency: int = 1,
                feed: bool = False) -> Runner:
    """The :class:`~mindhelper_env.evaluation.runners.Runner` of ``backend``: ``"local"``
    (this process or a process pool; ``concurrency`` episodes in flight per worker, and
    ``feed`` for a drainable task feed) or ``"ray"``."""
    if backend == "ray":
        from mindhelper_env.evaluation.ray_runner import RayRunner

        return RayRunner(workers, address)
    return LocalRunner(workers, concurrency=concurrency, feed=feed)


def holds_results(out: Path) -> list[str]:
    """What in ``out`` an earlier run wrote (``run.json``, result files, ``summary.json``)."""
    if not out.is_dir():
        return []
    names = [RUN_FILE, SUMMARY_FILE]
    found = [n for n in names if (out / n).exists()]
    found += sorted(p.name for p in out.glob("*.jsonl") if p.is_file())
    return found


def _prepare_run_file(out: Path, settings: Mapping[str, Any], resume: bool,
                      agent_files: Sequence[Path], *, write: bool = True) -> None:
    """On resume, check ``run.json`` against ``settings``; then (with ``write``) (re)write
    it atomically."""
    run_path = out / RUN_FILE
    if resume:
        existing = [p for p in agent_files if p.exists()]
        if run_path.exists():
            try:
                previous = strict_json(run_path.read_bytes().decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise ValueError(f"{run_path}:1: invalid JSON ({exc}); cannot resume") from None
            if isinstance(previous, dict):
                _check_previous_provenance(run_path, previous.pop("provenance", None),
                                           settings.get("provenance"))
            diff = settings_diff(previous, {k: v for k, v in settings.items()
                                            if k != "provenance"})
            if diff:
                raise ValueError(f"{run_path}:1: cannot resume with different settings "
                                 f"({'; '.join(diff)}); rerun with the same settings or use a "
                                 "new output directory")
        elif existing:
            raise ValueError(f"{run_path}: missing, so the settings of the results in {out} "
                             f"(e.g. {existing[0].name}) are unknown; cannot resume (use a new "
                             "output directory)")
        else:
            raise ValueError(f"{run_path}: missing, so there is no run in {out} to resume "
                             "(drop --resume / resume=True to start one)")
    if not write:
        return
    safety.atomic_write_bytes(
        run_path, (json.dumps(settings, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def _check_previous_provenance(run_path: Path, previous: Any, now: Any) -> None:
    """Refuse to resume a run made by another generator or on another suite digest."""
    if not isinstance(now, Mapping):
        return
    if not isinstance(previous, Mapping):
        raise ValueError(f"{run_path}: no provenance (written before 0.4), so the generator "
                         "and suite digest of its records are unknown; cannot resume (start "
                         "a new output directory)")
    if previous.get("generator") != now.get("generator"):
        raise ValueError(f"{run_path}: records made by generator {previous.get('generator')}, "
                         f"this installation runs {now.get('generator')}; cannot resume (start "
                         "a new output directory)")
    was = (previous.get("suite") or {}).get("reference_sha256")
    is_ = (now.get("suite") or {}).get("reference_sha256")
    if was != is_:
        raise ValueError(f"{run_path}: records made on suite digest {str(was)[:16]}, the "
                         f"suite's digest is now {str(is_)[:16]}; cannot resume (start a new "
                         "output directory)")


def _remove_stale_temporaries(out: Path) -> None:
    """Temporary files and plot folders a killed run left in ``out`` (we hold the lock, so
    no other run is writing them)."""
    import shutil

    for path in out.glob(".*"):
        if path.is_symlink():
            continue
        if path.is_file() and path.name.endswith(".tmp"):
            with contextlib.suppress(OSError):
                path.unlink()
        elif path.is_dir() and path.name.startswith(".plots-"):
            shutil.rmtree(path, ignore_errors=True)


def _earlier_agents(out: Path, now: set[str]) -> dict[str, dict[str, Any]]:
    """The agent blocks of ``run.json``'s provenance that this run does not play."""
    try:
        prev = json.loads((out / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    agents = ((prev.get("provenance") or {}).get("agents") or {}) if isinstance(prev, dict) \
        else {}
    return {k: v for k, v in agents.items() if k not in now and isinstance(v, dict)}


def _write_plots_atomic(metrics: Mapping[str, Any], out: Path,
                        suite: str | None = None) -> list[str]:
    """Plots go to a private temporary folder, then each is renamed into ``out``."""
    import shutil
    import tempfile

    from mindhelper_env.plots import write_plots

    tmp = Path(tempfile.mkdtemp(prefix=".plots-", dir=out))
    try:
        names = []
        for path in write_plots(metrics, tmp, suite=suite):
            os.replace(path, out / path.name)
            names.append(path.name)
        return names
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def evaluate(
    suite: str | EvalSettings,
    agents: Sequence[str] | str | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    on_estimate: Callable[[dict[str, Any]], None] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Run every agent on the first ``limit`` (default: all) episodes of ``suite``.

    Call it with one :class:`~mindhelper_env.evaluation.settings.EvalSettings`
    (``evaluate(EvalSettings("vh-dev-v5", ["oracle"], "runs/dev", workers=2))``) or, as
    before the settings object existed, with its fields as arguments
    (``evaluate("vh-dev-v5", ["oracle"], "runs/dev", workers=2)``: a thin shim that builds
    the settings). ``on_record(record)`` is called as each record is written.

    Writes ``<out_dir>/<agent>.jsonl`` (one result record per episode and trial, appended
    and ``fsync``-ed as it finishes, finally sorted by index and trial; ``<agent>`` is the
    agent's row name, :func:`~mindhelper_env.agents.agent_label`: the registry name, or the
    ``name`` of a ``module:Class`` agent, made safe by
    :func:`~mindhelper_env.evaluation.results.result_file_name`; each record ends with its
    provenance stamp, :mod:`~mindhelper_env.evaluation.provenance`), ``run.json``
    (:meth:`EvalSettings.run_record`, checked on resume, and the run's ``provenance``),
    ``summary.json`` (see :func:`~mindhelper_env.evaluation.summary.summarize`, plus run
    facts, ``provenance``, ``agent_errors`` and ``coverage``) and PNG plots (:func:`mindhelper_env.plots.write_plots`; skipped with a warning
    when matplotlib is not installed, or with ``plots=False``). Returns the summary.

    Safety: every setting is checked (:meth:`EvalSettings.check`: suite, agents and their
    models, the extras the run needs) and every agent is built once with its options
    (:func:`~mindhelper_env.evaluation.roster.build_roster`: a bad or unknown option, a
    non-agent, a module that does not import, two agents with one name) before any file is
    touched; the folder is locked
    (:class:`mindhelper_env.evaluation.safety.OutputLock`: a second run into it fails at once
    naming the holder); every file is replaced atomically and symbolic links in the folder
    are refused, never followed. SIGTERM is handled like Ctrl-C (``KeyboardInterrupt``);
    worker processes die with this process and are killed on an interrupt, so the records
    written so far stay and ``resume=True`` continues.

    ``workers > 1`` plays episodes in a local ``spawn`` process pool (at most the number of
    CPUs unless ``force_workers``); ``backend="ray"`` plays them as Ray tasks instead
    (:mod:`mindhelper_env.evaluation.ray_runner`; ``address`` of an existing cluster, else a
    local one with ``workers`` CPUs). The records are the same in every case. ``resume=True``
    keeps the finished records of a previous run in ``out_dir`` (dropping a truncated last
    line; every kept record is revalidated, its stamp too) and plays only the missing
    episodes; it refuses a folder whose ``run.json`` is missing or holds different settings,
    another generator or another suite digest. The agents of earlier runs into the folder
    that this one does not play stay in its summary, plots and report. A folder that
    already holds results (``run.json``, ``summary.json`` or ``*.jsonl``) needs ``resume``
    or ``overwrite=True``. Episode ``i`` is reset with seed ``seed + i`` (the agent too; in
    trial ``t > 0`` the agent gets :func:`~mindhelper_env.evaluation.settings.trial_seed`).
    The env is ``env_id`` (default: the id the suite was released on,
    :func:`~mindhelper_env.evaluation.episode.suite_env_id`: ``MindHelper-VirtualHome-v3``
    for the v5 suites, v2 for the v4 ones, v1 for the v3 ones, v0 for the v2 ones); ``env_kwargs`` go to ``gym.make`` (e.g.
    ``window_ticks``), ``agent_kwargs[name]`` to the agent factory (``env`` is always passed).

    ``concurrency=N`` keeps up to ``N`` episodes in flight in each worker (threads; see
    :mod:`mindhelper_env.evaluation.runners`): for agents that wait on a model server. The
    model client's per-endpoint ``concurrency`` option still caps the requests in flight.
    Records do not depend on ``N``.

    Budget (:mod:`mindhelper_env.evaluation.budget`): ``prices`` (US dollars per million
    input/output tokens by model spec), ``max_cost`` (US dollars; needs a price for every
    live model) and ``max_tokens``. With a limit, a dry pass over the first
    ``estimate_episodes`` episodes estimates the run's cost before any file is touched
    (passed to ``on_estimate(estimate)``, and kept in the summary); when one episode's
    estimate is over the whole budget the run is refused
    (:class:`~mindhelper_env.evaluation.budget.BudgetTooSmall`, a ``ValueError``) unless
    ``allow_partial``. An episode of an agent with a live model then starts only when the
    run's one ledger (:mod:`mindhelper_env.models.ledger`) can hold its worst case (learned
    from what the server billed), and each of its model requests draws its own worst case
    from that hold; once an episode cannot be covered, none starts after it, those in
    flight finish (written) or are cut, and neither the cut nor the not-started ones are
    recorded; ``summary.json`` is written marked ``partial``, and
    :class:`~mindhelper_env.evaluation.budget.BudgetExhausted` is raised (``resume=True``
    continues). The summary's ``spend`` has what the run paid (``spent_usd``, the ledger's
    figure; ``written_usd`` on the records written, ``unwritten_usd`` on episodes cut),
    tokens and US dollars by agent, the ledger's figures, and the rate-limit answers
    retried. With no episode written, no plot is written (``plots_skipped``).

    ``trials=K`` plays every episode ``K`` times; records carry ``trial`` (absent when
    ``K == 1``, so one-trial records are unchanged) and the summary adds ``trials``
    (:func:`~mindhelper_env.evaluation.summary.summarize_trials`: mean and 95 % interval
    over trials, pass^k for PHR).

    ``videos=K`` also writes, for the first ``K`` episodes of each agent, a GIF and a timeline
    PNG to ``<out_dir>/videos/`` (:func:`write_videos`; needs the ``video`` extra).

    Raises ``ValueError`` for an unknown suite or agent, bad arguments, a locked folder, or
    (on resume) a corrupt result file or different settings, with a
    ``"<file>:<line>: <reason>"`` message where a file is at fault; ``ImportError`` naming a
    missing extra.
    """
    if isinstance(suite, EvalSettings):
        if agents is not None or out_dir is not None or options:
            raise TypeError("evaluate(settings) takes no other settings; use "
                            "settings.replace(...)")
        settings = suite
    else:
        if agents is None or out_dir is None:
            raise TypeError("evaluate() needs suite, agents and out_dir (or one EvalSettings)")
        unknown = sorted(set(options) - set(EvalSettings.fields()))
        if unknown:
            raise TypeError(f"evaluate() got an unexpected keyword argument {unknown[0]!r}")
        settings = EvalSettings(suite, agents, out_dir, **options)
    # 1. Every check before any file is touched; every agent built once.
    settings.check()
    agents = list(settings.agents)
    prices = _agent_prices(settings)
    from mindhelper_env.evaluation.provenance import run_provenance
    from mindhelper_env.evaluation.roster import build_roster

    roster = build_roster(agents, settings.agent_kwargs or {}, settings.env_id,
                          settings.env_kwargs, int(settings.seed))
    provenance = run_provenance(suite=settings.suite, env_id=settings.env_id,
                                env_kwargs=settings.env_kwargs, seed=int(settings.seed),
                                trials=int(settings.trials),
                                agents={e.label: e.provenance for e in roster.values()})
    job = Job(
        suite=settings.suite,
        env_id=settings.env_id,
        env_kwargs=freeze(settings.env_kwargs),
        agent_kwargs=tuple(sorted((a, freeze(kw))
                                  for a, kw in (settings.agent_kwargs or {}).items())),
        seed=int(settings.seed),
        timing=bool(settings.timing),
        modules=agent_modules(agents),
        trials=int(settings.trials),
    )
    out = settings.out
    budgeted = settings.max_cost is not None or settings.max_tokens is not None
    estimate = None
    if budgeted and settings.estimate_episodes:  # before any file: it may refuse the run
        n_eps = len(suite_episode_ids(settings.suite))
        n_eps = n_eps if settings.limit is None else min(settings.limit, n_eps)
        estimate = estimate_run(settings, {a: n_eps * job.trials for a in agents}, prices,
                                min(settings.estimate_episodes, n_eps))
        reason = episode_over_budget(estimate, settings.max_cost, settings.max_tokens)
        if reason is not None and not settings.allow_partial:
            raise BudgetTooSmall(reason)
    if settings.resume:
        run_path = out / RUN_FILE
        if not run_path.is_file():
            raise ValueError(f"{run_path}: missing, so there is no run in {out} to resume "
                             "(drop --resume / resume=True to start one)")

    # 2. One writer per folder; the runner (Ray, if used) ready before any file changes.
    out.mkdir(parents=True, exist_ok=True)
    lock = safety.OutputLock(out).acquire()
    runner = make_runner(settings.backend, settings.workers, settings.address,
                         settings.concurrency, feed=budgeted)
    started = False
    try:
        with safety.sigterm_as_interrupt():
            runner.start()
            started = True
            return _evaluate_locked(job, settings, runner, on_record, prices, on_estimate,
                                    roster, provenance, estimate)
    finally:
        if started:
            runner.stop()
        lock.release()


def _agent_prices(settings: EvalSettings) -> dict[str, Price | None]:
    """Each agent's price (None: not set); ValueError for a bad price table, or a budget in
    US dollars with a live model that has no price."""
    table = check_prices(settings.prices)
    agent_kwargs = settings.agent_kwargs or {}
    out = {a: price_of(model_spec_of(a, agent_kwargs), table) for a in settings.agents}
    if settings.max_cost is not None:
        for agent, price in out.items():
            if price is None:
                spec = model_spec_of(agent, agent_kwargs)
                raise ValueError(f"max_cost needs the price of agent {agent!r}'s model "
                                 f"{spec!r}: add prices={{{spec!r}: (INPUT, OUTPUT)}} (US "
                                 "dollars per million tokens; on the command line: --price "
                                 "SPEC=INPUT,OUTPUT)")
    return out


def _evaluate_locked(job: Job, settings: EvalSettings, runner: Any,
                     on_record: Callable[[dict[str, Any]], None] | None,
                     prices: dict[str, Price | None],
                     on_estimate: Callable[[dict[str, Any]], None] | None,
                     roster: Mapping[str, Any], provenance: dict[str, Any],
                     estimate: dict[str, Any] | None = None) -> dict[str, Any]:
    from mindhelper_env.evaluation.provenance import check_record

    suite = job.suite
    agents = list(settings.agents)
    labels = {a: roster[a].label for a in agents}
    out = settings.out
    trials = job.trials
    files = {a: out / roster[a].file for a in agents}
    run_record = settings.run_record()
    ids = suite_episode_ids(suite)
    n = len(ids) if settings.limit is None else min(settings.limit, len(ids))
    resume = settings.resume
    for path in [*files.values(), out / RUN_FILE, out / SUMMARY_FILE, out / LEDGER_FILE,
                 *(out / name for name in PLOT_FILES), out / VIDEO_DIR]:
        safety.refuse_symlink(path)
    if not resume and not settings.overwrite:  # under the lock, before any file changes
        found = holds_results(out)
        if found:
            raise ValueError(f"{out}: holds results of an earlier run ({', '.join(found[:4])}"
                             f"{' ...' if len(found) > 4 else ''}); add --resume "
                             "(resume=True) to continue it or --overwrite (overwrite=True) to "
                             "replace it, or choose a new output directory")
    _remove_stale_temporaries(out)
    full = {**run_record, "provenance": provenance}
    _prepare_run_file(out, full, resume, list(files.values()), write=False)
    earlier: dict[str, dict[str, Any]] = {}
    if resume:  # check every kept record before changing anything
        earlier = _earlier_agents(out, set(labels.values()))
        provenance["agents"] = {**earlier, **provenance["agents"]}
        for label, path in [*((labels[a], files[a]) for a in agents),
                            *((lb, out / result_file_name(lb)) for lb in earlier)]:
            if path.exists():
                kept = load_existing(path, agent=label, suite=suite, ids=ids, trials=trials,
                                     repair=False)
                for rec in kept.values():
                    problem = check_record(rec, generator=provenance["generator"],
                                           track=provenance["obs"],
                                           suite_digest=provenance["suite"]["reference_sha256"],
                                           reference=None)
                    if problem:
                        raise ValueError(f"{path}: episode {rec.get('episode_id')}: {problem}; "
                                         "cannot resume (start a new output directory)")
    _prepare_run_file(out, full, resume, list(files.values()))
    with contextlib.suppress(FileNotFoundError):
        (out / SUMMARY_FILE).unlink()  # never leave a summary of other records behind

    done: dict[str, dict[tuple[int, int], dict[str, Any]]] = {}
    for agent in agents:
        path = files[agent]
        if resume and path.exists():
            done[agent] = load_existing(path, agent=labels[agent], suite=suite, ids=ids,
                                        trials=trials)
        else:
            safety.atomic_write_bytes(path, b"")
            done[agent] = {}
    tasks = [(a, i, t) for i in range(n) for t in range(trials) for a in agents
             if (i, t) not in done[a]]
    already = sum(1 for a in agents for (i, _t) in done[a] if i < n)
    if resume:
        logger.info("resuming: %d of %d episodes already done", already, already + len(tasks))

    # records carry the agents' row names (labels); the meter counts by them
    meter = Meter({labels.get(a, a): p for a, p in prices.items()},
                  max_cost=settings.max_cost, max_tokens=settings.max_tokens)
    for agent in agents:
        for rec in done[agent].values():
            meter.add(rec, played=False)
    budgeted = settings.max_cost is not None or settings.max_tokens is not None
    if estimate is not None and tasks:
        estimate = scale_estimate(estimate, {a: sum(1 for t in tasks if t[0] == a)
                                             for a in agents}, prices)
        if on_estimate is not None:
            on_estimate(estimate)
    ledger = _open_ledger(out, settings, prices, estimate) if budgeted else None
    if ledger is not None:
        import dataclasses

        job = dataclasses.replace(job, ledger=ledger.spec)
        meter.ledger = ledger.summary()
    try:
        return _play_and_summarize(job, settings, runner, on_record, roster, provenance,
                                   estimate, meter, ledger, tasks, done, files, labels,
                                   already, earlier, n, ids, run_record)
    finally:
        if ledger is not None:
            from mindhelper_env.models.ledger import kill_ray_ledger

            kill_ray_ledger(ledger.spec)


def _open_ledger(out: Path, settings: EvalSettings, prices: Mapping[str, Price | None],
                 estimate: Mapping[str, Any] | None = None) -> Any:
    """A fresh ledger for this run: a file in ``out`` (every process of this machine), or
    a Ray actor (``backend="ray"``: every worker of the cluster); its agents with a live
    model hold each episode's worst case, starting from what the dry pass saw."""
    import uuid

    from mindhelper_env.models.ledger import Ledger, LedgerSpec

    table = tuple((a, p.input, p.output) for a, p in sorted(prices.items()) if p is not None)
    kwargs = settings.agent_kwargs or {}
    metered = tuple(sorted(a for a in settings.agents
                           if (model_spec_of(a, kwargs) or "replay:").split(":", 1)[0]
                           not in ("replay", "dry")))
    if settings.backend == "ray":
        spec = LedgerSpec(actor=f"mindhelper-ledger:{uuid.uuid4().hex}", prices=table,
                          metered=metered)
    else:
        spec = LedgerSpec(path=str((out / LEDGER_FILE).resolve()), prices=table,
                          metered=metered)
    return Ledger.create(spec, max_cost=settings.max_cost, max_tokens=settings.max_tokens,
                         seed=ledger_seed(estimate))


def _shows_spend(settings: EvalSettings, prices: Mapping[str, Price | None]) -> bool:
    """Whether the progress bar shows a spend: a budget, or an agent with a priced model
    (never for runs without a live model)."""
    if settings.max_cost is not None or settings.max_tokens is not None:
        return True
    kwargs = settings.agent_kwargs or {}
    return any(p is not None and model_spec_of(a, kwargs) is not None
               and not str(model_spec_of(a, kwargs)).startswith("replay:")
               for a, p in prices.items())


def _play_and_summarize(job: Job, settings: EvalSettings, runner: Any,
                        on_record: Callable[[dict[str, Any]], None] | None,
                        roster: Mapping[str, Any], provenance: dict[str, Any],
                        estimate: dict[str, Any] | None, meter: Meter, ledger: Any,
                        tasks: list[Any], done: dict[str, dict[tuple[int, int], Any]],
                        files: dict[str, Path], labels: dict[str, str], already: int,
                        earlier: dict[str, Any], n: int, ids: Sequence[str],
                        run_record: dict[str, Any]) -> dict[str, Any]:
    from mindhelper_env.evaluation.provenance import stamp

    suite = job.suite
    agents = list(settings.agents)
    out = settings.out
    trials = job.trials
    prices = {a: meter.prices.get(labels.get(a, a)) for a in agents}
    budgeted = ledger is not None
    refs: dict[str, dict[str, Any]] = {}
    t_start = time.perf_counter()
    bar = Progress(settings.progress, suite, already + len(tasks), already,
                   spend=meter.progress_text() if _shows_spend(settings, prices) else None)
    handles = {a: safety.open_append(files[a]) for a in agents}
    raised: set[str] = set()  # agents whose first traceback was shown
    batches = runner.batches(job, tasks)
    # episodes the budget cut or did not start: never recorded (``resume`` plays them)
    unrecorded: dict[str, list[dict[str, Any]]] = {"cut": [], "not_started": []}
    try:
        for batch in batches:
            written_now = 0
            for rec, ref in batch:
                meta = rec.pop(RUN_KEY, None) or {}
                meter.rate_limited += int(meta.get("rate_limited", 0))
                if meta.get("cut") or meta.get("not_started"):
                    unrecorded["cut" if meta.get("cut") else "not_started"].append(
                        {"agent": labels.get(rec["agent"], rec["agent"]),
                         "index": int(rec["index"]), "trial": int(rec.get("trial", 0))})
                    meter.cut += bool(meta.get("cut"))
                    meter.not_started += bool(meta.get("not_started"))
                    continue
                written_now += 1
                spec = rec["agent"]
                rec["agent"] = labels[spec]
                pop_agent_error(rec, raised)  # its first traceback, shown once
                stamp(rec, provenance, labels[spec], ref)
                append_line(handles[spec], rec)
                done[spec][(int(rec["index"]), int(rec.get("trial", 0)))] = rec
                refs[str(rec["episode_id"])] = ref
                meter.add(rec)
                if on_record is not None:
                    on_record(rec)
            if budgeted:
                meter.ledger = ledger.summary()
            bar.advance(written_now, spend=meter.progress_text())
            if budgeted and meter.stopped is None:
                meter.stopped = meter.ledger["closed"]
            if meter.stopped is not None:
                # no new episode; those in flight end on what they hold, written or cut.
                # Ray tasks cannot be drained: their episodes not started yet come back
                # "not started" at once (the ledger is closed).
                if hasattr(batches, "drain"):
                    batches.drain()
    finally:
        batches.close()  # stops the pool / Ray tasks / closes the env now
        bar.close()
        for fh in handles.values():
            fh.close()
    wall = time.perf_counter() - t_start
    if budgeted:
        meter.ledger = ledger.summary()
        meter.stopped = meter.stopped or meter.ledger["closed"]

    for agent in agents:
        rewrite_sorted(files[agent], done[agent].values())
    written = sum(1 for a in agents for (i, _t) in done[a] if i < n)
    partial = meter.stopped is not None and written < already + len(tasks)

    # References of resumed episodes (played ones came back with their records).
    for agent in agents:
        for (index, _trial), rec in done[agent].items():
            if str(rec["episode_id"]) not in refs:
                refs[str(rec["episode_id"])] = suite_reference(suite, index)
    records_by_agent = {labels[a]: [done[a][k] for k in sorted(done[a])] for a in agents}
    names = {labels[a]: files[a].name for a in agents}
    for label in earlier:  # agents of the earlier runs of a resumed folder stay in it
        path = out / result_file_name(label)
        if label in names or not path.exists():
            continue
        kept = load_existing(path, agent=label, suite=suite, ids=ids, trials=trials,
                             repair=False)
        records_by_agent = {label: [kept[k] for k in sorted(kept)], **records_by_agent}
        names = {label: path.name, **names}
        for (index, _trial), rec in kept.items():
            if str(rec["episode_id"]) not in refs:
                refs[str(rec["episode_id"])] = suite_reference(suite, index)
    summary: dict[str, Any] = {
        "suite": suite,
        "suite_episodes": len(ids),
        "episodes": {a: len(r) for a, r in records_by_agent.items()},
        "files": names,
        "env_id": job.env_id,
        "env_kwargs": run_record["env_kwargs"],
        "seed": job.seed,
        "workers": settings.workers,
        "backend": settings.backend,
        "played": meter.run_episodes,
        "wall_seconds": round(wall, 3),
    }
    if partial:
        summary["partial"] = {"reason": meter.stopped, "episodes_written": written,
                              "episodes_total": already + len(tasks),
                              "episodes_cut": meter.cut,
                              "episodes_not_started": meter.not_started,
                              "cut": sorted(unrecorded["cut"], key=_task_key),
                              "not_started": sorted(unrecorded["not_started"],
                                                    key=_task_key)}
    if settings.concurrency > 1:
        summary["concurrency"] = settings.concurrency
    if any(row["model_calls"] for row in meter.by_agent.values()) or budgeted \
            or settings.prices or meter.rate_limited:
        summary["spend"] = meter.to_dict()
        if estimate is not None:
            summary["spend"]["estimate"] = estimate
    if trials > 1:
        summary.update(summarize_trials(records_by_agent, refs, trials))
    else:
        summary.update(summarize(records_by_agent, refs))
    summary["agent_errors"] = agent_errors(records_by_agent)
    summary["coverage"] = coverage(records_by_agent, len(ids))
    summary["provenance"] = provenance
    summary["plots"] = []
    if settings.plots and not any(records_by_agent.values()):
        summary["plots_skipped"] = "no episode was written"
        logger.info("%s: no plots: no episode was written", out)
    elif settings.plots:
        try:
            summary["plots"] = _write_plots_atomic(summary["metrics"], out, settings.suite)
        except ImportError as exc:
            logger.warning("plots skipped: %s", exc)
    summary["videos"] = []
    if settings.videos and not partial:  # videos replay the agents: no calls past a stop
        summary["videos"] = [str(p.relative_to(out)) for p in write_videos(
            suite, agents, out / VIDEO_DIR, min(settings.videos, n), env_id=job.env_id,
            env_kwargs=run_record["env_kwargs"], seed=job.seed,
            agent_kwargs=settings.agent_kwargs, labels=labels)]
    safety.atomic_write_bytes(out / SUMMARY_FILE,
                              (json.dumps(summary, indent=2) + "\n").encode("utf-8"))
    if partial:
        raise BudgetExhausted(_stop_message(out, settings, meter, written,
                                            already + len(tasks),
                                            no_plots="plots_skipped" in summary),
                              summary["spend"], summary)
    return summary


def _task_key(task: Mapping[str, Any]) -> tuple[str, int, int]:
    return str(task["agent"]), int(task["index"]), int(task["trial"])


def _stop_message(out: Path, settings: EvalSettings, meter: Meter, written: int,
                  total: int, *, no_plots: bool = False) -> str:
    """The budget stop in one line: spent, budget, reserved but not sent, what is written."""
    led = meter.ledger or {}
    if meter.stopped == "max_tokens":
        spent = f"spent {led.get('spent_tokens', meter.run_tokens):,} of {settings.max_tokens:,} tokens"
        unsent = f"{led.get('unsent_tokens', 0):,} tokens"
    else:
        spent = f"spent ${led.get('spent_usd', meter.run_cost):.4f} of ${settings.max_cost:g}"
        unsent = f"${led.get('unsent_usd', 0.0):.4f}"
    if meter.stopped != "max_tokens" and meter.ledger is not None:
        spent += (f" (${meter.run_cost:.4f} on the episodes written, "
                  f"${max(0.0, meter.spent_usd() - meter.run_cost):.4f} on episodes cut)")
    plots = "; no plots: no episode was written" if no_plots else ""
    return (f"{out}: stopped at the budget: {spent}; {unsent} reserved for "
            f"{led.get('requests_refused', 0)} request(s) not sent; {written} of {total} "
            f"episodes written, {meter.cut} cut by the budget, {meter.not_started} not "
            f"started (neither recorded; a resumed run plays them){plots}")


def write_videos(
    suite: str,
    agents: Sequence[str],
    out_dir: str | os.PathLike[str],
    k: int,
    *,
    env_id: str | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    seed: int = 0,
    agent_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
    ext: str = ".gif",
    size: int = 256,
    labels: Mapping[str, str] | None = None,
) -> list[Path]:
    """Replay the first ``k`` episodes of ``suite`` per agent and save videos and timelines.

    Episodes are replayed with the same seeds as :func:`evaluate` (``seed + i``), so the video
    shows the recorded episode. Files: ``<out_dir>/<agent>-<episode_id><ext>`` and
    ``<agent>-<episode_id>-timeline.png`` (``<agent>``: the agent's row name from
    ``labels``, else its spec, made safe as in :func:`result_file_name`).
    """

    import mindhelper_env  # noqa: F401
    from mindhelper_env.agents import make_agent
    from mindhelper_env.render.episode import record_episode, save_episode_media

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name in agents:
        label = (labels or {}).get(name, name)
        stem = safety.agent_file_stem(label)
        env = make_env(env_id or suite_env_id(suite), **dict(env_kwargs or {}))
        kwargs = dict((agent_kwargs or {}).get(name, {}))
        kwargs.setdefault("env", env)
        kwargs.setdefault("seed", seed)
        agent = make_agent(name, **kwargs)
        for i in range(k):
            rec = record_episode(env, agent, seed=seed + i, size=size, agent_name=label,
                                 options={"suite": suite, "index": i})
            written.extend(save_episode_media(
                rec, out / f"{stem}-{rec.record['episode_id']}{ext}"))
        env.close()
    return written
