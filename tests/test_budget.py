"""The budget: prices, spend in the summary, the dry-pass estimate and the up-front refusal,
admission control on one ledger per run (the spend never passes the budget, whatever the
workers and episodes in flight), a stop that writes the partial summary and that ``resume``
continues to the records of an uninterrupted run."""

from __future__ import annotations

import json
import math

import pytest
from fake_openai_server import need
from slot_server import SlotServer

from mindhelper_env.cli.main import main
from mindhelper_env.evaluation import evaluate
from mindhelper_env.evaluation.budget import (
    BudgetExhausted,
    BudgetTooSmall,
    Meter,
    Price,
    check_prices,
    parse_price,
    price_of,
)
from mindhelper_env.models import limits

need("openai")

SUITE = "vh-dev-v2"
#: dollars per million tokens: high, so a few episodes cost dollars
PRICE = (1000.0, 4000.0)


@pytest.fixture(autouse=True)
def _fresh_limits():
    limits.reset_shared_limits()


def run(out, srv, *, limit=6, **options):
    spec = f"openai:m@{srv.url}"
    return evaluate(SUITE, ["direct-vlm", "silent"], out, limit=limit, progress=False,
                    plots=False, timing=False,
                    agent_kwargs={"direct-vlm": {"model": spec, "api_key": "k"}},
                    prices={"openai:m": PRICE}, **options)


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def cost(rec):
    u = rec["usage"]
    return (PRICE[0] * u["prompt_tokens"] + PRICE[1] * u["completion_tokens"]) / 1e6


def first_hold_usd(srv, tmp_path, limit=12):
    """What the first episode of direct-vlm on SUITE at PRICE is held at before the
    server's first answer (the dry pass's most calls at the hard bound of its largest
    request)."""
    from mindhelper_env.evaluation.budget import estimate_run
    from mindhelper_env.evaluation.settings import EvalSettings

    settings = EvalSettings(SUITE, ["direct-vlm"], tmp_path / "unused",
                            agent_kwargs={"direct-vlm": {"model": f"openai:m@{srv.url}",
                                                         "api_key": "k"}})
    est = estimate_run(settings, {"direct-vlm": limit}, {"direct-vlm": Price(*PRICE)}, 2)
    row = est["agents"]["direct-vlm"]
    assert row["first_episode_hold_usd"] > row["max_episode_usd"]
    return row["first_episode_hold_usd"]


def test_spend_in_the_summary_is_the_records_tokens_at_the_price(tmp_path):
    with SlotServer(latency=0.0, slots=64) as srv:
        summary = run(tmp_path / "full", srv, concurrency=2)
    recs = records(tmp_path / "full" / "direct-vlm.jsonl")
    spend = summary["spend"]
    assert spend["usd"] == pytest.approx(sum(cost(r) for r in recs), abs=1e-5)
    row = spend["by_agent"]["direct-vlm"]
    assert row["prompt_tokens"] == sum(r["usage"]["prompt_tokens"] for r in recs) > 0
    assert spend["by_agent"]["silent"]["usd"] == 0.0
    assert spend["prices"]["direct-vlm"] == {"input_per_million": 1000.0,
                                             "output_per_million": 4000.0}
    assert spend["stopped"] is None


