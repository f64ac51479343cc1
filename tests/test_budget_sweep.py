"""The budget holds like a bank balance: over the stdlib OpenAI-compatible server, for
workers, episodes in flight and budgets from $0.01 to $1, what the server bills never
passes ``max_cost``, and the spend is recorded in ``summary.json`` after a stop as after a
completed run."""

from __future__ import annotations

import json

import pytest
from fake_openai_server import need
from slot_server import SlotServer

from mindhelper_env.evaluation import evaluate
from mindhelper_env.evaluation.budget import BudgetExhausted
from mindhelper_env.models import limits

need("openai")

SUITE = "vh-dev-v5"
#: ``--price fake=1,1``: a direct-vlm episode costs about $0.015 against this server
PRICE = (1.0, 1.0)

#: (workers, concurrency, max_cost): budgets below one episode, a few episodes, the lot
SWEEP = [(1, 1, 0.01), (2, 8, 0.01), (1, 4, 0.03), (2, 2, 0.05), (2, 8, 0.2), (1, 8, 1.0)]


@pytest.fixture(autouse=True)
def _fresh_limits():
    limits.reset_shared_limits()
    yield
    limits.reset_shared_limits()


def billed_usd(srv):
    return (PRICE[0] * srv.billed_prompt + PRICE[1] * srv.billed_completion) / 1e6


def test_the_spend_never_passes_the_budget(tmp_path):
    outcomes = []
    for workers, concurrency, budget in SWEEP:
        out = tmp_path / f"w{workers}-c{concurrency}-{budget}"
        with SlotServer(latency=0.0, slots=64) as srv:
            try:
                summary = evaluate(
                    SUITE, ["direct-vlm"], out, limit=6, progress=False, plots=False,
                    timing=False, workers=workers, force_workers=True,
                    concurrency=concurrency, max_cost=budget, allow_partial=True,
                    prices={"openai:fake": PRICE},
                    agent_kwargs={"direct-vlm": {"model": f"openai:fake@{srv.url}",
                                                 "api_key": "k"}})
                stopped = False
            except BudgetExhausted as stop:
                summary, stopped = stop.summary, True
            billed = billed_usd(srv)
        combo = (workers, concurrency, budget)
        # what the server billed: never past the budget, and all of it on the ledger
        assert billed <= budget, combo
        ledger = summary["spend"]["ledger"]
        assert ledger["spent_usd"] == pytest.approx(billed, abs=1e-6), combo
        assert ledger["reserved_usd"] == 0.0, combo  # every reservation settled
        # summary.json holds the spend, after a stop as after a completed run
        written = json.loads((out / "summary.json").read_text())
        assert written["spend"]["ledger"] == ledger, combo
        recs = [json.loads(line) for line in
                (out / "direct-vlm.jsonl").read_text().splitlines()]
        paid_for_records = sum(r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"]
                               for r in recs) / 1e6
        assert written["spend"]["run_usd"] == pytest.approx(paid_for_records, abs=1e-6)
        assert paid_for_records <= ledger["spent_usd"] + 1e-9, combo
        if stopped:
            assert written["partial"]["episodes_written"] == len(recs) < 6, combo
            assert written["partial"]["episodes_cut"] >= 1 and ledger["closed"] == "max_cost"
        else:
            assert "partial" not in written and len(recs) == 6, combo
            assert ledger["spent_usd"] == pytest.approx(paid_for_records, abs=1e-6), combo
        outcomes.append(stopped)
    # the sweep saw both ends: runs cut by their budget and runs that fit in it
    assert any(outcomes) and not all(outcomes)
