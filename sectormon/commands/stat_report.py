"""``sectormon stat``'s text: perf stat's layouts (the summary, ``-x SEP`` CSV, ``-I`` intervals).

Pure formatting: records in, lines out, no session and no I/O, so the layouts are tested against
perf's own output shapes alone. The widths and formats are perf 6.1's (tools/perf/util/
stat-display.c): counts right-aligned in 18 columns (``msec`` for the software clocks, with two
decimals), the unit in 4, the event name in 32, the metric column in 38, ``(63.21%)`` after a
count that ran part of the time, ``( +-  1.20% )`` after a mean of ``-r`` runs; in CSV the fields
value, unit, event, [variance,] run time, percentage running, metric value, metric unit.

sectormon's metrics (the profile's formulas) are not one event's shadow as perf's are: each is a
line of its own under the events, ``# value unit name``, with its coverage as ``(63.21%)`` when its
inputs were counted part of the time; in CSV the same seven fields with the coverage as the
percentage and the metric in the last two. A missing figure is ``n/a``, never 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

COUNTS_LEN = 18
UNIT_WIDTH = 4
EVNAME_LEN = 32
METRIC_LEN = 38
INTERVAL_LEN = 16
HEADER_EVERY = 25
"""perf repeats the ``-I`` column header every 25 intervals."""

NOT_COUNTED = "<not counted>"
NOT_SUPPORTED = "<not supported>"
NA = "n/a"


@dataclass(frozen=True, slots=True)
class EventLine:
    """One event's figure: ``value`` (``None``: ``<not counted>``, or ``<not supported>`` when
    not ``supported``), shown in ``unit`` (``msec``: two decimals, as perf shows its clocks; ``""``:
    a count); ``run_ns`` the time it was counted, ``running`` that share of the time (0..1);
    ``noise`` the relative standard deviation of the mean in % over ``-r`` runs (``None``: one run)."""

    label: str
    value: float | None
    unit: str = ""
    supported: bool = True
    run_ns: int = 0
    running: float = 1.0
    noise: float | None = None


@dataclass(frozen=True, slots=True)
class MetricLine:
    """One metric: its value (``None``: n/a) in ``unit``, the share of the time its inputs were
    counted (``coverage``, 0..1), and ``noise`` as for :class:`EventLine`."""

    name: str
    unit: str
    value: float | None
    coverage: float
    noise: float | None = None


@dataclass(frozen=True, slots=True)
class Block:
    """The figures under one title: ``'CMD ARGS'``, ``process id 'PID'``, ``'CPU(s) LIST'``, or
    ``region 'NAME' (calls N)``; ``seconds`` a region's time (``None``: the whole run's block)."""

    title: str
    events: tuple[EventLine, ...]
    metrics: tuple[MetricLine, ...] = ()
    seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Elapsed:
    """The wall-clock seconds of the run (the mean over ``-r`` runs, with ``spread`` the standard
    deviation of that mean) and, for one launched command, its user and system seconds."""

    seconds: float
    spread: float | None = None
    user: float | None = None
    sys: float | None = None


def group_thousands(digits: str, separator: str) -> str:
    """``1234567.89`` -> ``1,234,567.89`` with ``separator`` between groups of three (perf's
    ``%'`` under the locale's separator; ``""``: as it is)."""
    if not separator:
        return digits
    sign = "-" if digits.startswith("-") else ""
    whole, dot, fraction = digits.lstrip("-").partition(".")
    groups: list[str] = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    groups.insert(0, whole)
    return sign + separator.join(groups) + dot + fraction


def count_text(line: EventLine, separator: str = "") -> str:
    """The count as perf prints it, or perf's word for a count that is not there."""
    if line.value is None:
        return NOT_COUNTED if line.supported else NOT_SUPPORTED
    digits = f"{line.value:.2f}" if line.unit == "msec" else f"{line.value:.0f}"
    return group_thousands(digits, separator)


def metric_text(value: float | None) -> str:
    """A metric's value: three decimals as perf's ``%8.3f``, significant digits for a small one
    (a ratio of 1e-5 is not 0.000)."""
    if value is None or not math.isfinite(value):
        return NA
    if value == 0 or abs(value) >= 0.01:
        return f"{value:.3f}"
    return f"{value:.3g}"


def _noise_std(noise: float | None) -> str:
    return f"  ( +-{noise:6.2f}% )" if noise else ""


def _running_std(line: EventLine) -> str:
    if line.value is None and not line.supported:
        return ""
    return f"  ({_percent(line.running)}%)" if _percent(line.running) != "100.00" else ""


def _percent(share: float) -> str:
    """A share as perf prints its running percentage (a share that rounds to 100.00 ran all the
    time: perf prints the percentage only when the event ran less than it was enabled)."""
    return f"{100.0 * share:.2f}"


def event_std(line: EventLine, separator: str = "", prefix: str = "") -> str:
    """One event in perf stat's summary layout."""
    return (
        f"{prefix}{count_text(line, separator):>{COUNTS_LEN}} {line.unit:<{UNIT_WIDTH}} "
        f"{line.label:<{EVNAME_LEN}}{'':<{METRIC_LEN}}{_noise_std(line.noise)}{_running_std(line)}"
    )


def _metric_unit(line: MetricLine) -> str:
    return f"{line.unit} {line.name}" if line.unit else line.name


