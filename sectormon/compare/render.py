"""``sectormon compare``'s output: aligned text tables, Markdown and CSV (JSON: ``Comparison.to_json``).

Numbers read like a report, never in e-notation: four significant digits in plain decimals, with
thousands separators from 1,000 up (:func:`plain`); the CSV and JSON keep every digit. The two
sides are named by their runs' labels (the file names, or ``--labels A,B``) in the heading and the
column titles, with each run's elapsed time; each scope's table is followed by the events' absolute
counts on both sides. A relative change is not given where the baseline is zero or next to it
(under a millionth of the other side): it would be a huge number that says nothing.

Rows with no value on either side say nothing: text and Markdown leave them out (with a count
under the table) unless ``show_all``; the CSV, like the JSON, keeps every row. Sides recorded
with ``--sample`` add how the hot spots' shares moved (CSV scopes ``hotspots:objects`` and
``hotspots:functions``).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence

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
SIGNIFICANT = 4
MAX_DECIMALS = 12
NEAR_ZERO = 1e-6
"""A baseline under this share of the other side is next to zero: no relative change is given."""
LABEL_WIDTH = 28


def plain(v: float | None, *, signed: bool = False) -> str:
    """``v`` with :data:`SIGNIFICANT` significant digits in plain decimals: ``0.2526``,
    ``36.85``, ``68,050,150``, ``0.0007474``; ``n/a`` for ``None``."""
    if v is None:
        return NA
    if not math.isfinite(v):
        return NA
    sign = "+" if signed else ""
    if v == 0:
        return f"{sign}0"
    magnitude = math.floor(math.log10(abs(v)))
    decimals = min(MAX_DECIMALS, max(0, SIGNIFICANT - 1 - magnitude))
    if decimals == MAX_DECIMALS and abs(v) < 10.0**-MAX_DECIMALS:
        return f"{sign}0" if not signed else ("+0" if v > 0 else "-0")
    return format(v, f"{sign},.{decimals}f")


def fmt_pct(v: float | None) -> str:
    return NA if v is None else f"{v * 100:+.2f}%"


def relative(row: Row) -> float | None:
    """The row's relative change, ``None`` where its baseline is zero or next to it."""
    if row.relative is None or row.base is None or row.other is None:
        return row.relative
    if abs(row.base) < NEAR_ZERO * abs(row.other):
        return None
    return row.relative


def side_label(run: RunMetrics) -> str:
    """A run's name in column titles: its label without the recording's extension, cut to fit."""
    label = re.sub(r"\.jsonl(\.gz)?$", "", run.label)
    # Cut from the left: runs of one study differ at the end of their names (…-off, …-on).
    return label if len(label) <= LABEL_WIDTH else "…" + label[-(LABEL_WIDTH - 1) :]


def columns(cmp: Comparison) -> tuple[str, ...]:
    base, other = side_label(cmp.base), side_label(cmp.other)
    if base == other:  # two runs of one name (two directories): say which side is which
        base, other = f"{base} (base)", f"{other} (other)"
    return ("Metric", "Unit", base, other, "Delta", "Improvement", "Rel", "Cov B", "Cov O")


def fmt_cov(v: float | None) -> str:
    return NA if v is None else f"{v * 100:.0f}%"


def shown_rows(sc: ScopeComparison, show_all: bool) -> list[Row]:
    """The rows to print: those with a value on at least one side, or all with ``show_all``."""
    return [r for r in sc.rows if show_all or r.base is not None or r.other is not None]


