"""Episodes in flight (``concurrency``): records independent of N, the adaptive limit on
429s, Retry-After, failures that never lose an episode, Ctrl-C and resume, thread-unsafe
agents. The model is a stdlib server on 127.0.0.1 with a latency and a slot limit
(``tests/slot_server.py``)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from fake_openai_server import Reply, ScriptedServer, need
from slot_server import SlotServer

from mindhelper_env.evaluation import evaluate
from mindhelper_env.models import limits
from mindhelper_env.models.limits import AdaptiveLimit, RunCancelled, cancel_scope

need("openai")

SUITE = "vh-dev-v2"


@pytest.fixture(autouse=True)
def _fresh_limits():
    limits.reset_shared_limits()
    yield
    limits.reset_shared_limits()


def run(out, srv, *, limit=6, agents=("direct-vlm",), model_opts=None, **options):
    opts = {"model": f"openai:m@{srv.url}", "api_key": "k", **(model_opts or {})}
    kwargs = {a: dict(opts) for a in agents if a.startswith("direct-vlm")}
    return evaluate(SUITE, list(agents), out, limit=limit, progress=False, plots=False,
                    timing=False, agent_kwargs=kwargs, **options)


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_records_are_byte_identical_for_any_concurrency_and_workers(tmp_path):
    with SlotServer(latency=0.02, slots=64) as srv:
        run(tmp_path / "c1", srv, agents=("direct-vlm", "belief-tracker"))
        assert srv.peak == 1
        run(tmp_path / "c5", srv, agents=("direct-vlm", "belief-tracker"), concurrency=5)
        assert srv.peak >= 3  # episodes really were in flight together
        run(tmp_path / "w2", srv, agents=("direct-vlm", "belief-tracker"), concurrency=3,
            workers=2, force_workers=True)
    for name in ("direct-vlm.jsonl", "belief-tracker.jsonl"):
        base = (tmp_path / "c1" / name).read_bytes()
        assert base == (tmp_path / "c5" / name).read_bytes()
        assert base == (tmp_path / "w2" / name).read_bytes()
    recs = records(tmp_path / "c1" / "direct-vlm.jsonl")
    assert [r["index"] for r in recs] == list(range(6))
    assert sum(r["usage"]["model_calls"] for r in recs) > 6
    assert any(r["actions"] for r in recs)  # the scripted model acts in some episodes
    summary = json.loads((tmp_path / "c5" / "summary.json").read_text())
    assert summary["concurrency"] == 5
    assert summary["spend"]["by_agent"]["direct-vlm"]["model_calls"] == \
        sum(r["usage"]["model_calls"] for r in recs)


def test_the_model_concurrency_option_caps_requests_in_flight(tmp_path):
    with SlotServer(latency=0.03, slots=64) as srv:
        run(tmp_path / "c", srv, limit=6, concurrency=6, model_opts={"concurrency": 2})
        assert srv.peak == 2 and srv.refused == 0


def test_429_past_the_slots_adapts_the_limit_and_loses_nothing(tmp_path):
    with SlotServer(latency=0.02, slots=64) as srv:
        run(tmp_path / "ref", srv, limit=6)
    with SlotServer(latency=0.05, slots=2) as srv:
        summary = run(tmp_path / "busy", srv, limit=6, concurrency=6,
                      model_opts={"backoff": 0.01, "max_backoff": 0.05})
        assert srv.refused > 0  # the run did go past the slots
        assert srv.peak <= 2
    # every 429 was retried, and the summary counts them
    assert summary["spend"]["rate_limited_retries"] == srv.refused
    stats = limits.shared_limit(f"{srv.url}/", None).stats()
    assert stats["cuts"] >= 1 and stats["rate_limited"] == srv.refused
    # the cut took the limit below the six in flight (it climbs back on later successes,
    # so where it ends depends on timing; the lowest point does not)
    assert stats["lowest"] is not None and stats["lowest"] < 6
    assert stats["limit"] is not None and stats["limit"] >= stats["lowest"]
    recs = records(tmp_path / "busy" / "direct-vlm.jsonl")
    assert all(r["usage"]["fallbacks"] == 0 for r in recs)
    assert (tmp_path / "busy" / "direct-vlm.jsonl").read_bytes() == \
        (tmp_path / "ref" / "direct-vlm.jsonl").read_bytes()


def test_adaptive_limit_cuts_once_per_wave_and_climbs_back():
    lim = AdaptiveLimit(8)
    starts = [lim.acquire() for _ in range(8)]
    assert lim.in_flight == 8
    lim.release(starts[0], ok=False, rate_limited=True)
    assert lim.limit == 6  # floor(8 * 0.8)
    lim.release(starts[1], ok=False, rate_limited=True)  # sent before the cut: no new cut
    assert lim.limit == 6 and lim.cuts == 1 and lim.rate_limited == 2 and lim.lowest == 6
    for s in starts[2:]:
        lim.release(s, ok=True)
    assert 6 < lim.limit < 8
    for _ in range(200):
        lim.release(lim.acquire(), ok=True)
    assert lim.limit == 8  # back to the ceiling, never past it
    later = lim.acquire()
    lim.release(later, ok=False, rate_limited=True)
    assert lim.cuts == 2 and lim.limit < 8
    with pytest.raises(ValueError):
        AdaptiveLimit(0)


def test_retry_after_pauses_the_endpoint():
    from mindhelper_env.models import make_client

    script = [Reply(status=429, headers={"Retry-After": "0.4"}), Reply(text="ok")]
    with ScriptedServer(script) as srv:
        client = make_client(f"openai:m@{srv.url}", api_key="k", backoff=0.0)
        t0 = time.monotonic()
        assert client.complete([{"role": "user", "content": "hi"}]).text == "ok"
        assert time.monotonic() - t0 >= 0.4
        assert len(srv.requests) == 2
    assert client.limit.stats()["rate_limited"] == 1


def test_a_permanent_429_storm_ends_in_counted_fallbacks(tmp_path):
    with SlotServer(latency=0.0, slots=0) as srv:  # every request refused
        summary = run(tmp_path / "storm", srv, limit=2, concurrency=2,
                      model_opts={"rate_limit_retries": 2, "backoff": 0.001,
                                  "max_backoff": 0.002})
    recs = records(tmp_path / "storm" / "direct-vlm.jsonl")
    assert len(recs) == 2 and summary["played"] == 2
    for r in recs:
        assert r["usage"]["fallbacks"] == r["usage"]["model_calls"] > 0
        assert r["usage"]["errors"] == {"http_429": r["usage"]["model_calls"]}
    assert srv.refused == 3 * sum(r["usage"]["model_calls"] for r in recs)


def test_timeouts_and_5xx_are_retried_then_counted(tmp_path):
    seen = set()

    def fail(body, n):  # every request fails once, then is answered
        key = json.dumps(body, sort_keys=True)
        if key in seen:
            return None
        seen.add(key)
        return 503 if len(seen) % 2 else 500

    with SlotServer(latency=0.0, slots=64, fail=fail) as srv:
        run(tmp_path / "flaky", srv, limit=3, concurrency=3,
            model_opts={"backoff": 0.001, "max_backoff": 0.002})
    recs = records(tmp_path / "flaky" / "direct-vlm.jsonl")
    assert len(recs) == 3
    assert all(r["usage"]["fallbacks"] == 0 for r in recs)  # one retry was enough
    assert srv.failed == len(seen) == sum(r["usage"]["model_calls"] for r in recs)
    with SlotServer(latency=1.0, slots=64) as srv:
        t0 = time.monotonic()
        run(tmp_path / "slow", srv, limit=2, concurrency=2,
            model_opts={"timeout": 0.1, "max_retries": 1, "backoff": 0.001, "max_calls": 2})
        assert time.monotonic() - t0 < 60
    recs = records(tmp_path / "slow" / "direct-vlm.jsonl")
    assert len(recs) == 2
    assert all(r["usage"]["errors"] == {"timeout": 2} for r in recs)
    assert all(r["usage"]["fallbacks"] == 2 for r in recs)


def test_interrupt_cancels_episodes_in_flight_and_resume_finishes_identically(tmp_path):
    with SlotServer(latency=0.02, slots=64) as srv:
        run(tmp_path / "ref", srv, limit=6)
    with SlotServer(latency=0.3, slots=64) as srv:
        seen = []

        def stop(record):
            seen.append(record)
            raise KeyboardInterrupt

        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            evaluate(SUITE, ["direct-vlm"], tmp_path / "cut", limit=6, concurrency=3,
                     progress=False, plots=False, timing=False, on_record=stop,
                     agent_kwargs={"direct-vlm": {"model": f"openai:m@{srv.url}",
                                                  "api_key": "k"}})
        assert time.monotonic() - t0 < 30  # cancelled, not played to the end
        requests_at_stop = srv.requests
        time.sleep(0.5)
        assert srv.requests <= requests_at_stop + 3  # no episode keeps calling the model
    assert len(seen) == 1
    assert len(records(tmp_path / "cut" / "direct-vlm.jsonl")) == 1
    assert not [t for t in threading.enumerate() if t.name.startswith("mindhelper-episode")]
    with SlotServer(latency=0.02, slots=64) as srv:
        summary = run(tmp_path / "cut", srv, limit=6, resume=True, concurrency=3)
    assert summary["played"] == 5
    assert (tmp_path / "cut" / "direct-vlm.jsonl").read_bytes() == \
        (tmp_path / "ref" / "direct-vlm.jsonl").read_bytes()


def test_cancel_scope_stops_model_calls():
    event = threading.Event()
    event.set()
    with cancel_scope(event), pytest.raises(RunCancelled):
        limits.check_cancelled()
    with cancel_scope(event), pytest.raises(RunCancelled):
        AdaptiveLimit(1).acquire()
    limits.check_cancelled()  # outside the scope: nothing


class _Sleepy:
    """An agent that sleeps in every window and notes how many copies act at once."""

    name = "sleepy"
    active = 0
    peak = 0
    lock = threading.Lock()

    def __init__(self, **kwargs):
        from mindhelper_env.agents.base import Usage

        self.usage = Usage()

    def reset(self, *, seed=None):
        pass

    def act(self, obs, info):
        cls = type(self)
        with cls.lock:
            cls.active += 1
            cls.peak = max(cls.peak, cls.active)
        time.sleep(0.002)
        with cls.lock:
            cls.active -= 1
        return "none"


class SleepySafe(_Sleepy):
    name = "sleepy-safe"  # two agents of one run need two names (rows and files)
    lock = threading.Lock()


class SleepyUnsafe(_Sleepy):
    name = "sleepy-unsafe"
    thread_safe = False
    lock = threading.Lock()


def test_agents_that_are_not_thread_safe_play_one_episode_at_a_time(tmp_path):
    agents = [f"{__name__}:SleepySafe", f"{__name__}:SleepyUnsafe"]
    evaluate(SUITE, agents, tmp_path / "seq", limit=4, progress=False, plots=False,
             timing=False)
    SleepySafe.peak = SleepyUnsafe.peak = 0
    evaluate(SUITE, agents, tmp_path / "par", limit=4, concurrency=4, progress=False,
             plots=False, timing=False)
    assert SleepyUnsafe.peak == 1
    assert SleepySafe.peak > 1
    for path in sorted((tmp_path / "seq").glob("*.jsonl")):
        assert path.read_bytes() == (tmp_path / "par" / path.name).read_bytes()


def test_bad_concurrency_is_refused_before_any_file(tmp_path):
    for bad in (0, -1, 1.5, True, 10**6):
        with pytest.raises(ValueError, match="concurrency"):
            evaluate(SUITE, ["silent"], tmp_path / "x", concurrency=bad, progress=False)
    with pytest.raises(ValueError, match="concurrency"):
        evaluate(SUITE, ["silent"], tmp_path / "x", concurrency=2, backend="ray",
                 progress=False)
    assert not (tmp_path / "x").exists()


def test_interrupt_with_worker_processes_kills_them_and_resume_finishes(tmp_path):
    import multiprocessing

    with SlotServer(latency=0.02, slots=64) as srv:
        run(tmp_path / "ref", srv, limit=6)
    with SlotServer(latency=0.2, slots=64) as srv:
        def stop(record):
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            evaluate(SUITE, ["direct-vlm"], tmp_path / "cut", limit=6, concurrency=2,
                     workers=2, force_workers=True, progress=False, plots=False,
                     timing=False, on_record=stop,
                     agent_kwargs={"direct-vlm": {"model": f"openai:m@{srv.url}",
                                                  "api_key": "k"}})
        assert not multiprocessing.active_children()  # no worker left behind
        requests_at_stop = srv.requests
        time.sleep(0.5)
        assert srv.requests == requests_at_stop
    assert len(records(tmp_path / "cut" / "direct-vlm.jsonl")) == 1
    with SlotServer(latency=0.02, slots=64) as srv:
        run(tmp_path / "cut", srv, limit=6, resume=True, concurrency=2, workers=2,
            force_workers=True)
    assert (tmp_path / "cut" / "direct-vlm.jsonl").read_bytes() == \
        (tmp_path / "ref" / "direct-vlm.jsonl").read_bytes()


def test_a_cassette_recorded_with_episodes_in_flight_replays_sequentially(tmp_path):
    cassette = tmp_path / "cassette.jsonl"
    with SlotServer(latency=0.02, slots=64) as srv:
        evaluate(SUITE, ["direct-vlm"], tmp_path / "rec", limit=4, concurrency=4,
                 progress=False, plots=False, timing=False,
                 agent_kwargs={"direct-vlm": {
                     "model": f"record:{cassette}=openai:m@{srv.url}", "api_key": "k"}})
        assert srv.peak > 1
    evaluate(SUITE, ["direct-vlm"], tmp_path / "rep", limit=4, progress=False, plots=False,
             timing=False, agent_kwargs={"direct-vlm": {"model": f"replay:{cassette}"}})
    recs = records(tmp_path / "rep" / "direct-vlm.jsonl")
    assert all(r["usage"]["fallbacks"] == 0 for r in recs)  # no replay miss
    assert (tmp_path / "rec" / "direct-vlm.jsonl").read_bytes() == \
        (tmp_path / "rep" / "direct-vlm.jsonl").read_bytes()
