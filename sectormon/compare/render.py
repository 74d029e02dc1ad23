"""``sectormon compare``'s output: aligned text tables, Markdown and CSV (JSON: ``Comparison.to_json``).

Numbers: one format per column of a table, so values line up and read alike: fixed with 6
decimals when every value of the column is between 1e-3 and 1e7 in size (or 0), else scientific
for the whole column. Baseline and Sector share a format, and so do Delta and Improvement.

Rows with no value on either side say nothing: text and Markdown leave them out (with a count
under the table) unless ``show_all``; the CSV, like the JSON, keeps every row. Sides recorded
with ``--sample`` add how the hot spots' shares moved (CSV scopes ``hotspots:objects`` and
``hotspots:functions``).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Sequence

from sectormon.compare.hotspots import render_lines
from sectormon.compare.runs import Comparison, Row, ScopeComparison
from sectormon.data.run_metrics import RunMetrics

NA = "n/a"
PROXY_MARK = "≈"
"""Before a value estimated from ``--proxy`` stand-ins, as the TUI marks it."""
PROXY_NOTE = (
    f"{PROXY_MARK}: estimated from --proxy stand-in units, scaled to the scope, ± its 95 % error bound "
    "(n/a: unknown; docs/perf.md)"
)
FIXED_RANGE = (1e-3, 1e7)
COLUMNS = ("Metric", "Unit", "Baseline", "Sector", "Delta", "Improvement", "Rel", "Cov B", "Cov O")
Formatter = Callable[[float | None], str]


def column_format(values: Iterable[float | None], *, signed: bool = False) -> Formatter:
    """The one format of a column holding ``values`` (module docstring)."""
    sizes = [abs(v) for v in values if v is not None and v != 0]
    fixed = all(FIXED_RANGE[0] <= size < FIXED_RANGE[1] for size in sizes)
    spec = ("+" if signed else "") + (".6f" if fixed else ".6e")

    def fmt(v: float | None) -> str:
        return NA if v is None else format(v, spec)

    return fmt


def fmt_pct(v: float | None) -> str:
    return NA if v is None else f"{v * 100:+.2f}%"


def fmt_cov(v: float | None) -> str:
    return NA if v is None else f"{v * 100:.0f}%"


def shown_rows(sc: ScopeComparison, show_all: bool) -> list[Row]:
    """The rows to print: those with a value on at least one side, or all with ``show_all``."""
    return [r for r in sc.rows if show_all or r.base is not None or r.other is not None]


def table_rows(rows: Sequence[Row]) -> list[tuple[str, ...]]:
    values = column_format([v for r in rows for v in (r.base, r.other)])
    changes = column_format([v for r in rows for v in (r.delta, r.improvement)], signed=True)
    return [
        (
            r.metric,
            r.unit,
            _marked(values(r.base), r.proxy_base, r.error_base),
            _marked(values(r.other), r.proxy_other, r.error_other),
            changes(r.delta),
            changes(r.improvement),
            fmt_pct(r.relative),
            fmt_cov(r.coverage_base),
            fmt_cov(r.coverage_other),
        )
        for r in rows
    ]


def _marked(text: str, proxied: bool, error: float | None) -> str:
    """A proxied value as ``≈1.250000 ±12%`` (``±n/a``: its bound is unknown)."""
    if not proxied or text == NA:
        return text
    return f"{PROXY_MARK}{text} ±" + (NA if error is None else f"{100 * error:.2g}%")


def _proxy_note(rows: Sequence[Row]) -> list[str]:
    """The mark's meaning under a table that has it."""
    return [PROXY_NOTE] if any(r.proxy_base or r.proxy_other for r in rows) else []


def _hidden_note(sc: ScopeComparison, shown: int) -> list[str]:
    hidden = len(sc.rows) - shown
    if not hidden:
        return []
    metrics = "metric" if hidden == 1 else "metrics"
    return [f"({hidden} {metrics} with no value on either side not shown; --all shows them)"]


def summary(sc: ScopeComparison) -> str:
    ipc = "n/a" if sc.ipc_improvement is None else f"{sc.ipc_improvement:+.2f} % (from {sc.ipc_source})"
    l2 = "n/a" if sc.l2_effectiveness is None else f"{sc.l2_effectiveness:.4f}"
    source = f" ({sc.l2_source} other/base)" if sc.l2_source else ""
    return f"IPC_improvement: {ipc}   L2_effectiveness: {l2}{source}"


def side_title(run: RunMetrics) -> str:
    """``label (kind)``, and the region compared when it is one region (``--region``)."""
    region = run.info.get("region")
    return f"{run.label} ({run.kind})" + (f", region {region}" if region is not None else "")