def table_rows(rows: Sequence[Row]) -> list[tuple[str, ...]]:
    return [
        (
            r.metric,
            r.unit,
            _marked(plain(r.base), r.proxy_base, r.error_base),
            _marked(plain(r.other), r.proxy_other, r.error_other),
            plain(r.delta, signed=True),
            plain(r.improvement, signed=True),
            fmt_pct(relative(r)),
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
    """``label (kind)``, the region compared when it is one region (``--region``), and the
    elapsed time it covers."""
    region = run.info.get("region")
    seconds = run.info.get("seconds")
    elapsed = f", {plain(float(seconds))} s" if isinstance(seconds, (int, float)) else ""
    return f"{run.label} ({run.kind})" + (f", region {region}" if region is not None else "") + elapsed


def _heading(cmp: Comparison) -> list[str]:
    return [
        f"Baseline: {side_title(cmp.base)}",
        f"Other:    {side_title(cmp.other)}",
        *(f"warning: {line}" for line in dict.fromkeys(cmp.mixed)),
    ]


def count_rows(cmp: Comparison, scope: str) -> list[tuple[str, ...]]:
    """The events' absolute counts of ``scope`` on both sides, with their change."""
    base = cmp.base.counts.get(scope, {})
    other = cmp.other.counts.get(scope, {})
    rows: list[tuple[str, ...]] = []
    for event in dict.fromkeys((*base, *other)):
        b, o = base.get(event), other.get(event)
        delta = None if b is None or o is None else o - b
        near_zero = b is None or o is None or abs(b) < NEAR_ZERO * abs(o) or b == 0
        change = None if delta is None or near_zero or b is None else delta / abs(b)
        rows.append((event, "count", plain(b), plain(o), plain(delta, signed=True), fmt_pct(change)))
    return rows


def render_text(cmp: Comparison, *, show_all: bool = False) -> str:
    """Aligned tables per scope, like the PMU document's comparison script (section 6.6)."""
    titles = columns(cmp)
    out = [
        *_heading(cmp),
        "Improvement > 0: the other run is better. Rel = improvement / |baseline| (the plain change where a "
        "metric has no better direction; n/a where the baseline is 0 or next to it). n/a = not computable.",
    ]
    tables = [(sc, shown_rows(sc, show_all)) for sc in cmp.scopes]
    cells = {sc.scope: table_rows(rows) for sc, rows in tables}
    counts = {sc.scope: count_rows(cmp, sc.scope) for sc in cmp.scopes}
    widths = [len(c) for c in titles]
    for table in (*cells.values(), *counts.values()):
        for row in table:
            for i, cell in enumerate(row):  # a counts row has fewer cells than a metrics row
                widths[i] = max(widths[i], len(cell))
    widths[0] = max(widths[0], 32)
    rule = sum(widths) + len(widths) - 1
    for sc, rows in tables:
        out += ["", "=" * rule, f"  {sc.scope}", "=" * rule]
        out.append(_line(titles, widths))
        out.append("-" * rule)
        out += [_line(row, widths) for row in cells[sc.scope]]
        out += _hidden_note(sc, len(rows))
        out += _proxy_note(rows)
        out.append(summary(sc))
        if counts[sc.scope]:
            out += ["", _line(("Event", "", titles[2], titles[3], "Delta", "Rel"), widths), "-" * rule]
            out += [_line(row, widths) for row in counts[sc.scope]]
    if cmp.hotspots is not None:
        out += ["", "=" * rule, *render_lines(cmp.hotspots)]
    out += [f"warning: {w}" for w in dict.fromkeys(cmp.warnings) if w not in cmp.mixed]
    return "\n".join(out) + "\n"


def _line(cells: Iterable[str], widths: list[int]) -> str:
    parts = []
    for i, (cell, width) in enumerate(zip(cells, widths, strict=False)):
        parts.append(cell.ljust(width) if i < 2 else cell.rjust(width))  # name and unit to the left
    return " ".join(parts).rstrip()


def render_markdown(cmp: Comparison, *, show_all: bool = False) -> str:
    base = _md(side_title(cmp.base))
    other = _md(side_title(cmp.other))
    titles = columns(cmp)
    out = [f"**Baseline:** {base} — **Other:** {other}"]
    out += [f"\n**Warning:** {_md(line)}" for line in dict.fromkeys(cmp.mixed)]
    for sc in cmp.scopes:
        rows = shown_rows(sc, show_all)
        out += ["", f"### {sc.scope}", ""]
        out.append("| " + " | ".join(_md(t) for t in titles) + " |")
        out.append("|" + "---|" * 2 + "---:|" * (len(titles) - 2))
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
