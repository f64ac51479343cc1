"""PNG plots of evaluation results (matplotlib, ``Agg`` backend, imported lazily).

Every function takes ``{agent: metrics}`` where ``metrics`` is a
:func:`mindhelper_env.metrics.compute_metrics` result converted with
:func:`~mindhelper_env.metrics.as_percentages` (the ``"metrics"`` block of an evaluation's
``summary.json``). Missing values (``None``: no episode to measure) are drawn as empty bars
labelled ``n/a``.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "TABLE_METRICS",
    "plot_metrics",
    "plot_silent_all",
    "plot_family",
    "plot_breakdown",
    "write_plots",
]

#: The metrics of the paper's Table II, in its column order.
TABLE_METRICS: tuple[str, ...] = ("PHA", "PHR", "TA", "SR", "AC", "PIR", "PSR", "PIA")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "plots need matplotlib: pip install 'mindhelper-env[video]' (or matplotlib)"
        ) from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _value(x: Any) -> float:
    return 0.0 if x is None else float(x)


def _grouped_bars(
    ax: Any, groups: Sequence[str], series: Mapping[str, Sequence[Any]], *, ylabel: str
) -> None:
    """Bars of each series side by side for each group; ``None`` values marked ``n/a``."""
    import numpy as np

    n = max(1, len(series))
    width = 0.8 / n
    x = np.arange(len(groups))
    for k, (label, values) in enumerate(series.items()):
        pos = x - 0.4 + width * (k + 0.5)
        bars = ax.bar(pos, [_value(v) for v in values], width, label=label)
        for bar, v in zip(bars, values, strict=True):
            text = "n/a" if v is None else f"{float(v):.0f}"
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=7, xytext=(0, 1),
                        textcoords="offset points")
    ax.set_xticks(x)
    ax.set_xticklabels(groups, fontsize=8)
    # Head room above 100 % so the legend never covers a bar.
    ax.set_ylim(0, 125)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize=8, loc="upper center", ncol=min(len(series), 6), frameon=False)


def plot_metrics(table: Mapping[str, Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Bar chart of PHA, PHR, TA, SR, AC, PIR, PSR, PIA (%) per agent (PHA first, then the paper's Table II)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(TABLE_METRICS) * max(1, len(table)) / 2),
                                    4.0))
    series = {agent: [m.get(k) for k in TABLE_METRICS] for agent, m in table.items()}
    _grouped_bars(ax, list(TABLE_METRICS), series, ylabel="%")
    ax.set_title("Action evaluation and precision intervention")
    return _save(plt, fig, path)


def _save(plt: Any, fig: Any, path: str | os.PathLike[str]) -> Path:
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def plot_silent_all(table: Mapping[str, Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Share of all episodes in which each agent never acted (the paper's Fig. 5)."""
    plt = _pyplot()
    agents = list(table)
    values = [table[a].get("silent_all") for a in agents]
    fig, ax = plt.subplots(figsize=(max(5.5, 0.9 * len(agents) + 2), 3.5))
    bars = ax.bar(agents, [_value(v) for v in values], color="tab:gray")
    for bar, v in zip(bars, values, strict=True):
        ax.annotate("n/a" if v is None else f"{float(v):.2f}",
                    (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                    va="bottom", fontsize=8, xytext=(0, 1), textcoords="offset points")
    ax.set_ylim(0, 110)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("silent in episode (%)")
    ax.set_title("Episodes with no intervention at all (silent-all)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return _save(plt, fig, path)


def plot_family(table: Mapping[str, Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Per-family PIR (families that need help) or PSR (the others), per agent."""
    plt = _pyplot()
    families: list[str] = []
    for m in table.values():
        for fam in m.get("per_family") or {}:
            if fam not in families:
                families.append(fam)
    # Families that need help first (reported as PIR), then the silent ones (PSR).
    def needs_help(fam: str) -> bool:
        return any(((m.get("per_family") or {}).get(fam) or {}).get("n_help")
                   for m in table.values())

    families.sort(key=lambda f: (not needs_help(f), f))

    def family_value(m: Mapping[str, Any], fam: str) -> Any:
        block = (m.get("per_family") or {}).get(fam)
        if not block:
            return None
        return block.get("PHR") if block.get("n_help") else block.get("PSR")

    labels = [textwrap.fill(f.replace("_", " "), 13) + f"\n({'PHR' if needs_help(f) else 'PSR'})"
              for f in families]
    series = {agent: [family_value(m, f) for f in families] for agent, m in table.items()}
    fig, ax = plt.subplots(figsize=(max(7.0, 1.3 * max(1, len(families))), 4.8))
    _grouped_bars(ax, labels, series, ylabel="%")
    ax.set_title("Per family: PHR where help is needed, PSR where it is not")
    return _save(plt, fig, path)


def plot_breakdown(table: Mapping[str, Mapping[str, Any]],
                   path: str | os.PathLike[str]) -> Path:
    """PHA per task type, ability and twin group (the ``breakdown`` block), per agent.

    Groups with no episode for any agent are left out; each label gives the group's
    episodes (help/silent) of the first agent that has it. A group with an empty side has
    no PHA (``n/a``)."""
    plt = _pyplot()
    sections = (("task_type", "type"), ("ability", ""), ("twin_group", "twins of"))
    keys: list[tuple[str, str]] = []
    labels: list[str] = []
    for section, prefix in sections:
        for m in table.values():
            for name, block in ((m.get("breakdown") or {}).get(section) or {}).items():
                if (section, name) in keys or not block.get("episodes"):
                    continue
                keys.append((section, name))
                text = textwrap.fill(f"{prefix} {name}".strip().replace("_", " "), 14)
                labels.append(f"{text}\n({block.get('n_help', 0)}/{block.get('n_silent', 0)})")

    def value(m: Mapping[str, Any], key: tuple[str, str]) -> Any:
        block = ((m.get("breakdown") or {}).get(key[0]) or {}).get(key[1]) or {}
        return block.get("PHA")

    series = {agent: [value(m, k) for k in keys] for agent, m in table.items()}
    fig, ax = plt.subplots(figsize=(max(7.0, 1.2 * max(1, len(keys))), 4.8))
    _grouped_bars(ax, labels, series, ylabel="PHA (%)")
    ax.set_title("PHA per task type, ability and twin group (episodes help/silent)")
    return _save(plt, fig, path)


def plot_tokens(metrics: Mapping[str, Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Prompt and completion tokens per episode of each agent (the efficiency figure)."""
    plt = _pyplot()
    agents = list(metrics)
    eff = [(metrics[a].get("efficiency") or {}) for a in agents]
    prompt = [_value(e.get("prompt_tokens_per_episode")) for e in eff]
    completion = [_value(e.get("completion_tokens_per_episode")) for e in eff]
    fig, ax = plt.subplots(figsize=(max(5.5, 0.9 * len(agents) + 2), 3.5))
    ax.bar(agents, prompt, label="prompt", color="tab:blue")
    bars = ax.bar(agents, completion, bottom=prompt, label="completion", color="tab:orange")
    for bar, p_, c_, e in zip(bars, prompt, completion, eff, strict=True):
        calls = e.get("model_calls_per_episode") or 0
        ax.annotate(f"{p_ + c_:.0f}\n({calls:.1f} calls)",
                    (bar.get_x() + bar.get_width() / 2, p_ + c_), ha="center", va="bottom",
                    fontsize=8, xytext=(0, 1), textcoords="offset points")
    ax.set_ylabel("tokens per episode")
    ax.set_title("Model tokens per episode", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(plt, fig, path)


def write_plots(table: Mapping[str, Mapping[str, Any]], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write ``metrics.png``, ``silent_all.png``, ``per_family.png``, ``breakdown.png``
    (when the metrics have a ``breakdown``) and, when any agent called a model,
    ``tokens.png`` into ``out_dir``.

    Raises ``ImportError`` with an install hint when matplotlib is missing.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [
        plot_metrics(table, out / "metrics.png"),
        plot_silent_all(table, out / "silent_all.png"),
        plot_family(table, out / "per_family.png"),
    ]
    if any(m.get("breakdown") for m in table.values()):
        paths.append(plot_breakdown(table, out / "breakdown.png"))
    if any(((m.get("efficiency") or {}).get("model_calls_per_episode") or 0) > 0
           for m in table.values()):
        paths.append(plot_tokens(table, out / "tokens.png"))
    return paths
