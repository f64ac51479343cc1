"""Budgets that buy whole episodes: a grid of budgets, workers and episodes in flight.

``direct-vlm`` plays the vision track (``obs_mode="rgb"``) of a suite through ``evaluate``
against the stdlib OpenAI-compatible server of the tests (``tests/slot_server.py``, in this
process), which bills every image at ``--image-factor`` times the package's image rule (3:
a server whose bills are higher than the package estimates) and text at 4 characters a
token. For each ``(max_cost, workers, concurrency)`` it reports what the server billed, what
the records written paid for (and their share of the bill), the episodes written, cut and
not started, the ledger's spend and the summary's, and the checks of
``tests/test_budget_sweep.py``: the bill never passes the budget, at least half of it pays
for written episodes, and ``summary.json``'s spend equals the ledger's::

    python benchmarks/bench_budget.py --suite vh-dev-v5 --limit 12 \\
        --budgets 0.05,0.1,0.2,0.5,1 --workers 1,2 --concurrency 1,2,4,8 \\
        --json runs/bench_budget.json

Exit status 1 when any check fails. It also runs against an installation from before the
episode holds (its summary has no ``spend.spent_usd``; the summary's spend is then read
from ``spend.usd``), for a before/after comparison.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def run_one(suite: str, limit: int, budget: float, workers: int, concurrency: int,
            factor: float, out: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests"))
    from slot_server import SlotServer

    from mindhelper_env.evaluation import evaluate
    from mindhelper_env.evaluation.budget import BudgetExhausted
    from mindhelper_env.models import limits
    from mindhelper_env.models.images import image_tokens

    limits.reset_shared_limits()
    price = (1.0, 1.0)
    t0 = time.perf_counter()
    with SlotServer(latency=0.0, slots=64,
                    image_tokens=lambda h, w: round(factor * image_tokens(h, w, "openai"))
                    ) as srv:
        stop = None
        try:
            summary = evaluate(
                suite, ["direct-vlm"], out, limit=limit, progress=False, plots=True,
                timing=False, workers=workers, force_workers=True, concurrency=concurrency,
                max_cost=budget, allow_partial=True, env_kwargs={"obs_mode": "rgb"},
                prices={"openai:fake": price}, overwrite=True,
                agent_kwargs={"direct-vlm": {"model": f"openai:fake@{srv.url}",
                                             "api_key": "k"}})
        except BudgetExhausted as exc:
            summary, stop = exc.summary, str(exc)
        billed = (srv.billed_prompt + srv.billed_completion) / 1e6
    wall = time.perf_counter() - t0
    written = json.loads((out / "summary.json").read_text())
    spend = written.get("spend") or {}
    ledger = spend.get("ledger") or {}
    recs = [json.loads(line) for line in (out / "direct-vlm.jsonl").read_text().splitlines()]
    on_records = sum(r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"]
                     for r in recs) / 1e6
    summary_spend = spend.get("spent_usd", spend.get("usd"))
    part = written.get("partial") or {}
    row = {
        "max_cost": budget, "workers": workers, "concurrency": concurrency,
        "billed_usd": round(billed, 6), "written_usd": round(on_records, 6),
        "written_share": round(on_records / billed, 3) if billed else None,
        "episodes_written": len(recs), "episodes_cut": part.get("episodes_cut", 0),
        "episodes_not_started": part.get("episodes_not_started", 0),
        "ledger_spent_usd": ledger.get("spent_usd"), "summary_spend_usd": summary_spend,
        "stopped": stop is not None, "plots": len(written.get("plots") or []),
        "wall_seconds": round(wall, 1),
    }
    row["checks"] = {
        "within_budget": billed <= budget + 1e-9,
        "half_on_written": on_records >= 0.5 * billed - 1e-9,
        "summary_equals_ledger": summary_spend is not None
        and abs(summary_spend - (ledger.get("spent_usd") or 0.0)) <= 1e-6,
    }
    del summary
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="vh-dev-v5")
    parser.add_argument("--limit", type=int, default=12)
    parser.add_argument("--budgets", type=_floats, default=_floats("0.05,0.1,0.2,0.5,1"))
    parser.add_argument("--workers", type=_ints, default=_ints("1,2"))
    parser.add_argument("--concurrency", type=_ints, default=_ints("1,2,4,8"))
    parser.add_argument("--image-factor", type=float, default=3.0,
                        help="the server bills images at this times the package's rule")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-budget-") as tmp:
        for budget in args.budgets:
            for workers in args.workers:
                for concurrency in args.concurrency:
                    out = Path(tmp) / f"b{budget}-w{workers}-c{concurrency}"
                    row = run_one(args.suite, args.limit, budget, workers, concurrency,
                                  args.image_factor, out)
                    rows.append(row)
                    ok = all(row["checks"].values())
                    print(f"max_cost ${budget:g} workers {workers} concurrency "
                          f"{concurrency}: billed ${row['billed_usd']:.4f}, "
                          f"{row['episodes_written']} written (${row['written_usd']:.4f}, "
                          f"share {row['written_share']}), {row['episodes_cut']} cut, "
                          f"{row['episodes_not_started']} not started; ledger "
                          f"${row['ledger_spent_usd']}, summary ${row['summary_spend_usd']}; "
                          f"{row['wall_seconds']} s; {'ok' if ok else 'FAILED'} "
                          f"{row['checks'] if not ok else ''}", flush=True)
    failed = [r for r in rows if not all(r["checks"].values())]
    result = {"suite": args.suite, "limit": args.limit, "image_factor": args.image_factor,
              "runs": rows, "failed": len(failed)}
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{len(rows)} runs, {len(failed)} failed a check")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
