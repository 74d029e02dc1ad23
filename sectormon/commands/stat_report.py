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

TYPE_CHECKING = False  # typing and collections: a third of `stat`'s quick start (stat_quick.py)
if TYPE_CHECKING:
    from collections.abc import Sequence

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


class _Record:
    """A frozen record compared and shown by its fields: what ``@dataclass(frozen=True)`` gives,
    written out because this module is on ``sectormon stat``'s quick start, where importing
    :mod:`dataclasses` alone would take a third of the time allowed (docs/perf-tuning.md)."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({shown})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def _set(self, **fields: object) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)


class EventLine(_Record):
    """One event's figure: ``value`` (``None``: ``<not counted>``, or ``<not supported>`` when
    not ``supported``), shown in ``unit`` (``msec``: two decimals, as perf shows its clocks; ``""``:
    a count); ``run_ns`` the time it was counted, ``running`` that share of the time (0..1);
    ``noise`` the relative standard deviation of the mean in % over ``-r`` runs (``None``: one run)."""

    __slots__ = ("label", "noise", "run_ns", "running", "supported", "unit", "value")
    label: str
    value: float | None
    unit: str
    supported: bool
    run_ns: int
    running: float
    noise: float | None

    def __init__(
        self,
        label: str,
        value: float | None,
        unit: str = "",
        supported: bool = True,
        run_ns: int = 0,
        running: float = 1.0,
        noise: float | None = None,
    ) -> None:
        self._set(label=label, value=value, unit=unit, supported=supported)
        self._set(run_ns=run_ns, running=running, noise=noise)


class MetricLine(_Record):
    """One metric: its value (``None``: n/a) in ``unit``, the share of the time its inputs were
    counted (``coverage``, 0..1), and ``noise`` as for :class:`EventLine`."""

    __slots__ = ("coverage", "name", "noise", "unit", "value")
    name: str
    unit: str
    value: float | None
    coverage: float
    noise: float | None

    def __init__(
        self, name: str, unit: str, value: float | None, coverage: float, noise: float | None = None
    ) -> None:
        self._set(name=name, unit=unit, value=value, coverage=coverage, noise=noise)


class Block(_Record):
    """The figures under one title: ``'CMD ARGS'``, ``process id 'PID'``, ``'CPU(s) LIST'``, or
    ``region 'NAME' (calls N)``; ``seconds`` a region's time (``None``: the whole run's block)."""

    __slots__ = ("events", "metrics", "seconds", "title")
    title: str
    events: tuple[EventLine, ...]
    metrics: tuple[MetricLine, ...]
    seconds: float | None

    def __init__(
        self,
        title: str,
        events: tuple[EventLine, ...],
        metrics: tuple[MetricLine, ...] = (),
        seconds: float | None = None,
    ) -> None:
        self._set(title=title, events=events, metrics=metrics, seconds=seconds)


class Elapsed(_Record):
    """The wall-clock seconds of the run (the mean over ``-r`` runs, with ``spread`` the standard
    deviation of that mean) and, for one launched command, its user and system seconds."""

    __slots__ = ("seconds", "spread", "sys", "user")
    seconds: float
    spread: float | None
    user: float | None
    sys: float | None

    def __init__(
        self, seconds: float, spread: float | None = None, user: float | None = None, sys: float | None = None
    ) -> None:
        self._set(seconds=seconds, spread=spread, user=user, sys=sys)


def mean_and_noise(values: Sequence[float]) -> tuple[float, float | None]:
    """The mean of ``values`` and perf's relative spread of it in % (``None`` for one value;
    0 for a zero mean, as perf)."""
    n = 0
    mean = 0.0
    m2 = 0.0
    for value in values:  # Welford, as perf's update_stats
        n += 1
        delta = value - mean
        mean += delta / n
        m2 += delta * (value - mean)
    if n < 2:
        return mean, None
    spread = math.sqrt(m2 / (n - 1) / n)
    return mean, (100.0 * spread / mean if mean else 0.0)


def spread(values: Sequence[float]) -> float | None:
    """The standard deviation of the mean of ``values`` (``None`` for one value)."""
    mean, noise = mean_and_noise(values)
    if noise is None:
        return None
    return noise * mean / 100.0 if mean else 0.0


NS_PER_MS = 1e6


def event_line(
    label: str, unit: str, counted: Sequence[tuple[float, float, float]], *, runs: int
) -> EventLine:
    """One event over the runs that counted it, each given as (its count, ns for ``msec``; the
    share of the time it was counted; the ns it was counted), ``runs`` the number of runs: the
    mean count with perf's spread over more than one run, the mean share and counted time."""
    if not counted:
        return EventLine(label, None, unit, running=0.0)
    scale = 1.0 / NS_PER_MS if unit == "msec" else 1.0
    value, noise = mean_and_noise([count * scale for count, _, _ in counted])
    return EventLine(
        label,
        value,
        unit,
        run_ns=round(sum(ns for _, _, ns in counted) / len(counted)),
        running=sum(share for _, share, _ in counted) / len(counted),
        noise=noise if runs > 1 else None,
    )


