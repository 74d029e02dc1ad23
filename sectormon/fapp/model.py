"""What a fapp measurement is, whatever file format it came in: thread rows, event sets, one measurement.

fapp counts at most 8 raw events per run, so a measurement is a folder of exports, one per run
("event set"). Each export holds one row per thread of the measured region: CNTVCT (timer ticks),
PMCCNTR (cycles) and the set's event counts. The CSV and XML readers build these objects;
everything downstream (the report, section 3, import, compare) reads only them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sectormon.errors import DataError

DEFAULT_CNTFRQ_HZ = 100_000_000
DEFAULT_VECTOR_LENGTH_BITS = 512
U64_MAX = (1 << 64) - 1
TIME_SET = "pa1"
CPU_CYCLES_CODE = 0x11


MAX_CMG = 1 << 16


def valid_cmg(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_CMG


def cmg_of(info: Mapping[str, Any]) -> int:
    """The CMG the measurement ran on: ``info.json`` ``cmg`` (checked when read), else 0."""
    cmg = info.get("cmg", 0)
    return cmg if isinstance(cmg, int) and valid_cmg(cmg) else 0


def shown(name: str) -> str:
    """A name from the data as an error or warning shows it: quoted with escapes when it holds
    control characters, which would break the message's one line."""
    return name if name.isprintable() else repr(name)


def parse_count(text: str, column: str, path: str, line: int) -> int:
    """One count of an export: a plain non-negative integer below 2**64, else a one-line error."""
    digits = text[1:] if text.startswith("-") else text
    if not digits or not (digits.isascii() and digits.isdigit()):
        raise DataError(path, line, f"{column}: {text!r} is not an integer", "counts are plain integers")
    if text.startswith("-"):
        raise DataError(path, line, f"{column}: negative value {text}", "counts are never negative")
    if len(digits) > 20 or int(digits) > U64_MAX:
        raise DataError(path, line, f"{column}: {text} does not fit in 64 bits", "counts are 64-bit counters")
    return int(digits)


@dataclass(frozen=True, slots=True)
class ThreadRow:
    """One thread's counts in one event set (one run) for one measured region."""

    line: int
    spawn: int
    process: int
    thread: int
    region_name: str
    region_number: int
    call: int
    cntvct: int | None
    """Timer ticks; ``None`` when the export has no CNTVCT (the PMU document's XML form)."""
    pmccntr: int | None
    """Cycles; ``None`` when the export has no PMCCNTR (its 0x11 column, if any, gives them)."""
    counts: Mapping[int, int]

    def value(self, key: int | str) -> int | None:
        """A raw count by event code, or ``"CNTVCT"`` / ``"PMCCNTR"``; ``None`` if not in this row."""
        if key == "CNTVCT":
            return self.cntvct
        if key == "PMCCNTR":
            return self.pmccntr
        if isinstance(key, int):
            return self.counts.get(key)
        return None

    def cycles(self) -> int | None:
        """The cycles the set's ratios divide by: its 0x11 column when it counted CPU_CYCLES, else
        PMCCNTR (``None`` when the export has neither)."""
        counted = self.counts.get(CPU_CYCLES_CODE)
        return self.pmccntr if counted is None else counted


RowKey = tuple[int, int, str, int, int]


def add_row(rows: dict[RowKey, ThreadRow], row: ThreadRow, path: str) -> None:
    """Add ``row`` unless its thread already has a row for the same process and region (an error)."""
    key = (row.spawn, row.process, row.region_name, row.region_number, row.thread)
    other = rows.get(key)
    if other is not None:
        raise DataError(
            path,
            row.line,
            f"thread {row.thread} of region {row.region_name!r} already on line {other.line}",
            "each thread appears once per region",
        )
    rows[key] = row


@dataclass(frozen=True, slots=True)
class EventSet:
    """The content of one export file: its event codes and its thread rows."""

    name: str
    path: str
    codes: tuple[int, ...]
    rows: tuple[ThreadRow, ...]
    info: Mapping[str, str] = field(default_factory=dict)

    _by_thread: dict[int, ThreadRow] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Rows by thread, built once: every metric of every thread looks its rows up, and a
        # search per look-up made a report quadratic in the threads (docs/perf-tuning.md).
        by_thread: dict[int, ThreadRow] = {}
        for row in self.rows:
            by_thread.setdefault(row.thread, row)
        object.__setattr__(self, "_by_thread", by_thread)

    def threads(self) -> tuple[int, ...]:
        return tuple(row.thread for row in self.rows)

    def row(self, thread: int) -> ThreadRow | None:
        return self._by_thread.get(thread)

    @property
    def has_time(self) -> bool:
        """Whether the export has CNTVCT (timer ticks) on its rows."""
        return all(row.cntvct is not None for row in self.rows)

    @property
    def has_cycles(self) -> bool:
        """Whether the set's ratios have cycles: it counted 0x11, or every row has PMCCNTR."""
        return CPU_CYCLES_CODE in self.codes or all(row.pmccntr is not None for row in self.rows)


@dataclass(frozen=True, slots=True)
class Measurement:
    """One measured region of one process: its event sets (runs), info and clock frequency."""

    path: str
    sets: Mapping[str, EventSet]
    info: Mapping[str, Any]
    cntfrq_hz: float
    vector_length_bits: int
    threads: tuple[int, ...]
    warnings: tuple[str, ...] = ()
    untimed: tuple[int, ...] = ()
    """Threads whose time-set row has CNTVCT or its cycles 0: no time, so n/a for time-based metrics."""
    files: tuple[str, ...] = ()
    """Every file the measurement was read from (exports and info.json): what an output must not overwrite."""

    @property
    def time_set(self) -> str:
        """The set every time-based metric takes its time from: ``pa1`` (as the report), else the first."""
        if TIME_SET in self.sets:
            return TIME_SET
        return next(iter(self.sets), "")

    @property
    def timed_threads(self) -> tuple[int, ...]:
        """The threads with a usable time: the ones the CMG's time averages are taken over."""
        return tuple(t for t in self.threads if t not in self.untimed)

    def seconds(self, thread: int) -> float | None:
        """A thread's time T = CNTVCT / CNTFRQ of the time set; ``None`` when it has none."""
        if thread in self.untimed:
            return None
        ticks = self.value(self.time_set, "CNTVCT", thread)
        return None if ticks is None else ticks / self.cntfrq_hz

    def mean_seconds(self) -> float | None:
        """T̄: the mean time of the threads with a time (the report's CMG time); ``None`` if none has one."""
        times = [s for s in map(self.seconds, self.threads) if s is not None]
        return sum(times) / len(times) if times else None

    def value(self, set_name: str, key: int | str, thread: int) -> int | None:
        """The raw count of ``key`` in set ``set_name`` for ``thread``; ``None`` when absent."""
        event_set = self.sets.get(set_name)
        if event_set is None:
            return None
        row = event_set.row(thread)
        return None if row is None else row.value(key)