def _heading(cmp: Comparison) -> list[str]:
    return [
        f"Baseline: {side_title(cmp.base)}",
        f"Sector:   {side_title(cmp.other)}",
        *(f"warning: {line}" for line in cmp.mixed),
    ]


def render_text(cmp: Comparison, *, show_all: bool = False) -> str:
    """Aligned tables per scope, like the PMU document's comparison script (section 6.6)."""
    out = [
        *_heading(cmp),
        "Improvement > 0: the sector run is better. Rel = improvement / |baseline| (the plain change where a "
        "metric has no better direction). n/a = not computable.",
    ]
    tables = [(sc, shown_rows(sc, show_all)) for sc in cmp.scopes]
    cells = {sc.scope: table_rows(rows) for sc, rows in tables}
    widths = [len(c) for c in COLUMNS]
    for table in cells.values():
        for row in table:
            widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    widths[0] = max(widths[0], 32)
    rule = sum(widths) + len(widths) - 1
    for sc, rows in tables:
        out += ["", "=" * rule, f"  {sc.scope}", "=" * rule]
        out.append(_line(COLUMNS, widths))
        out.append("-" * rule)
        out += [_line(row, widths) for row in cells[sc.scope]]
        out += _hidden_note(sc, len(rows))
        out += _proxy_note(rows)
        out.append(summary(sc))
    if cmp.hotspots is not None:
        out += ["", "=" * rule, *render_lines(cmp.hotspots)]
    out += [f"warning: {w}" for w in cmp.warnings if w not in cmp.mixed]
    return "\n".join(out) + "\n"


def _line(cells: Iterable[str], widths: list[int]) -> str:
    parts = []
    for i, (cell, width) in enumerate(zip(cells, widths, strict=False)):
        parts.append(cell.ljust(width) if i < 2 else cell.rjust(width))  # name and unit to the left
    return " ".join(parts).rstrip()


def render_markdown(cmp: Comparison, *, show_all: bool = False) -> str:
    base = _md(side_title(cmp.base))
    other = _md(side_title(cmp.other))
    out = [f"**Baseline:** {base} — **Sector:** {other}"]
    out += [f"\n**Warning:** {_md(line)}" for line in cmp.mixed]
    for sc in cmp.scopes:
        rows = shown_rows(sc, show_all)
        out += ["", f"### {sc.scope}", ""]
        out.append("| " + " | ".join(COLUMNS) + " |")
        out.append("|" + "---|" * 2 + "---:|" * (len(COLUMNS) - 2))
        out += ["| " + " | ".join(_md(c) for c in cells) + " |" for cells in table_rows(rows)]
        out += ["", *_hidden_note(sc, len(rows)), *_proxy_note(rows), summary(sc)]
    if cmp.hotspots is not None:
        out += ["", "### hot spots", "", "```", *render_lines(cmp.hotspots), "```"]
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return re.sub(r"([|\\`*_])", r"\\\1", text)


CSV_FIELDS = (
    "scope",
    "metric",
    "unit",
    "better",
    "baseline",
    "sector",
    "delta",
    "improvement",
    "relative",
    "coverage_baseline",
    "coverage_sector",
    "value",
    "proxy",
)


def render_csv(cmp: Comparison) -> str:
    """One row per scope and metric; ``IPC_improvement`` and ``L2_effectiveness`` rows fill ``value``."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_FIELDS)

    def cell(v: float | None) -> str:
        return "" if v is None else repr(v)

    for sc in cmp.scopes:
        for r in sc.rows:
            writer.writerow(
                (
                    sc.scope,
                    r.metric,
                    r.unit,
                    r.better,
                    cell(r.base),
                    cell(r.other),
                    cell(r.delta),
                    cell(r.improvement),
                    cell(r.relative),
                    cell(r.coverage_base),
                    cell(r.coverage_other),
                    "",
                    "+".join(r.proxied_sides),
                )
            )
        writer.writerow((sc.scope, "IPC_improvement", "%", "higher", *[""] * 7, cell(sc.ipc_improvement), ""))
        writer.writerow(
            (sc.scope, "L2_effectiveness", "ratio", "lower", *[""] * 7, cell(sc.l2_effectiveness), "")
        )
    shift = cmp.hotspots
    if shift is not None:  # each location's share of the sampled events; delta = sector - baseline
        for view, moves in (("objects", shift.objects), ("functions", shift.functions)):
            for m in moves:
                share = (cell(m.base), cell(m.other), cell(m.delta))
                writer.writerow((f"hotspots:{view}", m.name, "share", "none", *share, *[""] * 6))
    return buf.getvalue()
