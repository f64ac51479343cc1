"""PNG plots of evaluation results (matplotlib, ``Agg`` backend, imported lazily).

Every function takes ``{agent: metrics}`` where ``metrics`` is a
:func:`mindhelper_env.metrics.compute_metrics` result converted with
:func:`~mindhelper_env.metrics.as_percentages` (the ``"metrics"`` block of an evaluation's
``summary.json``). Missing values (``None``: no episode to measure) are drawn as empty bars
labelled ``n/a``. Every title names the suite (when given) and the number of episodes.
A path ending in ``.svg`` gives an SVG (what the HTML report embeds), any other a PNG.
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
    "plot_intervals",
    "plot_tokens",
    "write_plots",
]

#: The per-family heatmap's colour map: cividis, readable without telling red from green
#: (its lightness rises steadily from 0 to 100 %); every cell also prints its number.
HEATMAP_CMAP = "cividis"

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
    """Bars of each series side by side for each group; ``None`` values marked ``n/a``.
    Value labels stand upright above narrow bars so neighbours never overlap."""
    import numpy as np

    n = max(1, len(series))
    width = 0.8 / n
    x = np.arange(len(groups))
    upright = n > 3
    for k, (label, values) in enumerate(series.items()):
        pos = x - 0.4 + width * (k + 0.5)
        bars = ax.bar(pos, [_value(v) for v in values], width, label=label)
        for bar, v in zip(bars, values, strict=True):
            text = "n/a" if v is None else f"{float(v):.0f}"
            ax.annotate(
                text,
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=8,
                xytext=(0, 2),
                textcoords="offset points",
                rotation=90 if upright else 0,
            )
    ax.set_xticks(x)
    ax.set_xticklabels(groups, fontsize=10)
    # Head room above 100 % so the legend never covers a bar.
    ax.set_ylim(0, 130)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel(ylabel, fontsize=10)
    ax.tick_params(axis="y", labelsize=9)
    ax.grid(axis="y", alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize=9, loc="upper center", ncol=min(len(series), 6), frameon=False)


def _episodes(table: Mapping[str, Mapping[str, Any]]) -> int:
    """The most episodes any agent played (the count a title names)."""
    return max((int(m.get("episodes") or 0) for m in table.values()), default=0)


def _title(
    ax: Any, title: str, table: Mapping[str, Mapping[str, Any]], subtitle: str | None
) -> None:
    """``title`` over a second line naming the suite and episode count."""
    if subtitle is None:
        subtitle = f"{_episodes(table)} episodes"
    ax.set_title(f"{title}\n{subtitle}", fontsize=11)


def plot_metrics(
    table: Mapping[str, Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    subtitle: str | None = None,
) -> Path:
    """Bar chart of PHA, PHR, TA, SR, AC, PIR, PSR, PIA (%) per agent (PHA first, then the
    paper's Table II); at most 12 x 5.5 inches whatever the number of agents."""
    plt = _pyplot()
    n = max(1, len(table))
    fig, ax = plt.subplots(figsize=(min(12.0, 6.0 + 0.9 * n), 5.5))
    series = {agent: [m.get(k) for k in TABLE_METRICS] for agent, m in table.items()}
    _grouped_bars(ax, list(TABLE_METRICS), series, ylabel="%")
    _title(ax, "Action evaluation and precision intervention", table, subtitle)
    return _save(plt, fig, path)


def _fit_titles(fig: Any) -> bool:
    """Keep every axes title inside the figure: a title wider than the room around its
    axes (long y labels push the axes right, a few agents make the figure narrow) is
    centred on the figure instead, and wrapped to its width. True when a title changed."""
    import textwrap

    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width
    changed = False
    for ax in fig.axes:
        title = ax.title
        text = title.get_text()
        if not text:
            continue
        box = title.get_window_extent(renderer)
        if box.x0 >= 0 and box.x1 <= width:
            continue
        if box.width > 0.96 * width:
            lines = text.split("\n")
            chars = max(16, int(max(len(line) for line in lines) * 0.96 * width / box.width))
            title.set_text("\n".join(textwrap.fill(line, chars) for line in lines))
        # the figure's centre, in the axes' coordinates (where a title's x is given)
        title.set_x((width / 2 - ax.bbox.x0) / max(ax.bbox.width, 1.0))
        changed = True
    return changed


def _save(plt: Any, fig: Any, path: str | os.PathLike[str]) -> Path:
    fig.tight_layout()
    if _fit_titles(fig):  # wrapped titles take more height: lay out again, re-centre
        fig.tight_layout()
        _fit_titles(fig)
    out = Path(path)
    if out.suffix.lower() == ".svg":
        import matplotlib

        # the same figure gives the same bytes (no date, fixed ids); no metadata links
        with matplotlib.rc_context({"svg.hashsalt": "mindhelper", "svg.fonttype": "none"}):
            fig.savefig(
                out,
                format="svg",
                metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
            )
    else:
        fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def plot_silent_all(
    table: Mapping[str, Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    subtitle: str | None = None,
) -> Path:
    """Share of all episodes in which each agent never acted (the paper's Fig. 5), with a
    dashed line at the ideal: the share of episodes that need no help (an agent that acts
    exactly when help is needed is silent in those and only those)."""
    plt = _pyplot()
    agents = list(table)
    values = [table[a].get("silent_all") for a in agents]
    fig, ax = plt.subplots(figsize=(min(10.0, max(6.0, 1.0 * len(agents) + 2.5)), 4.5))
    bars = ax.bar(agents, [_value(v) for v in values], color="tab:gray")
    for bar, v in zip(bars, values, strict=True):
        ax.annotate(
            "n/a" if v is None else f"{float(v):.1f}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=9,
            xytext=(0, 2),
            textcoords="offset points",
        )
    ideal = None
    for m in table.values():
        if m.get("episodes"):
            ideal = 100.0 * float(m.get("n_silent") or 0) / float(m["episodes"])
            break
    if ideal is not None:
        ax.axhline(
            ideal,
            color="tab:green",
            linestyle="--",
            linewidth=1.5,
            label=f"ideal: {ideal:.0f} % (the episodes that need no help)",
        )
        ax.legend(fontsize=9, loc="upper right", frameon=False)
    ax.set_ylim(0, 115)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("silent in episode (%)", fontsize=10)
    ax.tick_params(axis="x", labelsize=10, rotation=20 if len(agents) > 5 else 0)
    _title(ax, "Episodes with no intervention at all (silent-all)", table, subtitle)
    ax.grid(axis="y", alpha=0.3)
    return _save(plt, fig, path)


def plot_family(
    table: Mapping[str, Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    subtitle: str | None = None,
) -> Path:
    """Per-family PHR (families that need help) or PSR (the others), per agent: horizontal
    bars, one row per family labelled with its metric and episode count."""
    import numpy as np

    plt = _pyplot()
    families: list[str] = []
    for m in table.values():
        for fam in m.get("per_family") or {}:
            if fam not in families:
                families.append(fam)

    # Families that need help first (reported as PHR), then the silent ones (PSR).
    def needs_help(fam: str) -> bool:
        return any(
            ((m.get("per_family") or {}).get(fam) or {}).get("n_help") for m in table.values()
        )

    def count(fam: str) -> int:
        return max(
            int(((m.get("per_family") or {}).get(fam) or {}).get("episodes") or 0)
            for m in table.values()
        )

    families.sort(key=lambda f: (not needs_help(f), f))

    def family_value(m: Mapping[str, Any], fam: str) -> Any:
        block = (m.get("per_family") or {}).get(fam)
        if not block:
            return None
        return block.get("PHR") if block.get("n_help") else block.get("PSR")

    labels = [
        f"{f.replace('_', ' ')}  ({'PHR' if needs_help(f) else 'PSR'}, n={count(f)})"
        for f in families
    ]
    agents = list(table)
    grid = np.array(
        [
            [np.nan if (v := family_value(table[a], f)) is None else float(v) for a in agents]
            for f in families
        ],
        dtype=float,
    ).reshape(len(families), len(agents))
    fig, ax = plt.subplots(
        figsize=(min(14.0, 4.5 + 1.1 * max(1, len(agents))), max(3.0, 0.34 * len(families) + 1.6))
    )
    ax.imshow(np.ma.masked_invalid(grid), cmap=HEATMAP_CMAP, vmin=0, vmax=100, aspect="auto")
    for i in range(len(families)):
        for j in range(len(agents)):
            v = grid[i, j]
            ax.text(
                j,
                i,
                "n/a" if np.isnan(v) else f"{v:.0f}",
                ha="center",
                va="center",
                fontsize=9,
                color=heatmap_text_color(v),
            )
    ax.set_xticks(range(len(agents)))
    ax.set_xticklabels(
        agents,
        fontsize=10,
        rotation=20 if len(agents) > 4 else 0,
        ha="right" if len(agents) > 4 else "center",
    )
    ax.set_yticks(range(len(families)))
    ax.set_yticklabels(labels, fontsize=9)
    ax.tick_params(top=False, bottom=True)
    _title(ax, "Per family (%): PHR where help is needed, PSR where it is not", table, subtitle)
    return _save(plt, fig, path)


def relative_luminance(rgb: Sequence[float]) -> float:
    """WCAG 2 relative luminance of an sRGB colour with channels in 0..1."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(float(c)) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def heatmap_text_color(value: float) -> str:
    """The text colour of a heatmap cell showing ``value`` (0 to 100 %): black or white,
    whichever contrasts more with the cell's :data:`HEATMAP_CMAP` colour (black on an empty
    ``n/a`` cell)."""
    import math

    import matplotlib

    if value is None or math.isnan(value):
        return "black"
    cell = relative_luminance(matplotlib.colormaps[HEATMAP_CMAP](min(max(value, 0), 100) / 100))
    return "black" if (cell + 0.05) / 0.05 >= 1.05 / (cell + 0.05) else "white"


def plot_breakdown(
    table: Mapping[str, Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    subtitle: str | None = None,
) -> Path:
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
    fig, ax = plt.subplots(figsize=(min(16.0, max(8.0, 1.15 * max(1, len(keys)))), 5.5))
    _grouped_bars(ax, labels, series, ylabel="PHA (%)")
    ax.tick_params(axis="x", labelsize=8)
    _title(ax, "PHA per task type, ability and twin group (episodes help/silent)", table, subtitle)
    return _save(plt, fig, path)


def plot_tokens(
    metrics: Mapping[str, Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    subtitle: str | None = None,
) -> Path:
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
        ax.annotate(
            f"{p_ + c_:.0f}\n({calls:.1f} calls)",
            (bar.get_x() + bar.get_width() / 2, p_ + c_),
            ha="center",
            va="bottom",
            fontsize=8,
            xytext=(0, 1),
            textcoords="offset points",
        )
    ax.set_ylabel("tokens per episode")
    _title(ax, "Model tokens per episode", metrics, subtitle)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(plt, fig, path)


def plot_intervals(
    table: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Any]]],
    path: str | os.PathLike[str],
    *,
    subtitle: str | None = None,
    keys: Sequence[str] = ("PHA", "PHR", "PSR", "PIA"),
) -> Path:
    """Each agent's PHA, PHR, PSR and PIA as a dot with its 95 % interval (the report's
    chart). ``table`` maps an agent to ``(metrics in %, {metric: [low, high] | None})``."""
    import numpy as np

    plt = _pyplot()
    agents = list(table)
    n = max(1, len(agents))
    fig, ax = plt.subplots(figsize=(10.0, 4.8))
    x = np.arange(len(keys))
    step = 0.8 / n
    for k, agent in enumerate(agents):
        metrics, ci = table[agent]
        pos = x - 0.4 + step * (k + 0.5)
        values = [metrics.get(m) for m in keys]
        lows = [(ci.get(m) or [None, None])[0] for m in keys]
        highs = [(ci.get(m) or [None, None])[1] for m in keys]
        yv = np.array([np.nan if v is None else float(v) for v in values])
        err = np.array(
            [
                [
                    0.0 if v is None or lo is None else float(v) - float(lo)
                    for v, lo in zip(values, lows, strict=True)
                ],
                [
                    0.0 if v is None or hi is None else float(hi) - float(v)
                    for v, hi in zip(values, highs, strict=True)
                ],
            ]
        )
        ax.errorbar(pos, yv, yerr=np.maximum(err, 0.0), fmt="o", capsize=3, label=agent)
    ax.set_xticks(x)
    ax.set_xticklabels(list(keys), fontsize=10)
    ax.set_ylim(-3, 103)
    ax.set_ylabel("% (95 % bootstrap interval)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    _title(
        ax, "Headline metrics with 95 % intervals", {a: t[0] for a, t in table.items()}, subtitle
    )
    return _save(plt, fig, path)


def write_plots(
    table: Mapping[str, Mapping[str, Any]],
    out_dir: str | os.PathLike[str],
    *,
    suite: str | None = None,
) -> list[Path]:
    """Write ``metrics.png``, ``silent_all.png``, ``per_family.png``, ``breakdown.png``
    (when the metrics have a ``breakdown``) and, when any agent called a model,
    ``tokens.png`` into ``out_dir``; every title names ``suite`` (when given) and the
    episode count. When no agent has an episode (a run stopped by its budget before any
    episode was written) no plot is written and ``[]`` returned.

    Raises ``ImportError`` with an install hint when matplotlib is missing.
    """
    if not any(int(m.get("episodes") or 0) > 0 for m in table.values()):
        return []
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    n = _episodes(table)
    subtitle = f"{suite}, {n} episodes" if suite else f"{n} episodes"
    paths = [
        plot_metrics(table, out / "metrics.png", subtitle=subtitle),
        plot_silent_all(table, out / "silent_all.png", subtitle=subtitle),
        plot_family(table, out / "per_family.png", subtitle=subtitle),
    ]
    if any(m.get("breakdown") for m in table.values()):
        paths.append(plot_breakdown(table, out / "breakdown.png", subtitle=subtitle))
    if any(
        ((m.get("efficiency") or {}).get("model_calls_per_episode") or 0) > 0
        for m in table.values()
    ):
        paths.append(plot_tokens(table, out / "tokens.png", subtitle=subtitle))
    return paths
