"""Episode timelines: one lane per actor, the intervention window, the robot's actions.

:func:`plot_timeline` draws an episode record as a PNG (or SVG/PDF) with matplotlib's Agg
canvas (no pyplot, no display, no global state). Input format (a plain dict, JSON-friendly)::

    {
        "episode_id": "vh-dev-v5/0007",
        "ticks": 40,                                    # episode length in ticks
        "lanes": {                                      # one lane per actor, in drawing order
            "Alice": [
                {"start": 0, "end": 6, "label": "kitchen: making tea"},
                {"start": 6, "end": 15, "label": "kitchen: looking for something"},
            ],
            "Ben": [...],
        },
        "robot_actions": [                              # executed robot lines
            {"tick": 9, "label": "[walk] <fridge> (12)", "ok": True},
        ],
        "window": {"onset_tick": 8, "deadline_tick": 15},   # or None (no help needed)
        "outcome": "success",                           # or "failure"
        "agent": "mindclaw",
        "family": "false_belief_relocation",
    }

A segment covers ticks ``start <= t < end``. Its ``label`` is ``"room: activity"`` (or just an
activity); segments are coloured by activity (the part after ``": "``), the same colour for the
same activity everywhere in the plot, and the room is written inside the bar when it fits.
The robot gets its own lane with a mark per action: a filled triangle when the line executed,
a cross when it failed. The window between onset and deadline is shaded; onset is a dashed
line and the deadline a solid one. The title carries the episode id, family, agent and outcome.

Matplotlib is imported lazily (``video`` extra).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mindhelper_env.render.video import check_output_path

__all__ = ["plot_timeline", "validate_timeline_record", "TIMELINE_FORMATS"]

log = logging.getLogger(__name__)

_INSTALL_HINT = "install the video extra: pip install 'mindhelper-env[video]'"

#: File extensions :func:`plot_timeline` can write.
TIMELINE_FORMATS = (".png", ".svg", ".pdf")

_OUTCOME_COLORS = {"success": "#1b7f3b", "failure": "#b3261e"}
_WINDOW_COLOR = "#f6c453"
_ROBOT_COLOR = "#dc1e1e"
_ROBOT_LANE = "robot"
_MAX_ACTION_CHARS = 34
_MAX_LEVELS = 6
#: tab20 entries for activities: dark shades first, then light ones; no reds (robot colour)
_PALETTE = (0, 2, 4, 8, 10, 12, 14, 16, 18, 1, 3, 5, 9, 11, 13, 15, 17, 19)


def _require_matplotlib() -> tuple[Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"plot_timeline needs matplotlib; {_INSTALL_HINT}") from err
    return Figure, FigureCanvasAgg


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"{what} must be an integer tick, got {value!r}")
    return int(value)


def validate_timeline_record(record: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` naming the first problem of a timeline record (see module doc)."""
    if not isinstance(record, Mapping):
        raise TypeError(f"record must be a mapping, got {type(record).__name__}")
    ticks = _int(record.get("ticks"), "record['ticks']")
    if ticks < 0:
        raise ValueError(f"record['ticks'] must be >= 0, got {ticks}")
    lanes = record.get("lanes")
    if not isinstance(lanes, Mapping):
        raise ValueError("record['lanes'] must be a mapping actor name -> list of segments")
    for name, segs in lanes.items():
        if not isinstance(segs, Sequence) or isinstance(segs, (str, bytes)):
            raise ValueError(f"lane {name!r} must be a list of segments")
        for i, seg in enumerate(segs):
            if not isinstance(seg, Mapping):
                raise ValueError(f"lane {name!r} segment #{i} must be a mapping")
            start = _int(seg.get("start"), f"lane {name!r} segment #{i} 'start'")
            end = _int(seg.get("end"), f"lane {name!r} segment #{i} 'end'")
            if end < start:
                raise ValueError(f"lane {name!r} segment #{i} ends ({end}) before it starts "
                                 f"({start})")
            if not isinstance(seg.get("label", ""), str):
                raise ValueError(f"lane {name!r} segment #{i} 'label' must be a string")
    for i, act in enumerate(record.get("robot_actions") or []):
        if not isinstance(act, Mapping):
            raise ValueError(f"robot_actions #{i} must be a mapping")
        _int(act.get("tick"), f"robot_actions #{i} 'tick'")
    window = record.get("window")
    if window is not None:
        if not isinstance(window, Mapping):
            raise ValueError("record['window'] must be a mapping or None")
        onset = _int(window.get("onset_tick"), "window 'onset_tick'")
        deadline = _int(window.get("deadline_tick"), "window 'deadline_tick'")
        if deadline < onset:
            raise ValueError(f"window deadline ({deadline}) is before its onset ({onset})")
    outcome = record.get("outcome")
    if outcome is not None and outcome not in _OUTCOME_COLORS:
        raise ValueError(f"record['outcome'] must be 'success' or 'failure', got {outcome!r}")


