"""Budgets buy whole episodes: over the stdlib OpenAI-compatible server billing the vision
track's images at three times the package's image rule (a server whose bills are higher than
the package estimates), for budgets from $0.05 to $1, workers 1-2 and episodes in flight 1-8,
what the server bills never passes ``max_cost``, at least half of it pays for episodes that
were written, and ``summary.json``, the ledger and the stop line say one spend.
``benchmarks/bench_budget.py`` runs the larger grid."""

from __future__ import annotations

import json
import warnings

import pytest
from fake_openai_server import need
from slot_server import SlotServer

from mindhelper_env.evaluation import evaluate
from mindhelper_env.evaluation.budget import BudgetExhausted
from mindhelper_env.models import limits
from mindhelper_env.models.images import image_tokens

need("openai")
pytest.importorskip("PIL")  # the vision track sends its frames as PNG

SUITE = "vh-dev-v5"
LIMIT = 5
#: The frames' size: fixed, so that the budgets below hold a few episodes whatever the
#: suite's lossless default (512 px on vh-dev-v5, a sampled-down 256 here: direct-vlm
#: reads no marks, and the sweep is about money)
FRAME = 256
#: ``--price fake=1,1``: a dollar a million tokens
PRICE = (1.0, 1.0)

#: (workers, concurrency, max_cost): below one episode's worst case, a few episodes, the lot
SWEEP = [(1, 1, 0.05), (2, 8, 0.3), (1, 2, 1.0)]


def bill_images(height: int, width: int) -> int:
    """Three times the tokens the package's image rule counts."""
    return 3 * image_tokens(height, width, "openai")


@pytest.fixture(autouse=True)
def _fresh_limits():
    limits.reset_shared_limits()
    yield
    limits.reset_shared_limits()


def billed_usd(srv):
    return (PRICE[0] * srv.billed_prompt + PRICE[1] * srv.billed_completion) / 1e6


def run_one(out, workers, concurrency, budget):
    """One budgeted run of direct-vlm on the vision track; ``(summary, stop line or None,
    billed US dollars, the warnings raised)``."""
    with SlotServer(latency=0.0, slots=64, image_tokens=bill_images) as srv, \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            summary = evaluate(
                SUITE, ["direct-vlm"], out, limit=LIMIT, progress=False, plots=True,
                timing=False, workers=workers, force_workers=True, concurrency=concurrency,
                max_cost=budget, allow_partial=True, env_kwargs={"obs_mode": "rgb", "frame_size": FRAME},
                prices={"openai:fake": PRICE},
                agent_kwargs={"direct-vlm": {"model": f"openai:fake@{srv.url}",
                                             "api_key": "k"}})
            stop = None
        except BudgetExhausted as exc:
            summary, stop = exc.summary, str(exc)
        billed = billed_usd(srv)
    return summary, stop, billed, [str(w.message) for w in caught]


def test_budgets_buy_whole_episodes_against_a_server_that_bills_more(tmp_path):
    outcomes = []
    for workers, concurrency, budget in SWEEP:
        combo = (workers, concurrency, budget)
        out = tmp_path / f"w{workers}-c{concurrency}-{budget}"
        summary, stop, billed, caught = run_one(out, workers, concurrency, budget)
        written = json.loads((out / "summary.json").read_text())
        spend, ledger = written["spend"], written["spend"]["ledger"]
        recs = [json.loads(line) for line in
                (out / "direct-vlm.jsonl").read_text().splitlines()]
        on_records = sum(r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"]
                         for r in recs) / 1e6
        # never past the budget, and all of it on the ledger, settled
        assert billed <= budget, combo
        assert ledger["spent_usd"] == pytest.approx(billed, abs=1e-6), combo
        assert ledger["reserved_usd"] == 0.0, combo
        # the server billed more than the package estimates, and the ledger learned it
        if ledger["requests_sent"]:
            assert ledger["learned"]["image"] > 1.5 * image_tokens(256, 256, "openai"), combo
        # at least half of the bill paid for episodes that were written
        assert on_records >= 0.5 * billed, (combo, on_records, billed)
        # one spend: summary.json, the ledger, the records, the stop line
        assert spend["spent_usd"] == ledger["spent_usd"], combo
        assert spend["written_usd"] == pytest.approx(on_records, abs=1e-6), combo
        assert spend["unwritten_usd"] == pytest.approx(billed - on_records, abs=1e-5), combo
        assert summary["spend"] == spend, combo
        if stop is not None:
            assert f"spent ${ledger['spent_usd']:.4f} of ${budget:g}" in stop, combo
            part = written["partial"]
            assert part["episodes_written"] == len(recs) < LIMIT, combo
            assert part["episodes_cut"] + part["episodes_not_started"] >= 1, combo
            # the episodes cut or not started are listed, and none of them was recorded
            missing = [t["index"] for t in part["cut"] + part["not_started"]]
            assert len(missing) == part["episodes_cut"] + part["episodes_not_started"]
            assert not set(missing) & {r["index"] for r in recs}, combo
            assert len(set(missing)) == len(missing), combo
            assert ledger["closed"] == "max_cost", combo
        else:
            assert "partial" not in written and len(recs) == LIMIT, combo
        # no plot of nothing, and no warning about it
        pngs = sorted(p.name for p in out.glob("*.png"))
        if recs:
            assert "metrics.png" in pngs, combo
        else:
            assert pngs == [] and written["plots"] == [], combo
            assert written["plots_skipped"] == "no episode was written", combo
            assert "no plots" in stop, combo
        assert not [w for w in caught if "matplotlib" in w.lower() or "empty" in w.lower()
                    or "nan" in w.lower()], (combo, caught)
        outcomes.append((stop is not None, len(recs)))
    # the sweep saw a run that could start nothing, runs stopped with episodes written, and
    # a run that fit its budget
    assert outcomes[0] == (True, 0)
    assert any(stopped and n for stopped, n in outcomes)
    assert any(not stopped for stopped, _ in outcomes)
