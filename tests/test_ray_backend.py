"""``--backend ray``: the same records as the local runner, resume, a killed Ray worker retried,
and the cluster-wide endpoint semaphore. Runs on a local single-node Ray instance (2 CPUs;
Ray >= 2.5x no longer has ``local_mode``). CI installs the ``ray`` extra, so these tests are
never skipped there; without Ray they fail with the install hint."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mindhelper_env.agents import register_agent
from mindhelper_env.agents.simple import SilentAgent
from mindhelper_env.cli import main
from mindhelper_env.evaluation import evaluate
from mindhelper_env.scenarios.suites import suite_names

DEV = next((n for n in suite_names() if "dev" in n), suite_names()[0])
AGENTS = "silent,random,oracle"
LIMIT = 8


class _CrashOnceAgent(SilentAgent):
    """Silent, but kills its own process the first time it plays episode 1 (the seed of
    episode ``i`` is ``seed + i``), leaving a marker file so the retry survives."""

    def __init__(self, marker: str, seed: int = 0) -> None:
        super().__init__()
        self.name = "crash_once"
        self._marker = marker
        self._crash_seed = seed + 1

    def reset(self, *, seed: int | None = None) -> None:
        super().reset(seed=seed)
        if seed == self._crash_seed and not os.path.exists(self._marker):
            Path(self._marker).write_text(str(os.getpid()))
            os._exit(1)  # the Ray worker dies mid-task


# Registered at import, so Ray workers that import this module know the agent too.
register_agent("crash_once", lambda marker="", seed=0, **kw: _CrashOnceAgent(marker, seed))


@pytest.fixture(scope="module")
def ray_session() -> Any:
    import ray  # not skipped: CI installs the ray extra

    ray.init(num_cpus=2, include_dashboard=False, namespace="mindhelper",
             log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def _argv(out: Path, *extra: str, limit: int = LIMIT) -> list[str]:
    return ["evaluate", "--suite", DEV, "--agents", AGENTS, "--out", str(out), "--limit",
            str(limit), "--no-progress", "--no-plots", "--no-timing", "--json", *extra]


def test_ray_records_are_byte_identical_to_local(ray_session: Any, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    local, remote = tmp_path / "local", tmp_path / "ray"
    assert main(_argv(local, "--workers", "2")) == 0
    assert main(_argv(remote, "--backend", "ray", "--workers", "2")) == 0
    capsys.readouterr()
    for agent in AGENTS.split(","):
        assert (remote / f"{agent}.jsonl").read_bytes() == (local / f"{agent}.jsonl").read_bytes()
    summary = json.loads((remote / "summary.json").read_text())
    assert summary["backend"] == "ray" and summary["played"] == 3 * LIMIT


def test_ray_resume_matches_local(ray_session: Any, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    local, remote = tmp_path / "local", tmp_path / "ray"
    assert main(_argv(local)) == 0
    assert main(_argv(remote, "--backend", "ray", limit=3)) == 0
    # lose one finished record and cut the last line short, as a crash would
    path = remote / "oracle.jsonl"
    path.write_bytes(path.read_bytes()[:-25])
    assert main(_argv(remote, "--backend", "ray", "--resume")) == 0
    capsys.readouterr()
    for agent in AGENTS.split(","):
        assert (remote / f"{agent}.jsonl").read_bytes() == (local / f"{agent}.jsonl").read_bytes()


def test_killed_ray_worker_is_retried(ray_session: Any, tmp_path: Path) -> None:
    marker = tmp_path / "crashed"
    out = tmp_path / "crash"
    summary = evaluate(DEV, ["crash_once"], out, backend="ray", workers=2, limit=4,
                       progress=False, plots=False, timing=False,
                       agent_kwargs={"crash_once": {"marker": str(marker)}})
    assert marker.is_file()  # a worker really died
    assert summary["episodes"] == {"crash_once": 4}
    records = [json.loads(x) for x in (out / "crash_once.jsonl").read_text().splitlines()]
    assert [r["index"] for r in records] == [0, 1, 2, 3]
    silent = tmp_path / "silent"
    evaluate(DEV, ["silent"], silent, limit=4, progress=False, plots=False, timing=False)
    expected = [json.loads(x) for x in (silent / "silent.jsonl").read_text().splitlines()]
    for rec in expected:
        rec["agent"] = "crash_once"
    for rec in [*records, *expected]:  # the stamps name each run's agent
        assert rec.pop("provenance")["generator"]
    assert records == expected


def test_endpoint_slot_is_shared_across_ray_workers(ray_session: Any) -> None:
    from mindhelper_env.ray_backend import endpoint_limiter

    def _hold_slot(endpoint: str, limit: int, seconds: float) -> float:
        # nested, so Ray ships it by value (workers need not import this test module)
        from mindhelper_env.ray_backend import endpoint_slot

        with endpoint_slot(endpoint, limit):
            time.sleep(seconds)
        return seconds

    ray = ray_session
    endpoint = f"http://model.test/v1/{time.time_ns()}"
    limiter = endpoint_limiter(endpoint, 1)
    hold = ray.remote(num_cpus=1)(_hold_slot)
    t0 = time.perf_counter()
    ray.get([hold.remote(endpoint, 1, 0.5) for _ in range(2)])
    elapsed = time.perf_counter() - t0
    stats = ray.get(limiter.stats.remote())
    assert stats == {"limit": 1, "in_use": 0, "peak": 1}
    assert elapsed >= 1.0  # the two holders ran one after the other
    ray.kill(limiter)


def test_endpoint_slot_without_ray_is_process_local(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from mindhelper_env.ray_backend import endpoint_slot

    monkeypatch.setitem(sys.modules, "ray", None)
    peak = 0
    active = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal peak, active
        with endpoint_slot("local-endpoint", 2):
            with lock:
                active += 1
                peak = max(peak, active)
            time.sleep(0.05)
            with lock:
                active -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak == 2
    with pytest.raises(TimeoutError), endpoint_slot("busy", 1):
        with endpoint_slot("busy", 1, timeout=0.05):
            pass


@pytest.mark.parametrize("address", ["127.0.0.1:1", "nohost", "ray://127.0.0.1:1"])
def test_unreachable_ray_address_fails_fast_and_keeps_results(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], address: str) -> None:
    out = tmp_path / "kept"
    assert main(_argv(out, limit=2)) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    capsys.readouterr()
    t0 = time.perf_counter()
    rc = main(_argv(out, "--backend", "ray", "--address", address, limit=2))
    err = capsys.readouterr().err
    assert rc == 2 and "--address" in err and err.count("\n") == 1, err
    assert time.perf_counter() - t0 < 10
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_the_budget_holds_on_ray(ray_session: Any, tmp_path: Path) -> None:
    """Ray workers hold episodes and reserve requests on one ledger (a named actor): what
    the server bills never passes --max-cost, an episode the budget cannot cover is not
    started, and the stop writes the partial summary."""
    from slot_server import SlotServer

    from mindhelper_env.evaluation.budget import BudgetExhausted, Price, estimate_run
    from mindhelper_env.evaluation.settings import EvalSettings

    with SlotServer(latency=0.0, slots=64) as srv:
        kwargs = {"direct-vlm": {"model": f"openai:fake@{srv.url}", "api_key": "k"}}
        est = estimate_run(EvalSettings("vh-dev-v5", ["direct-vlm"], tmp_path / "x",
                                        agent_kwargs=kwargs),
                           {"direct-vlm": 16}, {"direct-vlm": Price(1.0, 1.0)}, 2)
        # room for the first episode at its hard bound (about $0.25), then for the episodes
        # at the learned worst case (about $0.08) while what is left pays for them
        budget = round(1.02 * est["agents"]["direct-vlm"]["first_episode_hold_usd"], 4)
        with pytest.raises(BudgetExhausted) as info:
            evaluate("vh-dev-v5", ["direct-vlm"], tmp_path / "o", limit=16, progress=False,
                     plots=False, timing=False, backend="ray", workers=2, max_cost=budget,
                     allow_partial=True, prices={"openai:fake": (1.0, 1.0)},
                     agent_kwargs=kwargs)
        billed = (srv.billed_prompt + srv.billed_completion) / 1e6
    ledger = info.value.spend["ledger"]
    assert 0 < billed <= budget
    assert ledger["spent_usd"] == pytest.approx(billed, abs=1e-6)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["partial"]["reason"] == "max_cost"
    assert summary["spend"]["ledger"] == ledger
    assert summary["spend"]["spent_usd"] == ledger["spent_usd"]
    assert summary["partial"]["episodes_not_started"] >= 1
    assert ledger["episodes_started"] == summary["partial"]["episodes_written"] >= 1