@pytest.mark.parametrize("concurrency", [1, 3])
def test_budget_stop_then_resume_gives_the_uninterrupted_records(tmp_path, concurrency):
    with SlotServer(latency=0.0, slots=64) as srv:
        run(tmp_path / "full", srv, limit=12)
        full = records(tmp_path / "full" / "direct-vlm.jsonl")
        # room for the first episode at its worst case (every window asked, every answer
        # at max_tokens, the prompt at its hard bound), then for episodes at the worst
        # case learned from the answers while what is left pays for them
        hold = first_hold_usd(srv, tmp_path)
        budget = round(1.05 * hold, 2)
        estimates = []
        with pytest.raises(BudgetExhausted, match="stopped at the budget") as info:
            run(tmp_path / "cut", srv, concurrency=concurrency, limit=12, max_cost=budget,
                allow_partial=True, on_estimate=estimates.append)
        assert "resume=True" not in str(info.value)
        spend = info.value.spend
        assert spend["stopped"] == "max_cost"
        kept = records(tmp_path / "cut" / "direct-vlm.jsonl")
        assert 1 <= len(kept) < len(full)
        # the money paid never passes the budget; every episode started was paid for in
        # full and written (none cut), the first the budget could not cover was not started
        assert spend["ledger"]["spent_usd"] <= budget
        assert sum(cost(r) for r in kept) == pytest.approx(spend["ledger"]["spent_usd"],
                                                           abs=1e-5)
        assert spend["spent_usd"] == spend["ledger"]["spent_usd"]
        assert spend["episodes_cut"] == 0 and spend["unwritten_usd"] == pytest.approx(0, abs=1e-5)
        assert spend["episodes_not_started"] >= 1
        assert spend["ledger"]["episodes_started"] == len(kept)
        assert spend["ledger"]["closed"] == "max_cost"
        # what is left could not pay for one more episode at its worst
        assert budget - spend["ledger"]["spent_usd"] < hold
        # the stop wrote the summary of what was played, marked partial, with the spend
        written = json.loads((tmp_path / "cut" / "summary.json").read_text())
        assert written["partial"]["reason"] == "max_cost"
        silent_kept = len(records(tmp_path / "cut" / "silent.jsonl"))
        assert written["partial"]["episodes_written"] == len(kept) + silent_kept
        assert written["spend"]["ledger"]["spent_usd"] == spend["ledger"]["spent_usd"]
        assert written["episodes"]["direct-vlm"] == len(kept)
        # the estimate is an upper bound of what an episode costs
        est = estimates[0]["agents"]["direct-vlm"]
        assert est["calls_per_episode"] == 24
        assert est["usd"] >= sum(cost(r) for r in full[:2]) / 2 * est["episodes"]
        summary = run(tmp_path / "cut", srv, resume=True, concurrency=concurrency, limit=12)
    assert "partial" not in summary
    assert summary["played"] == 2 * 12 - len(kept) - silent_kept
    for name in ("direct-vlm.jsonl", "silent.jsonl"):
        assert (tmp_path / "cut" / name).read_bytes() == (tmp_path / "full" / name).read_bytes()
    assert summary["spend"]["usd"] == pytest.approx(sum(cost(r) for r in full), abs=1e-5)


def test_max_tokens_stops_too(tmp_path):
    with SlotServer(latency=0.0, slots=64) as srv:
        with pytest.raises(BudgetExhausted) as info:
            run(tmp_path / "cut", srv, max_tokens=20_000, estimate_episodes=0)
    assert info.value.spend["stopped"] == "max_tokens"
    assert 0 < info.value.spend["ledger"]["spent_tokens"] <= 20_000
    assert info.value.spend["run_tokens"] <= 20_000


