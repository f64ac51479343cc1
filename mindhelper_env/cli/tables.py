"""Result tables of ``evaluate`` and ``score``: rich tables on a terminal, never cutting a
number or a name (cells fold and headers wrap in a narrow terminal; piped output is as wide
as the table needs), or ``--format markdown|csv|json``."""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from mindhelper_env.cli.base import console, print_json

__all__ = ["FORMATS", "print_table", "print_breakdown", "print_efficiency", "print_trials",
           "model_warnings", "print_results", "main_rows", "unmeasured", "MARK"]

#: ``--format`` values (``rich``: the terminal tables).
FORMATS = ("rich", "markdown", "csv", "json")
MAIN_KEYS = ("PHA", "PHR", "TA", "SR", "AC", "PIR", "PSR", "PIA", "silent_all", "harm_rate")
MAIN_COLUMNS = ("PHA ↑", "PHR ↑", "TA ↑", "SR ↑", "AC ↑", "PIR ↑", "PSR ↑", "PIA ↑",
                "Silent-all", "Harm ↓")


def episodes_cell(m: Mapping[str, Any]) -> str:
    return f"{m.get('episodes', 0)} ({m.get('n_help', 0)}/{m.get('n_silent', 0)})"


def print_rich(t: Any, header: Sequence[str], rows: Sequence[Sequence[str]], *,
               bold_first: bool = False, left: Sequence[str] = (),
               section_ends: Sequence[bool] | None = None) -> None:
    """Print ``rows`` under ``header`` with the title and caption of the rich table ``t`` so
    that no cell is ever cut: every column is at least as wide as its longest word (a number
    is one word) and cells wrap at spaces or fold; a console that is not a terminal is as
    wide as the table needs; on a terminal too narrow for every column, the columns are
    folded into several tables, each repeating the first column."""
    from rich.console import Console
    from rich.table import Table

    out = console()
    mins, natural = [], []
    for k, name in enumerate(header):
        cells = [*(str(r[k]) for r in rows), name]
        longest = max((len(w) for c in cells for w in c.split()), default=1)
        mins.append(min(longest, 30) if k == 0 else longest)
        natural.append(max(mins[-1], max(len(c) for c in cells)))
    if not sys.stdout.isatty():
        groups = [list(range(1, len(header)))]
    else:
        room = max(20, out.width - 1 - (mins[0] + 3))
        groups, used = [[]], 0
        for k in range(1, len(header)):
            need = mins[k] + 3
            if groups[-1] and used + need > room:
                groups.append([])
                used = 0
            groups[-1].append(k)
            used += need
    for g, cols in enumerate(groups):
        part = Table(title=t.title if g == 0 else None,
                     caption=t.caption if g == len(groups) - 1 else None)
        widths: dict[int, int | None] = {k: None for k in [0, *cols]}
        if sys.stdout.isatty():  # fixed widths: from each column's longest word up
            widths = {k: mins[k] for k in widths}
            spare = out.width - 1 - sum(w + 3 for w in widths.values())
            for k in widths:
                grow = min(max(spare, 0), natural[k] - mins[k])
                widths[k] = mins[k] + grow
                spare -= grow
        for k in [0, *cols]:
            name = header[k]
            part.add_column(name, justify="left" if k == 0 or name in left else "right",
                            style="bold" if k == 0 and bold_first else None,
                            overflow="fold", min_width=mins[k], width=widths[k])
        for i, row in enumerate(rows):
            part.add_row(*(row[k] for k in [0, *cols]),
                         end_section=bool(section_ends[i]) if section_ends else False)
        if sys.stdout.isatty():
            out.print(part)
        else:
            wide = Console(file=sys.stdout, highlight=False, width=100_000)
            need = wide.measure(part).maximum
            Console(file=sys.stdout, highlight=False, width=max(120, need)).print(part)


