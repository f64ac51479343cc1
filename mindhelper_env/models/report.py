"""What model-backed agents' records say about the model: decisions by source, failed calls
by kind, prompt versions, and the paper's efficiency table.

Result records carry, in ``usage`` (besides the counters of
:data:`mindhelper_env.metrics.USAGE_FIELDS`): ``sources`` (decisions by who made them:
``model``, ``skill``, ``symbolic``, ``fallback``, ``failed``), ``errors`` (failed model
calls by kind), ``error_messages`` (the first message of each kind) and ``prompts``
(module -> prompt template version). :func:`model_report` adds them up per agent; it is the
``"models"`` part of ``summary.json`` (:func:`mindhelper_env.evaluation.summarize`).

:func:`efficiency_rows` is the paper's efficiency comparison: per agent, model calls, tokens
per episode and per call, and the reduction of tokens per episode against ``direct-vlm``
(``100 * (1 - agent / direct-vlm)``; ``None`` without a ``direct-vlm`` row that used tokens).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["usage_extras", "model_report", "efficiency_rows", "warning_lines",
           "mostly_failed", "unusable_calls", "SOURCES"]

#: Decision sources, in report order.
SOURCES = ("model", "skill", "symbolic", "fallback", "failed")
_DICT_FIELDS = ("sources", "errors", "error_messages", "prompts")


def _int_map(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): int(v) for k, v in value.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0}


def usage_extras(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The model fields of an agent's usage that a record keeps (only those present)."""
    out: dict[str, Any] = {}
    for key in _DICT_FIELDS:
        value = raw.get(key)
        if not isinstance(value, Mapping) or not value:
            continue
        if key in ("sources", "errors"):
            value = _int_map(value)
        else:
            value = {str(k): str(v) for k, v in value.items()}
        if value:
            out[key] = dict(sorted(value.items()))
    for key in ("prompts_fitted", "images", "image_tokens"):
        value = raw.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out[key] = value
    return out


def model_report(records_by_agent: Mapping[str, Sequence[Mapping[str, Any]]]
                 ) -> dict[str, dict[str, Any]]:
    """Per agent that called a model: ``calls``, ``failed_calls`` (calls that raised:
    ``fallbacks`` of model agents), ``parse_failures``, ``decisions_by_source`` (counts),
    ``share_by_source`` (% of decisions), ``errors`` (kind -> ``{"count", "message"}``),
    ``prompts`` (versions seen), ``prompts_fitted`` and, for agents that sent frames,
    ``images`` and ``image_tokens`` (their tokens by the clients' rule, a part of the prompt
    tokens)."""
    out: dict[str, dict[str, Any]] = {}
    for agent, records in records_by_agent.items():
        calls = failed = parse = fitted = images = image_tokens = 0
        sources: dict[str, int] = {}
        errors: dict[str, dict[str, Any]] = {}
        prompts: dict[str, set[str]] = {}
        for rec in records:
            u = rec.get("usage") or {}
            calls += int(u.get("model_calls", 0) or 0)
            parse += int(u.get("parse_failures", 0) or 0)
            fitted += int(u.get("prompts_fitted", 0) or 0)
            images += int(u.get("images", 0) or 0)
            image_tokens += int(u.get("image_tokens", 0) or 0)
            errs = _int_map(u.get("errors"))
            failed += sum(errs.values())
            msgs = u.get("error_messages") or {}
            for k, n in errs.items():
                e = errors.setdefault(k, {"count": 0, "message": str(msgs.get(k, ""))})
                e["count"] += n
            for k, n in _int_map(u.get("sources")).items():
                sources[k] = sources.get(k, 0) + n
            for m, v in (u.get("prompts") or {}).items():
                prompts.setdefault(str(m), set()).add(str(v))
        if not calls and not sources:
            continue
        total = sum(sources.values())
        order = [s for s in SOURCES if s in sources] + sorted(set(sources) - set(SOURCES))
        out[agent] = {
            "calls": calls, "failed_calls": failed, "parse_failures": parse,
            "parse_failure_share": round(100.0 * parse / calls, 2) if calls else None,
            "decisions_by_source": {s: sources[s] for s in order},
            "share_by_source": {s: round(100.0 * sources[s] / total, 2) for s in order}
            if total else {},
            "errors": dict(sorted(errors.items())),
            "prompts": {m: sorted(v) for m, v in sorted(prompts.items())},
            "prompts_fitted": fitted,
        }
        if images:
            out[agent].update(images=images, image_tokens=image_tokens)
    return out


def unusable_calls(report: Mapping[str, Any]) -> int:
    """An agent's model calls that gave it nothing: calls that failed (``failed_calls``) and
    answers that could not be parsed (``parse_failures``), at most ``calls``."""
    calls = int(report.get("calls") or 0)
    return min(calls, int(report.get("failed_calls") or 0)
               + int(report.get("parse_failures") or 0))


def mostly_failed(report: Mapping[str, Any]) -> bool:
    """True when more than half of an agent's model calls failed or were answered with
    something that could not be parsed: its decisions are mostly the fallback's (silence),
    so its row does not measure the model."""
    calls = int(report.get("calls") or 0)
    return calls > 0 and 2 * unusable_calls(report) > calls


def warning_lines(models: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per agent and error kind (count and the server's message), then a line per
    agent most of whose calls failed."""
    lines = []
    for agent, rep in models.items():
        for kind, e in (rep.get("errors") or {}).items():
            lines.append(f"{agent}: {e['count']} model call(s) failed with {kind}: "
                         f"{e.get('message') or '(no message)'}")
    for agent, rep in models.items():
        if mostly_failed(rep):
            lines.append(f"{agent}: most of its model calls gave nothing ("
                         f"{unusable_calls(rep)} of {rep['calls']}: {rep.get('failed_calls', 0)}"
                         f" failed, {rep.get('parse_failures', 0)} unparseable), so its row "
                         "measures the fallback (silence), not the model"
                         + (_FORMAT_HINT if int(rep.get("parse_failures") or 0)
                            >= int(rep.get("failed_calls") or 0) else ""))
    return lines


#: What to try when a small model's answers do not parse (docs/models.md, answer formats).
_FORMAT_HINT = ("; a small model needs the compact answer formats: --agent "
                "direct-vlm:answer_format=line, --agent mindclaw:formats=compact")


def efficiency_rows(metrics: Mapping[str, Mapping[str, Any]],
                    baseline: str = "direct-vlm") -> list[dict[str, Any]]:
    """The efficiency table (see the module docstring), one row per agent that called a
    model (or the baseline)."""
    def eff(agent: str) -> Mapping[str, Any]:
        return (metrics.get(agent) or {}).get("efficiency") or {}

    base = eff(baseline).get("tokens_per_episode") if baseline in metrics else None
    rows = []
    for agent in metrics:
        e = eff(agent)
        calls = e.get("model_calls_per_episode") or 0
        if not calls and agent != baseline:
            continue
        tpe = e.get("tokens_per_episode")
        reduction = None
        if base and tpe is not None and agent != baseline:
            reduction = 100.0 * (1.0 - float(tpe) / float(base))
        rows.append({"agent": agent, "calls_per_episode": calls,
                     "tokens_per_episode": tpe, "tokens_per_call": e.get("tokens_per_call"),
                     "reduction_vs_baseline": reduction,
                     "estimated": bool(e.get("tokens_estimated_episodes"))})
    return rows