def test_one_episode_over_the_budget_is_refused_before_any_file(tmp_path, capsys):
    out = tmp_path / "o"
    with SlotServer(latency=0.0, slots=64) as srv:
        with pytest.raises(BudgetTooSmall, match="--allow-partial"):
            run(out, srv, max_cost=0.5)
        assert not out.exists() and srv.requests == 0
        code = main(["evaluate", "--suite", SUITE, "--agents", "direct-vlm", "--limit", "2",
                     "--model", f"openai:m@{srv.url}", "--price", "openai:m=1000,4000",
                     "--max-cost", "0.5", "--out", str(out), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "over the whole budget" in err and "--allow-partial" in err
        assert not out.exists() and srv.requests == 0


def test_max_cost_needs_a_price_before_any_file(tmp_path):
    with pytest.raises(ValueError, match="price"):
        evaluate(SUITE, ["direct-vlm"], tmp_path / "x", max_cost=1.0, progress=False,
                 agent_kwargs={"direct-vlm": {"model": "openai:m@http://127.0.0.1:9/v1"}})
    for bad in (0, -1.0, float("nan"), float("inf"), True, "1"):
        with pytest.raises(ValueError, match="max_cost"):
            evaluate(SUITE, ["silent"], tmp_path / "x", max_cost=bad, progress=False)
    with pytest.raises(ValueError, match="max_tokens"):
        evaluate(SUITE, ["silent"], tmp_path / "x", max_tokens=0, progress=False)
    with pytest.raises(ValueError, match="price"):
        evaluate(SUITE, ["silent"], tmp_path / "x", prices={"m": (1.0,)}, progress=False)
    assert not (tmp_path / "x").exists()


def test_prices_and_their_lookup():
    assert parse_price("0.15, 0.6") == Price(0.15, 0.6)
    assert parse_price((1, 2)).cost(1_000_000, 500_000) == pytest.approx(2.0)
    for bad in ("1", "a,b", (-1, 1), (1, float("inf")), None):
        with pytest.raises(ValueError):
            parse_price(bad)
    table = check_prices({"gpt-4o-mini": (0.15, 0.6), "openai:x@http://h/v1": (1, 1)})
    assert price_of("openai:gpt-4o-mini@http://h:1/v1", table) == Price(0.15, 0.6)
    assert price_of("record:c.jsonl=openai:gpt-4o-mini", table) == Price(0.15, 0.6)
    assert price_of("inspect:openai/gpt-4o-mini", table) == Price(0.15, 0.6)
    assert price_of("openai:x@http://h/v1", table) == Price(1, 1)
    assert price_of("openai:other", table) is None
    assert price_of("replay:c.jsonl", table) == Price(0, 0)
    assert price_of(None, table) == Price(0, 0)


def test_meter_counts_spend_and_shows_the_ledger():
    meter = Meter({"a": Price(1e6, 0), "b": Price(1e6, 0)}, max_cost=10.0)
    meter.add({"agent": "a", "usage": {"prompt_tokens": 3, "model_calls": 1}})  # $3
    meter.add({"agent": "b", "usage": {"prompt_tokens": 0, "model_calls": 0}})  # free
    meter.add({"agent": "a", "usage": {"prompt_tokens": 7, "model_calls": 1}}, played=False)
    assert meter.run_cost == 3.0 and meter.to_dict()["by_agent"]["a"]["usd"] == 10.0
    assert meter.progress_text() == "$3.0000 of $10"
    meter.ledger = {"spent_usd": 4.5, "closed": None}  # what was paid, cut episodes included
    assert meter.progress_text() == "$4.5000 of $10"
    assert meter.to_dict()["ledger"]["spent_usd"] == 4.5


def test_cli_budget_errors_are_one_line_exit_2(tmp_path, capsys):
    out = tmp_path / "o"
    code = main(["evaluate", "--suite", SUITE, "--agents", "direct-vlm", "--out", str(out),
                 "--model", "openai:m@http://127.0.0.1:9/v1", "--max-cost", "1"])
    assert code == 2 and not out.exists()
    assert "--price openai:m@http://127.0.0.1:9/v1=INPUT,OUTPUT" in capsys.readouterr().err
    for args in (["--max-cost", "-1"], ["--price", "m=1"], ["--price", "=1,2"],
                 ["--concurrency", "0"], ["--max-tokens", "0"]):
        code = main(["evaluate", "--suite", SUITE, "--agents", "silent", "--out", str(out),
                     *args])
        err = capsys.readouterr().err
        assert code == 2 and args[0] in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_cli_budget_stop_exits_4_prints_the_partial_table_and_resume_finishes(tmp_path,
                                                                             capsys):
    with SlotServer(latency=0.0, slots=64) as srv:
        budget = f"{1.05 * first_hold_usd(srv, tmp_path):.0f}"
        base = ["evaluate", "--suite", SUITE, "--agents", "direct-vlm", "--limit", "12",
                "--model", f"openai:m@{srv.url}", "--no-progress", "--no-plots",
                "--no-timing", "--price", "openai:m=1000,4000", "--format", "markdown"]
        code = main([*base, "--out", str(tmp_path / "o"), "--max-cost", budget,
                     "--concurrency", "2"])
        captured = capsys.readouterr()
        assert code == 4, captured.err
        assert "estimate for direct-vlm" in captured.err
        assert "PARTIAL" in captured.out and "| direct-vlm |" in captured.out
        stop = [ln for ln in captured.err.splitlines() if "stopped at the budget" in ln]
        assert len(stop) == 1 and "resume=True" not in stop[0]
        summary = json.loads((tmp_path / "o" / "summary.json").read_text())
        paid = summary["spend"]["spent_usd"]
        # the line, the summary and the ledger say one spend
        assert f"spent ${paid:.4f} of ${budget} (" in stop[0] and "not started" in stop[0]
        assert stop[0].endswith(f"--max-cost {budget} --concurrency 2 --resume")
        assert summary["partial"]
        assert 0 < paid == summary["spend"]["ledger"]["spent_usd"] <= float(budget)
        assert main([*base, "--out", str(tmp_path / "o"), "--resume"]) == 0
    assert len(records(tmp_path / "o" / "direct-vlm.jsonl")) == 12


def test_the_dry_spec_sends_nothing_and_counts_the_prompt():
    from mindhelper_env.models import make_client, parse_spec

    assert parse_spec("dry:openai:m@http://h:1/v1") == ("dry", "openai:m@http://h:1/v1", {})
    for bad in ("dry:replay:c.jsonl", "dry:record:c.jsonl=openai:m", "dry:nokind"):
        with pytest.raises(ValueError):
            parse_spec(bad)
    client = make_client("dry:openai:m@http://127.0.0.1:9/v1", api_key="k", concurrency=4,
                         context_length=4096)
    answer = client.complete([{"role": "user", "content": "x" * 400}], max_tokens=50)
    assert answer.text == "" and answer.completion_tokens == 50
    assert answer.prompt_tokens == 101 and answer.tokens_estimated  # ceil(404 / 4)
    assert client.context_length == 4096 and client.model_id.startswith("dry:")


def test_the_progress_bar_shows_a_spend_only_for_runs_with_a_model(tmp_path, monkeypatch):
    import mindhelper_env.evaluation.run as run_module

    seen = []

    class Bar:
        def __init__(self, *args, spend=None, **kwargs):
            seen.append(spend)

        def advance(self, *args, **kwargs):
            pass

        def close(self):
            pass

    monkeypatch.setattr(run_module, "Progress", Bar)
    evaluate(SUITE, ["silent", "oracle"], tmp_path / "a", limit=2, plots=False,
             prices={"openai:m": PRICE})
    assert seen == [None]  # no model: no "$0.0000"
    with SlotServer(latency=0.0, slots=64) as srv:
        evaluate(SUITE, ["direct-vlm"], tmp_path / "b", limit=1, plots=False,
                 agent_kwargs={"direct-vlm": {"model": f"openai:m@{srv.url}", "api_key": "k"}},
                 prices={"openai:m": PRICE})
    assert seen[1] == "$0.0000"  # the spend before the first episode


def test_retried_429s_are_counted_at_the_end_of_the_run(tmp_path, capsys):
    with SlotServer(latency=0.02, slots=1) as srv:
        code = main(["evaluate", "--suite", SUITE, "--agents", "direct-vlm", "--limit", "3",
                     "--model", f"openai:m@{srv.url}", "--agent",
                     "direct-vlm:backoff=0.01", "--agent", "direct-vlm:max_backoff=0.05",
                     "--concurrency", "3", "--no-progress", "--no-plots",
                     "--out", str(tmp_path / "o")])
        assert code == 0 and srv.refused > 0
    out = capsys.readouterr().out
    assert f"{srv.refused:,} rate-limited (429) answers retried" in out
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["spend"]["rate_limited_retries"] == srv.refused


def test_the_ledger_reserves_waits_refuses_and_settles(tmp_path):
    import subprocess
    import sys

    from mindhelper_env.models.ledger import (
        PICO,
        BudgetRefused,
        Ledger,
        LedgerSpec,
        LedgerState,
    )

    ledger = Ledger.create(LedgerSpec(path=str(tmp_path / "l.json")), max_cost=1.0,
                           max_tokens=None)
    first = ledger.reserve(6 * PICO // 10, 10)
    state = LedgerState(**json.loads((tmp_path / "l.json").read_text()))
    # fits once the request in flight settles: wait; never fits: refused
    assert state.try_reserve("x", 5 * PICO // 10, 1, 1) == "wait"
    ledger.settle(first, 2 * PICO // 10, 5)  # the answer cost less than its worst case
    ledger.reserve(7 * PICO // 10, 10)  # 0.2 spent + 0.7 held <= 1
    with pytest.raises(BudgetRefused):
        ledger.reserve(9 * PICO // 10, 10)  # 0.2 + 0.9 > 1 even once all settles
    with pytest.raises(BudgetRefused):
        ledger.reserve(1, 1)  # closed: every later request is refused
    summary = ledger.summary()
    assert summary["spent_usd"] == 0.2 and summary["reserved_usd"] == 0.7
    assert summary["requests_refused"] == 2 and summary["closed"] == "max_cost"
    assert summary["unsent_usd"] == pytest.approx(0.9, abs=1e-9)
    # a reservation of a process that died counts as spent
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    state = LedgerState(max_pico=PICO, held={"d": [3, 4, int(dead)]})
    state.drop_dead(lambda pid: pid != int(dead))
    assert state.held == {} and (state.spent_pico, state.spent_tokens) == (3, 4)


def test_the_prompt_bound_counts_bytes_messages_and_images():
    import numpy as np

    from mindhelper_env.models.ledger import image_tokens_bound, prompt_tokens_bound

    frame = np.zeros((256, 256, 3), dtype=np.uint8)
    assert image_tokens_bound(256, 256) == 258  # Gemini's tile is the largest here
    # OpenAI bills 85 + 170 * 4 (768 x 768, four tiles), Anthropic 1024 * 1024 / 750
    assert image_tokens_bound(1024, 1024) == 1399
    # "héllo" is 6 bytes, "user" 4, and 8 a message
    assert prompt_tokens_bound([{"role": "user", "content": "héllo"}]) == 18
    assert prompt_tokens_bound([{"role": "user", "content": ["héllo", frame]}]) == 18 + 258


def test_the_reservation_counts_the_clients_own_image_rule():
    """A client whose images cost more than every common API's bound (``image_tokens=fixed:N``,
    e.g. gpt-4o-mini's large counts) reserves by its own rule; a cheaper rule never lowers
    the bound."""
    import numpy as np

    from mindhelper_env.models.ledger import image_tokens_bound, prompt_tokens_bound

    frame = np.zeros((256, 256, 3), np.uint8)
    msgs = [{"role": "user", "content": ["look", frame]}]
    assert image_tokens_bound(256, 256, "fixed:5000") == 5000
    assert image_tokens_bound(256, 256, "openai-low") == image_tokens_bound(256, 256)
    assert prompt_tokens_bound(msgs, "fixed:5000") - prompt_tokens_bound(msgs) == 5000 - 258


# --------------------------------------------------------------------------------------
# Episodes hold their worst case; the worst case is learned from the bills
# --------------------------------------------------------------------------------------


def _shape(text=4000, images=0, max_tokens=100):
    """A request of ``text`` ASCII characters in one user message and ``images`` 256 px
    frames (255 tokens each by the default rule)."""
    import numpy as np

    from mindhelper_env.models.worst_case import request_shape

    frame = np.zeros((256, 256, 3), np.uint8)
    return request_shape([{"role": "user", "content": ["x" * text] + [frame] * images}],
                         max_tokens)


def test_the_worst_case_of_a_request_is_learned_from_what_the_server_billed():
    from mindhelper_env.models.worst_case import MARGIN, fresh_rates, learn, worst_tokens

    two = _shape(text=4000, images=2)
    assert (two.text_estimate, two.image_rule, two.images) == (1005, 510, 2)
    rates = fresh_rates()
    # before any answer: the hard bound (UTF-8 bytes, every API's images) and max_tokens
    assert worst_tokens(two, rates) == (two.text_bound + two.image_bound, 100)
    # a server that bills each image at three times the rule, and text as estimated
    billed = 1005 + 2 * 765
    assert billed > two.text_estimate + two.image_rule  # more than the package estimates
    learn(rates, two, billed, 40)
    assert rates["image"] == pytest.approx(765)
    assert worst_tokens(two, rates)[0] == math.ceil(billed * (1 + MARGIN))
    # learned per image: a request with more images is reserved at the learned rate
    five = _shape(text=4000, images=5)
    assert worst_tokens(five, rates)[0] >= 1005 + 5 * 765
    # a text request's ratio is learned apart from images, and never lowers the floor
    text = _shape(text=8000)
    learn(rates, text, 1000, 10)  # cheaper than estimated
    assert worst_tokens(text, rates)[0] == math.ceil(text.text_estimate * (1 + MARGIN))
    learn(rates, text, 3 * text.text_estimate, 10)  # three times dearer
    assert worst_tokens(text, rates)[0] >= 3 * text.text_estimate
    # completion past max_tokens (reasoning tokens, say) is learned too
    learn(rates, text, 10, 250)
    assert worst_tokens(text, rates)[1] == 250


def _state(max_usd, agents=None):
    from mindhelper_env.models.ledger import PICO, LedgerState

    state = LedgerState(max_pico=int(max_usd * PICO))
    state.seed(agents or {})
    return state


def test_an_episode_starts_only_when_the_budget_covers_its_worst_case():
    from mindhelper_env.models.ledger import PICO
    from mindhelper_env.models.worst_case import episode_worst

    shape = _shape(text=4000)
    price = (1.0, 1.0)  # a dollar a million tokens
    worst, _ = episode_worst(10, shape, None, price)  # pico
    state = _state(2.5 * worst / PICO, {"a": {"calls": 10, "shape": shape.to_list()}})
    assert state.start_episode("e1", "a", price, 1) == "ok"
    assert state.start_episode("e2", "a", price, 1) == "ok"
    assert state.start_episode("e3", "a", price, 1) == "wait"  # fits once one ends
    # a request draws from its episode's hold: nothing more is held
    assert state.request("e1", "r1", shape.to_list(), price, 1) == "ok"
    assert state.reserved()[0] == 2 * worst
    # its answer is charged, the ledger learns the bill, and the hold shrinks to the
    # rest of the episode at the learned rate (text billed at half the estimate: floor 1)
    state.settle_request("e1", "r1", shape.to_list(), price, shape.text_estimate // 2, 10)
    assert state.spent_pico == (shape.text_estimate // 2 + 10) * 10**6
    assert state.held["e1"][0] == episode_worst(9, shape, state.rates, price)[0]
    state.end_episode("e1")
    assert "e1" not in state.held and state.agents["a"]["calls"] == 10
    assert state.start_episode("e3", "a", price, 1) == "ok"
    state.end_episode("e2")
    state.end_episode("e3")
    # with nothing in flight, the rest cannot pay for one episode at the learned worst
    # case: not started, and the ledger closes
    learned = episode_worst(10, shape, state.rates, price)[0]
    assert learned < worst
    state.spent_pico = state.max_pico - learned + 1
    assert state.start_episode("e4", "a", price, 1) == "refused"
    assert state.closed == "max_cost" and state.episodes_refused == 1
    assert state.start_episode("e5", "a", price, 1) == "refused"  # closed: none after it
    assert state.summary()["episodes_not_started"] == 2


def test_an_episode_longer_than_its_hold_takes_from_the_free_budget_or_is_cut():
    from mindhelper_env.models.ledger import PICO
    from mindhelper_env.models.worst_case import episode_worst, worst_tokens

    shape = _shape(text=4000)
    price = (1.0, 1.0)
    one, _ = episode_worst(1, shape, None, price)
    state = _state(3.5 * one / PICO, {"a": {"calls": 2, "shape": shape.to_list()}})
    assert state.start_episode("e1", "a", price, 1) == "ok"  # holds 2 calls
    for i in range(2):
        assert state.request("e1", f"r{i}", shape.to_list(), price, 1) == "ok"
        state.settle_request("e1", f"r{i}", shape.to_list(), price, shape.text_estimate, 100)
    # a third call, past what any episode made: from what nobody holds
    assert state.request("e1", "r2", shape.to_list(), price, 1) == "ok"
    state.settle_request("e1", "r2", shape.to_list(), price, shape.text_estimate, 100)
    assert state.agents["a"]["calls"] == 3  # learned: episodes now hold three calls
    # nothing left for a fourth: refused (the episode is cut), the ledger stays open
    w_prompt, w_completion = worst_tokens(shape, state.rates)
    state.spent_pico = state.max_pico - (w_prompt + w_completion) * 10**6 // 2
    assert state.request("e1", "r3", shape.to_list(), price, 1) == "refused"
    assert state.refused == 1 and state.closed is None
    state.end_episode("e1")
    assert state.held == {} and state.spent_pico == state.max_pico - (
        w_prompt + w_completion) * 10**6 // 2


def test_an_agent_without_a_known_episode_plays_one_first_alone():
    shape = _shape(text=400)
    price = (1.0, 1.0)
    state = _state(1.0)
    assert state.start_episode("p", "a", price, 1) == "ok"  # nothing known: nothing held
    assert state.held["p"][0] == 0 and state.episodes["p"]["probe"]
    assert state.start_episode("q", "a", price, 1) == "wait"  # until the first one ends
    assert state.request("p", "r", shape.to_list(), price, 1) == "ok"  # from the free budget
    state.settle_request("p", "r", shape.to_list(), price, 100, 10)
    state.end_episode("p")
    assert state.start_episode("q", "a", price, 1) == "ok"
    assert state.held["q"][0] > 0 and not state.episodes["q"]["probe"]


def test_a_dead_process_holds_count_as_spent():
    shape = _shape(text=400)
    state = _state(1.0, {"a": {"calls": 3, "shape": shape.to_list()}})
    assert state.start_episode("e", "a", (1.0, 1.0), 4242) == "ok"
    hold = state.held["e"][0]
    state.drop_dead(lambda pid: pid != 4242)
    assert state.spent_pico == hold and state.held == {} and state.episodes == {}
    assert state.request("e", "r", shape.to_list(), (1.0, 1.0), 4242) == "refused"


def test_no_plot_is_written_of_agents_without_an_episode(tmp_path):
    """A run stopped by its budget before any episode was written has metrics of nothing:
    write_plots writes no file (and calls no matplotlib) rather than empty charts."""
    from mindhelper_env.metrics import as_percentages, compute_table
    from mindhelper_env.plots import write_plots

    table = {a: as_percentages(m) for a, m in compute_table({"direct-vlm": []}, {}).items()}
    assert table["direct-vlm"]["episodes"] == 0
    assert write_plots(table, tmp_path / "p", suite=SUITE) == []
    assert not (tmp_path / "p").exists()


def test_an_episode_whose_worst_case_is_no_longer_covered_is_cut_before_it_spends_more():
    """The first answer shows the server bills images at ten times the rule: the episode's
    hold grows from the free budget when it can, and when it cannot the episode is cut at
    its next request instead of spending the budget on an episode that cannot finish."""
    from mindhelper_env.models.ledger import PICO
    from mindhelper_env.models.worst_case import episode_worst, worst_tokens

    shape = _shape(text=400, images=2)
    price = (1.0, 1.0)
    hard, _ = episode_worst(3, shape, None, price)
    billed = shape.text_estimate + 2 * 2550
    for budget, doomed in ((1.2 * hard / PICO, True), (100 * hard / PICO, False)):
        state = _state(budget, {"a": {"calls": 3, "shape": shape.to_list()}})
        assert state.start_episode("e", "a", price, 1) == "ok"
        assert state.request("e", "r0", shape.to_list(), price, 1) == "ok"
        state.settle_request("e", "r0", shape.to_list(), price, billed, 10)
        rest = 2 * sum(worst_tokens(shape, state.rates)) * 10**6
        assert rest > hard  # the learned worst case of the rest is over the first hold
        if doomed:
            assert state.request("e", "r1", shape.to_list(), price, 1) == "refused"
            assert state.episodes["e"]["doomed"] and state.closed is None
        else:
            assert state.held["e"][0] == rest  # held more, from the free budget
            assert state.request("e", "r1", shape.to_list(), price, 1) == "ok"