def main_rows(table: Mapping[str, Mapping[str, Any]],
              metrics: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The headline table as plain rows (agent, the ten metrics, episodes, help, silent)."""
    header = ["agent", *MAIN_KEYS, "episodes", "n_help", "n_silent"]
    rows = []
    for agent, row in table.items():
        m = metrics.get(agent, {})
        rows.append([agent, *("" if row.get(k) is None else f"{float(row[k]):.2f}"
                              for k in MAIN_KEYS),
                     str(m.get("episodes", 0)), str(m.get("n_help", 0)),
                     str(m.get("n_silent", 0))])
    return header, rows


def print_results(fmt_name: str, title: str, result: Mapping[str, Any]) -> None:
    """Print ``result`` (a summary: ``table``, ``metrics``, maybe ``models``, ``trials``) in
    ``fmt_name``: the rich tables, a Markdown or CSV table of the headline metrics, or the
    JSON ``{agent: {metric: percentage}}`` (``--json``)."""
    if fmt_name == "json":
        print_json(result["table"])
        return
    errors = {a: c.get("errors", 0) for a, c in (result.get("agent_errors") or {}).items()}
    flags = unmeasured(result)
    if fmt_name in ("markdown", "csv"):
        header, rows = main_rows(result["table"], result["metrics"])
        if flags:  # the column appears when some row measures a fallback, not its agent
            header = [*header, "flag"]
            rows = [[*r, "+".join(flags.get(r[0], []))] for r in rows]
        if any(errors.values()):  # the column appears when some agent's code raised
            header = [*header, "agent_errors"]
            rows = [[*r, str(errors.get(r[0], 0))] for r in rows]
        trials = result.get("trials")
        if isinstance(trials, Mapping):
            header, rows = _with_trials(header, rows, trials)
        if fmt_name == "csv":
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(rows)
            sys.stdout.write(buf.getvalue())
        else:
            lines = ["| " + " | ".join(header) + " |",
                     "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header)))
                     + "|"]
            lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
            sys.stdout.write(f"**{title}**\n\n" + "\n".join(lines) + "\n")
        sys.stdout.flush()
        return
    if isinstance(result.get("trials"), Mapping):
        title += f" (mean of {result['trials']['k']} trials; episodes per trial)"
    print_table(title, result["table"], result["metrics"], errors, flags)
    if isinstance(result.get("trials"), Mapping):
        print_trials(result["trials"])
    print_breakdown(result["metrics"])


def _with_trials(header: list[str], rows: list[list[str]],
                 trials: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    k = int(trials["k"])
    header = header + ["PHA_low", "PHA_high", "PHR_low", "PHR_high",
                       *(f"PHR_pass^{j}" for j in range(1, k + 1))]
    out = []
    for row in rows:
        iv = trials["interval"].get(row[0], {})
        passes = trials["pass_hat_k"].get(row[0], {})
        extra = []
        for key in ("PHA", "PHR"):
            block = iv.get(key) or {}
            extra += ["" if block.get(b) is None else f"{block[b]:.2f}" for b in ("low", "high")]
        extra += ["" if passes.get(str(j)) is None else f"{passes[str(j)]:.2f}"
                  for j in range(1, k + 1)]
        out.append(row + extra)
    return header, out


def print_trials(trials: Mapping[str, Any]) -> None:
    """Mean ± half of the 95 % interval over trials, and PHR's pass^k."""
    from rich.table import Table

    k = int(trials["k"])
    t = Table(title=f"{k} trials", caption="mean ± half-width of the 95 % t interval over "
              "trials; pass^k: share of help episodes helped precisely in k trials drawn from "
              f"the {k} (pass^{k}: in every trial)")
    keys = ("PHA", "PHR", "PSR", "PIA")
    rows = []
    for agent, iv in trials["interval"].items():
        cells = []
        for key in keys:
            b = iv.get(key) or {}
            if b.get("mean") is None:
                cells.append("n/a")
            else:
                cells.append(f"{b['mean']:.2f} ± {(b['high'] - b['mean']):.2f}")
        passes = trials["pass_hat_k"].get(agent, {})
        cells += [fmt(passes.get(str(j))) for j in range(1, k + 1)]
        rows.append([agent, *cells])
    print_rich(t, ["Agent", *keys, *(f"PHR pass^{j}" for j in range(1, k + 1))], rows,
               bold_first=True)


def fmt(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.2f}"


def print_table(title: str, table: Mapping[str, Mapping[str, Any]],
                metrics: Mapping[str, Mapping[str, Any]],
                errors: Mapping[str, int] | None = None,
                flags: Mapping[str, Sequence[str]] | None = None) -> None:
    """A rich table: the headline PHA and PHR, the paper's Table II, silent-all and harm;
    an ``Agent errors`` column (exceptions of the agent's act/reset) when some agent raised;
    the agents in ``flags`` (:func:`unmeasured`) marked :data:`MARK`."""
    from rich.table import Table

    errors = errors or {}
    flags = flags or {}
    shown = any(errors.values())
    t = Table(title=title, caption="percentages; PHA = (PHR + PSR) / 2, PHR = precise, "
              "successful and harmless help; TA SR AC = action evaluation, PIR PSR PIA = "
              "precision intervention; n/a: no episode to measure"
              + ("; agent errors: exceptions raised by the agent's act/reset (each decision "
                 "became 'none')" if shown else "")
              + (f"; {MARK}: NOT THIS AGENT'S SCORE, the row measures its fallback (silence): "
                 "most of its decisions raised or most of its model calls failed or did not "
                 "parse (see the warnings)" if flags else ""))
    header = ["Agent", *MAIN_COLUMNS, "Episodes (help/silent)",
              *(["Agent errors"] if shown else [])]
    rows = [[f"{agent} {MARK}" if agent in flags else agent, *(fmt(row.get(k)) for k in MAIN_KEYS),
             episodes_cell(metrics.get(agent, {})),
             *([str(errors.get(agent, 0))] if shown else [])]
            for agent, row in table.items()]
    print_rich(t, header, rows, bold_first=True)


BREAKDOWN_SECTIONS = (("task_type", "type"), ("ability", "ability"), ("twin_group", "group"))


def fmt1(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.1f}"


def breakdown_cell(block: Mapping[str, Any], counts: tuple[int, int] | None) -> str:
    cell = f"{fmt1(block.get('PHA'))} ({fmt1(block.get('PHR'))}/{fmt1(block.get('PSR'))})"
    own = (block.get("n_help", 0), block.get("n_silent", 0))
    return cell if own == counts else f"{cell} \\[{own[0]}/{own[1]}]"


def print_breakdown(metrics: Mapping[str, Mapping[str, Any]]) -> None:
    """The ability breakdown: PHA (PHR / PSR) per task type, ability and twin group."""
    blocks = {a: m.get("breakdown") for a, m in metrics.items() if m.get("breakdown")}
    if not blocks:
        return
    from rich.table import Table

    t = Table(title="ability breakdown", caption="PHA (PHR / PSR), percentages; PHA = (PHR over "
              "the group's help episodes + PSR over its silent ones) / 2, n/a when a side is "
              "empty; a silent twin counts toward its help family's groups; \\[help/silent] "
              "where an agent's episodes differ from the row's")
    first = next(iter(blocks.values()))
    rows: list[list[str]] = []
    ends: list[bool] = []
    for section, label in BREAKDOWN_SECTIONS:
        names = list(first.get(section, {}))
        for other in blocks.values():
            names += [n for n in other.get(section, {}) if n not in names]
        for k, name in enumerate(names):
            ref = first.get(section, {}).get(name) or {"episodes": 0, "n_help": 0, "n_silent": 0}
            counts = (ref.get("n_help", 0), ref.get("n_silent", 0))
            cells = [breakdown_cell(b.get(section, {}).get(name) or {}, counts)
                     for b in blocks.values()]
            rows.append([f"{label} {name}", f"{ref.get('episodes', 0)} ({counts[0]}/{counts[1]})",
                         *cells])
            ends.append(k == len(names) - 1)
    print_rich(t, ["Group", "Episodes (help/silent)", *blocks], rows, bold_first=True,
               section_ends=ends)


def print_efficiency(metrics: Mapping[str, Mapping[str, Any]],
                      models: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """The efficiency table (model calls, tokens, time, reduction against direct-vlm,
    decisions by source), when any agent called a model."""
    from mindhelper_env.models.report import efficiency_rows

    eff = {a: (m.get("efficiency") or {}) for a, m in metrics.items()}
    if not any((e.get("model_calls_per_episode") or 0) > 0 for e in eff.values()):
        return
    from rich.table import Table

    models = models or {}
    reduction = {r["agent"]: r["reduction_vs_baseline"] for r in efficiency_rows(metrics)}
    t = Table(title="efficiency", caption="per episode unless noted; (est.) = token counts "
              "estimated because the server sent no usage; vs direct-vlm = reduction of "
              "tokens per episode")
    cols = (("calls", "model_calls_per_episode", 2), ("tok / ep", "tokens_per_episode", 0),
            ("tok / call", "tokens_per_call", 0),
            ("prompt tok", "prompt_tokens_per_episode", 0),
            ("compl. tok", "completion_tokens_per_episode", 0),
            ("s / decision", "seconds_per_decision", 3),
            ("parse failures", "parse_failures", 0))
    rows = []
    for agent, e in eff.items():
        cells = []
        for _, key, digits in cols:
            v = e.get(key)
            cells.append("n/a" if v is None else f"{float(v):,.{digits}f}")
        if e.get("tokens_estimated_episodes"):
            cells[1] += " (est.)"
        red = reduction.get(agent)
        cells.append("" if red is None else f"{red:.1f} %")
        share = (models.get(agent) or {}).get("share_by_source") or {}
        cells.append(", ".join(f"{k} {v:.0f} %" for k, v in share.items()))
        rows.append([agent, *cells])
    header = ["Agent", *(title for title, _, _ in cols), "vs direct-vlm", "decisions by source"]
    print_rich(t, header, rows, bold_first=True, left=("decisions by source",))


def model_warnings(models: Mapping[str, Mapping[str, Any]] | None) -> bool:
    """Print one warning line per agent and model error kind, and one per agent most of
    whose model calls failed or did not parse; True when there is such an agent."""
    from mindhelper_env.models.report import mostly_failed, warning_lines

    for line in warning_lines(models or {}):
        sys.stderr.write(f"mindhelper: warning: {line}\n")
    return any(mostly_failed(r) for r in (models or {}).values())


#: The mark of a row that does not measure its agent (:func:`unmeasured`).
MARK = "!"


def unmeasured(result: Mapping[str, Any]) -> dict[str, list[str]]:
    """``{agent: reasons}`` for the rows that measure a fallback (silence), not the agent:
    ``"agent_errors"`` (most of its decisions raised) and ``"model_failed"`` (most of its
    model calls failed or did not parse)."""
    from mindhelper_env.evaluation.summary import mostly_raised
    from mindhelper_env.models.report import mostly_failed

    out: dict[str, list[str]] = {}
    for agent, counts in (result.get("agent_errors") or {}).items():
        if counts.get("errors") and mostly_raised(counts):
            out.setdefault(agent, []).append("agent_errors")
    for agent, rep in (result.get("models") or {}).items():
        if mostly_failed(rep):
            out.setdefault(agent, []).append("model_failed")
    return out