def _activity(label: str) -> tuple[str, str]:
    """Split ``"room: activity"`` into ``(room, activity)``."""
    room, sep, act = label.partition(": ")
    return (room, act) if sep else ("", label)


def plot_timeline(
    record: Mapping[str, Any],
    path: str | os.PathLike[str],
    *,
    lanes: Sequence[str] | None = None,
    dpi: int = 100,
) -> Path:
    """Draw an episode timeline (format in the module docstring) and write it to ``path``.

    Parameters
    ----------
    record:
        the timeline record.
    path:
        output file; ``.png`` (default choice), ``.svg`` or ``.pdf``. Its folder must exist.
    lanes:
        the actor lanes to draw, top to bottom; ``None`` draws every lane of the record in its
        order. Names missing from the record raise ``ValueError``.
    dpi:
        resolution of raster output.

    Returns
    -------
    Path
        the path written.
    """
    validate_timeline_record(record)
    out = check_output_path(path, TIMELINE_FORMATS)
    Figure, FigureCanvasAgg = _require_matplotlib()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    all_lanes: Mapping[str, Sequence[Mapping[str, Any]]] = record["lanes"]
    names = list(all_lanes) if lanes is None else list(lanes)
    missing = [n for n in names if n not in all_lanes]
    if missing:
        raise ValueError(f"lanes {missing} are not in the record (it has {list(all_lanes)})")
    ticks = max(int(record["ticks"]), 1)
    actions = list(record.get("robot_actions") or [])
    window = record.get("window")

    # one colour per activity, in order of first appearance (deterministic)
    import matplotlib

    cmap = matplotlib.colormaps["tab20"]
    colors: dict[str, Any] = {}
    for name in names:
        for seg in all_lanes[name]:
            act = _activity(str(seg.get("label", "")))[1]
            if act not in colors:
                colors[act] = cmap(_PALETTE[len(colors) % len(_PALETTE)])

    # robot action labels go on text levels under the robot lane, each label on the first
    # level where it does not overlap the previous one (greedy interval packing)
    ticks_per_char = 0.0066 * ticks
    level_end: list[float] = []
    placed: list[tuple[int, int, str, bool]] = []  # tick, level, text, ok
    for act in sorted(actions, key=lambda a: int(a["tick"])):
        t = int(act["tick"])
        text = str(act.get("label", ""))
        if len(text) > _MAX_ACTION_CHARS:
            text = text[:_MAX_ACTION_CHARS - 3] + "..."
        half = len(text) * ticks_per_char / 2
        level = next((k for k, e in enumerate(level_end) if t - half > e), None)
        if level is None:
            if len(level_end) < _MAX_LEVELS:
                level = len(level_end)
                level_end.append(-1e9)
            else:  # too crowded: reuse the level that frees up first
                level = min(range(len(level_end)), key=lambda k: level_end[k])
        level_end[level] = t + half + 0.3
        placed.append((t, level, text, bool(act.get("ok", True))))
    n_levels = max(len(level_end), 1)

    rows = names + [_ROBOT_LANE]
    level_h = 0.3
    robot_y = 0.0
    ypos = {name: 1.0 + (len(names) - 1 - i) for i, name in enumerate(names)}
    ypos[_ROBOT_LANE] = robot_y
    top_y = max(ypos.values()) + 0.6
    height = 1.3 + 0.5 * (len(names) + 1) + 0.17 * n_levels + 0.22 * ((len(colors) + 6) // 3)
    fig = Figure(figsize=(10, height), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    bar_h = 0.62

    if window is not None:
        onset, deadline = int(window["onset_tick"]), int(window["deadline_tick"])
        ax.axvspan(onset, deadline, color=_WINDOW_COLOR, alpha=0.28, zorder=0, lw=0)
        ax.axvline(onset, color="#9a6b00", ls="--", lw=1.2, zorder=3)
        ax.axvline(deadline, color="#9a6b00", ls="-", lw=1.4, zorder=3)
        ax.text(onset, top_y, " onset", color="#7a5500", fontsize=8, va="top", ha="left")
        ax.text(deadline, top_y, " deadline", color="#7a5500", fontsize=8, va="top", ha="left")

    for name in names:
        y = ypos[name]
        for seg in all_lanes[name]:
            start, end = int(seg["start"]), int(seg["end"])
            room, act = _activity(str(seg.get("label", "")))
            width = max(end - start, 0.25)  # a zero-length segment is still visible
            ax.broken_barh([(start, width)], (y - bar_h / 2, bar_h), facecolors=colors[act],
                           edgecolors="white", linewidth=0.8, zorder=2)
            if room and width >= (len(room) + 1) * ticks_per_char * 1.1:
                ax.text(start + width / 2, y, room, ha="center", va="center", fontsize=7,
                        color="#202020", zorder=4, clip_on=True)

    ax.axhline(robot_y, color="#d9d9d9", lw=0.8, zorder=1)
    for t, level, text, ok in placed:
        if ok:
            ax.plot([t], [robot_y], marker="v", ms=9, color=_ROBOT_COLOR, zorder=5, ls="none")
        else:
            ax.plot([t], [robot_y], marker="x", ms=8, mew=2, color="#555555", zorder=5,
                    ls="none")
        ax.text(t, robot_y - 0.28 - level * level_h, text, fontsize=6.5, ha="center", va="top",
                color="#5a1010" if ok else "#555555", zorder=5, clip_on=True)

    ax.set_yticks([ypos[n] for n in rows])
    ax.set_yticklabels(rows)
    ax.get_yticklabels()[-1].set_color(_ROBOT_COLOR)
    ax.set_ylim(robot_y - 0.4 - n_levels * level_h, top_y)
    ax.set_xlim(0, ticks)
    ax.set_xlabel("tick")
    ax.grid(axis="x", color="#e6e6e6", lw=0.6, zorder=0)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

    outcome = record.get("outcome")
    parts = [str(record.get("episode_id", "episode"))]
    if record.get("family"):
        parts.append(str(record["family"]))
    if record.get("agent"):
        parts.append(f"agent: {record['agent']}")
    title = "  |  ".join(parts)
    if outcome:
        title += f"  |  outcome: {str(outcome).upper()}"
    if window is None:
        title += "  |  no help needed"
    ax.set_title(title, fontsize=10, color=_OUTCOME_COLORS.get(str(outcome), "#202020"),
                 loc="left")

    handles: list[Any] = [Patch(facecolor=c, label=a or "(unlabelled)") for a, c in colors.items()]
    if window is not None:
        handles.append(Patch(facecolor=_WINDOW_COLOR, alpha=0.4, label="intervention window"))
    handles.append(Line2D([], [], marker="v", ms=7, color=_ROBOT_COLOR, ls="none",
                          label="robot line executed"))
    handles.append(Line2D([], [], marker="x", ms=7, mew=2, color="#555555", ls="none",
                          label="robot line failed"))
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=7.5, frameon=False)
    fig.savefig(out, dpi=dpi, format=out.suffix.lower()[1:])
    log.debug("wrote timeline %s", out)
    return out
