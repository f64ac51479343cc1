"""The report's provenance: what every number was measured with (``provenance.html`` and a
line under the leaderboard), read from each run folder's ``run.json``, and the agents whose
code raised (``usage.agent_errors``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["provenance_context", "write_provenance"]


def _agent_rows(label: str, info: Mapping[str, Any]) -> dict[str, Any]:
    prov = info.get("provenance") or {}
    block = (prov.get("agents") or {}).get(info.get("name")) or {}
    errors = sum(int((r.get("usage") or {}).get("agent_errors", 0) or 0)
                 for r in info.get("records", []))
    decisions = sum(int((r.get("usage") or {}).get("decisions", 0) or 0)
                    for r in info.get("records", []))
    return {
        "agent": label, "run_dir": str(info.get("run_dir")), "spec": block.get("spec"),
        "options": json.dumps(block.get("options") or {}, sort_keys=True),
        "model": block.get("model"),
        "files": [{"role": role, "path": f.get("path"), "sha256": f.get("sha256")}
                  for role, f in sorted((block.get("data_files") or {}).items())],
        "key": block.get("key"), "errors": errors, "decisions": decisions,
        "package": prov.get("package_version"), "generator": prov.get("generator"),
        "suite_digest": (prov.get("suite") or {}).get("reference_sha256"),
        "started": prov.get("started"), "command": " ".join(prov.get("command") or []),
        "python": prov.get("python"), "platform": prov.get("platform"),
        "seed": prov.get("seed"), "trials": prov.get("trials"),
        "env": f"{prov.get('env_id')} {json.dumps(prov.get('env_kwargs') or {})}",
    }


def provenance_context(agents: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``{"rows": [...], "line": str, "errors": [str], "unmeasured": [agent]}`` for the
    templates; ``unmeasured``: the rows that measure a fallback (most decisions raised, or
    most model calls failed or did not parse), marked on the leaderboard."""
    rows = [_agent_rows(label, info) for label, info in agents.items()]
    packages = sorted({str(r["package"]) for r in rows if r["package"]})
    gens = sorted({str(r["generator"]) for r in rows if r["generator"]})
    digests = sorted({str(r["suite_digest"])[:16] for r in rows if r["suite_digest"]})
    unstamped = [r["agent"] for r in rows if not r["package"]]
    line = (f"mindhelper-env {', '.join(packages) or '?'}, generator {', '.join(gens) or '?'}, "
            f"suite digest {', '.join(digests) or '?'}")
    if unstamped:
        line += f"; no provenance for {', '.join(unstamped)} (written before 0.4)"
    errors = [f"{r['agent']}: its act/reset raised {r['errors']} time(s) in "
              f"{r['decisions']} decisions (those decisions were 'none')"
              for r in rows if r["errors"]]
    from mindhelper_env.evaluation.summary import mostly_raised
    from mindhelper_env.models.report import model_report, mostly_failed, unusable_calls

    unmeasured = {r["agent"] for r in rows if r["errors"] and mostly_raised(
        {"errors": r["errors"], "decisions": r["decisions"]})}
    models = model_report({label: list(info.get("records", []))
                           for label, info in agents.items()})
    for label, rep in models.items():
        if mostly_failed(rep):
            unmeasured.add(label)
            errors.append(f"{label}: most of its model calls gave nothing ({unusable_calls(rep)}"
                          f" of {rep['calls']} failed or did not parse), so its row measures "
                          "the fallback (silence), not the model")
    return {"rows": rows, "line": line, "errors": errors, "unmeasured": sorted(unmeasured)}


def write_provenance(out: Path, env: Any, context: Mapping[str, Any],
                     common: Mapping[str, Any]) -> None:
    """``provenance.html`` (the template ``provenance.html.j2``) and ``provenance.json``
    (every run folder's ``run.json`` provenance)."""
    html = env.get_template("provenance.html.j2").render(
        page="provenance", root=".", prov=context, **common)
    (out / "provenance.html").write_text(html, encoding="utf-8")
    (out / "provenance.json").write_text(
        json.dumps(context["rows"], indent=2, sort_keys=True) + "\n", encoding="utf-8")
