"""A hot-spot report: the table plus how it was made (event, period, counted total, overhead).

:class:`HotspotReport` is plain data; :meth:`HotspotReport.to_json` is the ``--json`` object and
:func:`render_text` the terminal form. Every number says its unit; what is unknown is ``null`` in
JSON and ``n/a`` in text, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sectormon.data.hotspot_table import SCHEMA, HotspotRow, HotspotTable


@dataclass(frozen=True, slots=True)
class Overhead:
    """sectormon's own CPU time while the target ran, and the target's (a launched command's)."""

    wall_seconds: float
    cpu_seconds: float
    target_cpu_seconds: float | None = None

    @property
    def fraction(self) -> float | None:
        """sectormon's CPU time as a fraction of one core over the run."""
        return self.cpu_seconds / self.wall_seconds if self.wall_seconds > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "wall_seconds": self.wall_seconds,
            "sectormon_cpu_seconds": self.cpu_seconds,
            "sectormon_cpu_fraction": self.fraction,
            "target_cpu_seconds": self.target_cpu_seconds,
        }


@dataclass(frozen=True, slots=True)
class HotspotReport:
    """Everything ``sectormon hotspots`` prints.

    ``event`` is the name shown (a profile event or the spec), ``spec`` what perf opened;
    ``period`` or ``freq`` is how it was sampled. ``counted`` is the event's total in counting
    mode over the same run (None: it could not be read); ``multiplexed`` says that total was
    scaled by the kernel's enabled/running times.
    """

    event: str
    spec: str
    period: int
    freq: int
    table: HotspotTable
    overhead: Overhead
    target: dict[str, Any]
    multiplexed: bool = False
    throttled: int = 0
    lines: bool = False
    warnings: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "event": {"name": self.event, "spec": self.spec},
            "period": self.period or None,
            "freq_hz": self.freq or None,
            "target": self.target,
            "counted_total_multiplexed": self.multiplexed,
            "throttled": self.throttled,
            **self.table.to_json(lines=self.lines),
            "overhead": self.overhead.to_json(),
            "warnings": list(self.warnings),
        }


def _number(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _rows(
    title: str, rows: Sequence[HotspotRow], total: int, columns: Sequence[str], buckets: Sequence[str]
) -> list[str]:
    """One view as an aligned text table: share, samples, estimate, then ``columns``: the row's
    name, then its module and detail (functions: the source line comes last), then the buckets."""
    head = ["share", "samples", "estimate", *columns, *buckets]
    body = []
    for row in rows:
        detail = row.detail or ""
        own = [row.name, row.module, detail] if columns[0] == "function" else [row.name, detail, row.module]
        counts = [str(n) for n in row.buckets] if row.buckets is not None else []
        body.append([_percent(row.share), str(row.samples), _number(row.estimate), *own, *counts])
    shown = f"{len(rows)} of {total}" if len(rows) < total else str(total)
    out = [f"{title} ({shown})"]
    if not body:
        return [*out, "  (none)"]
    widths = [max(len(head[i]), *(len(r[i]) for r in body)) for i in range(len(head))]
    numeric = {0, 1, 2, *range(3 + len(columns), len(head))}

    def fmt(cells: Sequence[str]) -> str:
        return (
            "  "
            + "  ".join(
                c.rjust(widths[i]) if i in numeric else c.ljust(widths[i]) for i, c in enumerate(cells)
            ).rstrip()
        )

    return [*out, fmt(head), *(fmt(r) for r in body)]


def render_text(report: HotspotReport) -> str:
    """The report for a terminal: a header that says how the numbers were made, then the views."""
    table = report.table
    if report.period:
        how = "every event" if report.period == 1 else f"every {report.period:,} events"
    else:
        how = f"about {report.freq:,} times a second"
    lines = [
        f"Hot spots of {report.event} ({report.spec}), sampled {how}: {table.samples:,} samples, "
        f"{table.lost:,} lost",
    ]
    if table.total is None:
        lines.append("  counted total: n/a (the counting-mode event could not be read): no estimates")
    else:
        scaled = ", scaled for multiplexing" if report.multiplexed else ""
        lines.append(
            f"  counted total: {table.total:,} events (counting mode, same run{scaled}); "
            f"scale = total / (sampled x period) = {table.total:,} / {table.sampled_events:,} = "
            f"{_number(table.scale, 3)}"
        )
    samples = table.samples or 1
    carry = (
        f"  samples with a data address: {_percent(table.with_address / samples)}, "
        f"with a latency: {_percent(table.with_weight / samples)}"
    )
    lines.append(carry)
    overhead = report.overhead
    target_cpu = (
        f"; the target used {overhead.target_cpu_seconds:.3f} s CPU"
        if overhead.target_cpu_seconds is not None
        else ""
    )
    lines.append(
        f"  overhead: sectormon used {overhead.cpu_seconds:.3f} s CPU while sampling "
        f"({_percent(overhead.fraction)} of one core over {overhead.wall_seconds:.2f} s){target_cpu}"
    )
    lines.append(
        "  estimate = scale x sampled x period, in events: which locations take the most, not exact counts"
    )
    buckets = list(table.bucket_names)
    counts = table.counts
    lines.append("")
    lines += _rows(
        "Functions", table.functions, counts.get("functions", 0), ["function", "module", "source"], buckets
    )
    if table.statements:
        lines.append("")
        columns = ["line", "function", "module"]
        lines += _rows("Source lines", table.statements, counts.get("source_lines", 0), columns, buckets)
    lines.append("")
    if table.with_address:
        columns = ["object", "kind", "module"]
        lines += _rows("Data objects", table.objects, counts.get("objects", 0), columns, buckets)
    else:
        lines.append("Data objects: none (no sample carried a data address: this event or PMU gives none)")
    if report.lines and table.with_address:
        lines.append("")
        title = f"Cache lines ({table.line_size} bytes)"
        columns = ["cache line", "object", "module"]
        lines += _rows(title, table.lines, counts.get("cache_lines", 0), columns, buckets)
    for warning in report.warnings:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)