def metric_line(name: str, unit: str, values: Sequence[float], coverage: float, *, runs: int) -> MetricLine:
    """One metric over the runs where it had a value (``values``; none: n/a), with its mean
    ``coverage`` and perf's spread over more than one run."""
    mean, noise = mean_and_noise(values) if values else (None, None)
    return MetricLine(name, unit, mean, coverage, noise if runs > 1 else None)


def elapsed_of(walls: Sequence[float], user_sys: tuple[float, float] | None) -> Elapsed:
    """The runs' wall-clock seconds (the mean, with its spread over several runs) and, for one
    launched command, its user and system seconds (``user_sys``; ``None``: not a command)."""
    mean = sum(walls) / len(walls)
    if len(walls) > 1:
        return Elapsed(mean, spread(walls))
    if user_sys is None:
        return Elapsed(mean)
    return Elapsed(mean, None, *user_sys)


def thousands_separator() -> str:
    """The locale's thousands separator, which perf's counts use (none under C or POSIX); read
    with LC_NUMERIC set from the environment and put back at once, so nothing else parses or
    prints numbers under it. Through ``_locale``, the C module :mod:`locale` wraps: the wrapper
    imports :mod:`re` and more, a sixth of ``stat``'s quick start."""
    import _locale

    locale_error: type[Exception] = getattr(_locale, "Error", ValueError)  # typeshed lacks it
    try:
        previous = _locale.setlocale(_locale.LC_NUMERIC, None)
        _locale.setlocale(_locale.LC_NUMERIC, "")
    except locale_error:
        return ""
    try:
        return str(_locale.localeconv()["thousands_sep"])
    finally:
        _locale.setlocale(_locale.LC_NUMERIC, previous)


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


MAX_BOUND_SHOWN = 16
"""Threads the binding lines name one by one; the rest are counted."""


def binding_lines(threads: Sequence[tuple[int, str, int | None]], how: str) -> list[str]:
    """The threads' binding as the run saw it (likwid-pin's habit: say where each thread ran):
    one line of totals, then each thread (tid, its CPUs, its migrations; ``None``: unknown).
    ``how`` says where the binding came from (``--bind 0,1``, or that the run is a sector-cache
    run)."""
    bound = sum(1 for _, cpus, _ in threads if cpus.isdigit())
    moved = sum(1 for _, _, migrations in threads if migrations)
    plural = "s" if len(threads) != 1 else ""
    lines = [f" Binding ({how}): {len(threads)} thread{plural}, {bound} bound to one CPU, {moved} migrated"]
    for tid, cpus, migrations in threads[:MAX_BOUND_SHOWN]:
        label = "CPU " if cpus.isdigit() else "CPUs "
        moves = "migrations n/a" if migrations is None else f"migrations {migrations}"
        lines.append(f"   tid {tid:<10} {label + cpus:<24} {moves}")
    if len(threads) > MAX_BOUND_SHOWN:
        lines.append(f"   and {len(threads) - MAX_BOUND_SHOWN} more")
    return lines


def report_lines(
    blocks: Sequence[Block],
    elapsed: Elapsed,
    *,
    runs: int = 1,
    sep: str | None = None,
    separator: str = "",
    binding: Sequence[str] = (),
) -> list[str]:
    """The whole report: the run's block, its footer, the ``binding`` lines (:func:`binding_lines`),
    then the regions' blocks; in CSV (``sep``) the blocks' rows alone, as perf writes no footer
    there, with the binding as ``#`` lines after the run's rows."""
    if sep is not None:
        lines: list[str] = []
        for index, block in enumerate(blocks):
            lines += summary_csv(block, sep, runs=runs, region=index > 0)
            if index == 0:
                lines += [f"#{line}" for line in binding]
        return lines
    lines = summary_std(blocks[0], runs=runs, separator=separator) + footer_std(elapsed)
    if binding:
        lines += [*binding, ""]
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