def metric_std(line: MetricLine) -> str:
    """One metric on a line of its own, its ``#`` under the events' metric column."""
    shown = f"{metric_text(line.value):>8}"
    text = f" # {shown}"
    coverage = f"  ({_percent(line.coverage)}%)" if _percent(line.coverage) != "100.00" else ""
    pad = max(METRIC_LEN - len(text) - 1, 0)
    body = f"{'':<{COUNTS_LEN + 1 + UNIT_WIDTH + 1 + EVNAME_LEN}}{text} {_metric_unit(line):<{pad}}"
    return f"{body}{_noise_std(line.noise)}{coverage}"


def summary_std(block: Block, *, runs: int = 1, separator: str = "") -> list[str]:
    """A block's title, events and metrics (perf's header without the footer)."""
    repeat = f" ({runs} runs)" if runs > 1 else ""
    lines = ["", f" Performance counter stats for {block.title}{repeat}:", ""]
    lines += [event_std(line, separator) for line in block.events]
    lines += [metric_std(line) for line in block.metrics]
    if block.seconds is not None:
        lines += ["", f" {block.seconds:17.9f} seconds in the region (its longest thread)", ""]
    return lines


def footer_std(elapsed: Elapsed) -> list[str]:
    """The elapsed time (``+-`` its spread over ``-r`` runs), then user and sys of one command."""
    lines = [""]
    if elapsed.spread is None:
        lines.append(f" {elapsed.seconds:17.9f} seconds time elapsed")
        if elapsed.user is not None and elapsed.sys is not None:
            lines += ["", f" {elapsed.user:17.9f} seconds user", f" {elapsed.sys:17.9f} seconds sys", ""]
    else:
        precision = _precision(elapsed.spread) + 2  # perf: two digits more than the spread's
        noise = _noise_std(100.0 * elapsed.spread / elapsed.seconds if elapsed.seconds else 0.0)
        mean = f"{elapsed.seconds:17.{precision}f}"
        lines.append(f" {mean} +- {elapsed.spread:.{precision}f} seconds time elapsed{noise}")
    return [*lines, ""]


def _precision(number: float) -> int:
    """perf's ``get_precision``: the decimals that reach the first significant digit of ``number``."""
    if number > 1 or number <= 0:
        return 0
    return round(math.ceil(-math.log10(number)))


def event_csv(line: EventLine, sep: str, *, runs: int = 1, prefix: str = "") -> str:
    """One event in perf stat's ``-x SEP`` fields; a count that is not there runs 0 ns at 100.00
    as perf writes it."""
    fields = [count_text(line), line.unit, line.label]
    if runs > 1:
        fields.append(f"{line.noise or 0.0:.2f}%")
    if line.value is None:
        fields += ["0", "100.00"]
    else:
        fields += [str(line.run_ns), _percent(line.running)]
    return prefix + sep.join([*fields, "", ""])


def metric_csv(line: MetricLine, sep: str, *, runs: int = 1, prefix: str = "") -> str:
    """One metric in the same fields: no count, its coverage as the percentage, then the metric."""
    fields = ["", "", ""]
    if runs > 1:
        fields.append(f"{line.noise or 0.0:.2f}%")
    fields += ["", _percent(line.coverage), metric_text(line.value), _metric_unit(line)]
    return prefix + sep.join(fields)


def summary_csv(block: Block, sep: str, *, runs: int = 1, region: bool = False) -> list[str]:
    """A block in CSV: perf writes no title; a region's rows follow a ``#`` line naming it."""
    lines = [f"# {block.title}"] if region else []
    lines += [event_csv(line, sep, runs=runs) for line in block.events]
    lines += [metric_csv(line, sep, runs=runs) for line in block.metrics]
    return lines


def report_lines(
    blocks: Sequence[Block], elapsed: Elapsed, *, runs: int = 1, sep: str | None = None, separator: str = ""
) -> list[str]:
    """The whole report: the run's block, its footer, then the regions' blocks; in CSV (``sep``)
    the blocks' rows alone, as perf writes no footer there."""
    if sep is not None:
        lines: list[str] = []
        for index, block in enumerate(blocks):
            lines += summary_csv(block, sep, runs=runs, region=index > 0)
        return lines
    lines = summary_std(blocks[0], runs=runs, separator=separator) + footer_std(elapsed)
    for block in blocks[1:]:
        lines += summary_std(block, runs=runs, separator=separator)
    return lines


def interval_lines(
    t: float, events: Sequence[EventLine], *, index: int, sep: str | None = None, separator: str = ""
) -> list[str]:
    """The ``-I`` rows of the interval ending at ``t`` seconds (the ``index``-th printed): the
    column header first every :data:`HEADER_EVERY` intervals in the summary layout; in CSV
    (``sep``) each row starts with the time."""
    stamp = f"{t:{INTERVAL_LEN}.9f}"
    if sep is not None:
        return [event_csv(line, sep, prefix=stamp + sep) for line in events]
    lines = []
    if index % HEADER_EVERY == 0:
        lines.append(f"#{'time':>{INTERVAL_LEN - 1}} {'counts':>{COUNTS_LEN}} {'unit':>{UNIT_WIDTH}} events")
    lines += [event_std(line, separator, prefix=stamp + " ") for line in events]
    return lines
