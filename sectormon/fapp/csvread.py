"""Reader for fapp ``cpupa`` CSV exports: one event set per file, one row per thread.

fapp can count at most 8 raw events per run, so a measurement is a folder of CSV files, one per
run (``pa1.csv`` .. ``pa17.csv`` for the CPU PA report, or any ``event_raw`` export). Each file's
``LABEL-FAPP-cpupa`` header names its columns; data rows start with ``FAPP-cpupa``. Other record
types of a full fapp export (``FAPP-info``, ``FAPP-core``, ...) are skipped, except that
``FAPP-info`` rows are kept because they carry the timer frequency. Every problem is a
:class:`DataError` naming the file and line, because users feed this hand-edited exports.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sectormon.errors import DataError

HEADER_LABEL = "LABEL-FAPP-cpupa"
ROW_LABEL = "FAPP-cpupa"
INFO_LABEL = "FAPP-info"
THREAD_LEVEL = "Thread"
DEFAULT_CNTFRQ_HZ = 100_000_000
DEFAULT_VECTOR_LENGTH_BITS = 512
U64_MAX = (1 << 64) - 1
TIME_SET = "pa1"

# The fixed columns every cpupa header has, by the name fapp gives them.
FIXED_COLUMNS = (
    "Level",
    "Spawn",
    "Process",
    "Thread",
    "Region_name",
    "Region_number",
    "Call",
    "CNTVCT",
    "PMCCNTR",
)
_INT_COLUMNS = ("Spawn", "Process", "Thread", "Region_number", "Call", "CNTVCT", "PMCCNTR")
_UNUSED = "-"
_EVENT_RE = re.compile(r"^0x[0-9a-fA-F]{1,8}$")
_SET_RE = re.compile(r"^pa(\d+)$")


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
    cntvct: int
    pmccntr: int
    counts: Mapping[int, int]

    def value(self, key: int | str) -> int | None:
        """A raw count by event code, or ``"CNTVCT"`` / ``"PMCCNTR"``; ``None`` if not in this set."""
        if key == "CNTVCT":
            return self.cntvct
        if key == "PMCCNTR":
            return self.pmccntr
        if isinstance(key, int):
            return self.counts.get(key)
        return None


@dataclass(frozen=True, slots=True)
class EventSet:
    """The content of one cpupa CSV file: its event codes and its thread rows."""

    name: str
    path: str
    codes: tuple[int, ...]
    rows: tuple[ThreadRow, ...]
    info: Mapping[str, str] = field(default_factory=dict)

    def threads(self) -> tuple[int, ...]:
        return tuple(row.thread for row in self.rows)

    def row(self, thread: int) -> ThreadRow | None:
        for row in self.rows:
            if row.thread == thread:
                return row
        return None


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
    """Threads whose time-set row has CNTVCT or PMCCNTR 0: no time, so n/a for time-based metrics."""

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


def _fix_header() -> str:
    return f"the first cpupa line must be the header '{HEADER_LABEL},{','.join(FIXED_COLUMNS)},0x....'"


def _split_lines(data: bytes, path: str) -> list[str]:
    lines: list[str] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(
                path, number, f"not UTF-8 text ({exc.reason})", "export the CSV as UTF-8"
            ) from None
        lines.append(text.rstrip("\r"))
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _fields(line: str, path: str, number: int) -> list[str]:
    try:
        rows = list(csv.reader([line], strict=True))
    except csv.Error as exc:
        raise DataError(path, number, f"malformed CSV ({exc})", "check quotes and separators") from None
    return [f.strip() for f in rows[0]] if rows else []


@dataclass(slots=True)
class _Header:
    line: int
    fields: tuple[str, ...]
    index: dict[str, int]
    events: tuple[tuple[int, int], ...]  # (column index, event code)


def _parse_header(fields: list[str], path: str, number: int) -> _Header:
    index: dict[str, int] = {}
    events: list[tuple[int, int]] = []
    seen_codes: dict[int, str] = {}
    for col, name in enumerate(fields):
        if col == 0:
            continue
        if name in FIXED_COLUMNS:
            if name in index:
                raise DataError(path, number, f"column {name!r} appears twice in the header", _fix_header())
            index[name] = col
        elif _EVENT_RE.match(name):
            code = int(name, 16)
            if code in seen_codes:
                raise DataError(
                    path,
                    number,
                    f"event {name} appears twice in the header (also as {seen_codes[code]})",
                    "an event set lists each event once",
                )
            seen_codes[code] = name
            events.append((col, code))
        elif name == _UNUSED or name == "":
            continue
        else:
            raise DataError(
                path,
                number,
                f"unknown header column {name!r} (column {col + 1})",
                "event columns are hex codes like 0x0011, unused counters '-'",
            )
    missing = [name for name in FIXED_COLUMNS if name not in index]
    if missing:
        raise DataError(path, number, f"header lacks column(s) {', '.join(missing)}", _fix_header())
    return _Header(number, tuple(fields), index, tuple(events))


def _parse_int(text: str, column: str, path: str, number: int) -> int:
    digits = text[1:] if text.startswith("-") else text
    if not digits or not (digits.isascii() and digits.isdigit()):
        raise DataError(path, number, f"{column}: {text!r} is not an integer", "counts are plain integers")
    if text.startswith("-"):
        raise DataError(path, number, f"{column}: negative value {text}", "counts are never negative")
    if len(digits) > 20 or int(digits) > U64_MAX:
        raise DataError(
            path, number, f"{column}: {text} does not fit in 64 bits", "counts are 64-bit counters"
        )
    return int(digits)


def _parse_row(fields: list[str], header: _Header, path: str, number: int) -> ThreadRow | None:
    if len(fields) != len(header.fields):
        raise DataError(
            path,
            number,
            f"{len(fields)} columns, but the header on line {header.line} has {len(header.fields)}",
            "every cpupa row has one value per header column",
        )
    idx = header.index
    if fields[idx["Level"]] != THREAD_LEVEL:
        return None  # process/application summaries: the report works per thread
    ints = {name: _parse_int(fields[idx[name]], name, path, number) for name in _INT_COLUMNS}
    counts = {
        code: _parse_int(fields[col], f"event 0x{code:04x}", path, number) for col, code in header.events
    }
    return ThreadRow(
        line=number,
        spawn=ints["Spawn"],
        process=ints["Process"],
        thread=ints["Thread"],
        region_name=fields[idx["Region_name"]],
        region_number=ints["Region_number"],
        call=ints["Call"],
        cntvct=ints["CNTVCT"],
        pmccntr=ints["PMCCNTR"],
        counts=counts,
    )


def set_name_for(path: Path) -> str:
    """The event-set name of a CSV file: its stem (``pa7``)."""
    return path.stem


def parse_cpupa(data: bytes, path: str, name: str) -> EventSet:
    """Parse one cpupa CSV export (bytes, so decoding errors also name their line)."""
    lines = _split_lines(data, path)
    header: _Header | None = None
    rows: list[ThreadRow] = []
    info: dict[str, str] = {}
    keys: dict[tuple[int, int, str, int, int], int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = _fields(line, path, number)
        if not fields:
            continue
        label = fields[0]
        if label == HEADER_LABEL:
            parsed = _parse_header(fields, path, number)
            if header is not None and parsed.fields != header.fields:
                raise DataError(
                    path,
                    number,
                    f"a second cpupa header that differs from the one on line {header.line}",
                    "put each event set in its own file",
                )
            header = parsed
        elif label == ROW_LABEL:
            if header is None:
                raise DataError(path, number, f"data row before the {HEADER_LABEL} header", _fix_header())
            row = _parse_row(fields, header, path, number)
            if row is None:
                continue
            key = (row.spawn, row.process, row.region_name, row.region_number, row.thread)
            if key in keys:
                raise DataError(
                    path,
                    number,
                    f"thread {row.thread} of region {row.region_name!r} already on line {keys[key]}",
                    "each thread appears once per region",
                )
            keys[key] = number
            rows.append(row)
        elif label == INFO_LABEL and len(fields) >= 3:
            info[fields[1]] = fields[2]
    if header is None:
        raise DataError(
            path,
            max(1, len(lines)),
            f"no {HEADER_LABEL} header" + (" (empty file)" if not lines else ""),
            "export with 'fapppx -A -Icpupa -tcsv'",
        )
    if not rows:
        raise DataError(
            path,
            max(1, len(lines)),
            f"no {ROW_LABEL} rows at level {THREAD_LEVEL}",
            "export per-thread data (fapppx -Icpupa)",
        )
    return EventSet(name, path, tuple(code for _, code in header.events), tuple(rows), info)


def read_cpupa(path: str | Path) -> EventSet:
    """Read one cpupa CSV file."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise DataError(str(p), None, f"cannot read ({exc.strerror or exc})", "check the path") from None
    return parse_cpupa(data, str(p), set_name_for(p))


def csv_files(directory: Path) -> list[Path]:
    """The event-set files of a measurement folder: ``pa<N>.csv`` by N, else every ``*.csv`` by name."""
    files = [p for p in directory.iterdir() if p.is_file() and p.suffix.lower() == ".csv"]
    pa = [p for p in files if _SET_RE.match(p.stem)]
    if pa:
        return sorted(pa, key=lambda p: int(_SET_RE.match(p.stem).group(1)))  # type: ignore[union-attr]
    return sorted(files, key=lambda p: p.name)


def _read_info(directory: Path) -> dict[str, Any]:
    path = directory / "info.json"
    if not path.is_file():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
        info = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(str(path), exc.lineno, f"bad JSON ({exc.msg})", "fix or remove info.json") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(str(path), None, f"cannot read ({exc})", "fix or remove info.json") from None
    if not isinstance(info, dict):
        raise DataError(str(path), 1, "info.json is not a JSON object", "fix or remove info.json")
    return info


_FREQ_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*(hz|khz|mhz|ghz)?\s*$", re.IGNORECASE)
_FREQ_UNITS = {None: 1.0, "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}


def _info_frequency(sets: Mapping[str, EventSet]) -> float | None:
    """CNTFRQ from a FAPP-info section (``Timer clock frequency``), if any file has one."""
    for event_set in sets.values():
        for key, value in event_set.info.items():
            lowered = key.lower()
            if ("timer" in lowered and "freq" in lowered) or "cntfrq" in lowered:
                match = _FREQ_RE.match(value)
                if match:
                    unit = match.group(2).lower() if match.group(2) else None
                    return float(match.group(1)) * _FREQ_UNITS[unit]
    return None


def _info_vector_length(sets: Mapping[str, EventSet]) -> int | None:
    for event_set in sets.values():
        for key, value in event_set.info.items():
            if "vector length" in key.lower():
                digits = re.match(r"\s*(\d+)", value)
                if digits:
                    return int(digits.group(1))
    return None


def _positive_number(info: Mapping[str, Any], key: str, path: Path) -> float | None:
    value = info.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise DataError(str(path / "info.json"), None, f"{key} must be a positive number, not {value!r}")
    return float(value)


def _select(
    sets: dict[str, EventSet], region: str | None, directory: Path
) -> tuple[dict[str, EventSet], list[str]]:
    """Keep one region of one process in every set (a report is per process and region)."""
    regions: dict[str, None] = {}
    procs: dict[tuple[int, int], None] = {}
    for event_set in sets.values():
        for row in event_set.rows:
            regions[row.region_name] = None
            procs[(row.spawn, row.process)] = None
    if region is None:
        if len(regions) > 1:
            raise DataError(
                str(directory),
                None,
                f"several measured regions ({', '.join(regions)})",
                "choose one with --region NAME",
            )
        region = next(iter(regions))
    elif region not in regions:
        raise DataError(
            str(directory), None, f"no region {region!r} (found: {', '.join(regions)})", "check --region"
        )
    warnings: list[str] = []
    proc = next(iter(procs))
    if len(procs) > 1:
        warnings.append(f"several processes in the data; using spawn {proc[0]} process {proc[1]}")
    kept: dict[str, EventSet] = {}
    for name, event_set in sets.items():
        rows = tuple(r for r in event_set.rows if r.region_name == region and (r.spawn, r.process) == proc)
        kept[name] = EventSet(event_set.name, event_set.path, event_set.codes, rows, event_set.info)
    return kept, warnings


def read_measurement(path: str | Path, region: str | None = None) -> Measurement:
    """Read a measurement folder (all its cpupa CSVs + optional ``info.json``), or a single CSV file.

    CNTFRQ comes from ``info.json`` (``cntfrq_hz``), else from a FAPP-info section, else the
    A64FX's 100 MHz with a warning: every time-based metric depends on it.
    """
    p = Path(path)
    if p.is_file():
        files, directory = [p], p.parent
        info: dict[str, Any] = {}
    elif p.is_dir():
        directory = p
        files = csv_files(p)
        if not files:
            raise DataError(
                str(p), None, "no cpupa CSV files (pa1.csv ...)", "give a fapp measurement folder"
            )
        info = _read_info(p)
    else:
        raise DataError(str(p), None, "no such file or directory", "give a fapp measurement folder")
    sets: dict[str, EventSet] = {}
    for file in files:
        event_set = read_cpupa(file)
        sets[event_set.name] = event_set
    sets, warnings = _select(sets, region, directory)
    cntfrq = _positive_number(info, "cntfrq_hz", directory)
    if cntfrq is None:
        cntfrq = _info_frequency(sets)
    if cntfrq is None:
        cntfrq = float(DEFAULT_CNTFRQ_HZ)
        warnings.append(
            "CNTFRQ unknown (no info.json cntfrq_hz, no FAPP-info timer frequency): "
            f"assuming {DEFAULT_CNTFRQ_HZ} Hz"
        )
    vl_info = _positive_number(info, "vector_length_bits", directory)
    vector_length = int(vl_info) if vl_info is not None else _info_vector_length(sets)
    if vector_length is None:
        vector_length = DEFAULT_VECTOR_LENGTH_BITS
    threads: dict[int, None] = {}
    for event_set in sets.values():
        for thread in event_set.threads():
            threads[thread] = None
    for name, event_set in sets.items():
        have = set(event_set.threads())
        lacking = [t for t in threads if t not in have]
        if lacking:
            warnings.append(f"{name}: no row for thread(s) {', '.join(map(str, lacking))}")
    untimed = _untimed(sets, warnings)
    return Measurement(
        path=str(p),
        sets=sets,
        info=info,
        cntfrq_hz=cntfrq,
        vector_length_bits=vector_length,
        threads=tuple(sorted(threads)),
        warnings=tuple(warnings),
        untimed=untimed,
    )


def _untimed(sets: Mapping[str, EventSet], warnings: list[str]) -> tuple[int, ...]:
    """Threads whose time-set row has no time (CNTVCT or PMCCNTR 0), each with one warning.

    Such a row is broken or the thread never ran the region: averaging its 0 s into the CMG's
    mean time would shrink every CMG throughput and power, so it is left out of those averages.
    """
    name = TIME_SET if TIME_SET in sets else next(iter(sets), None)
    if name is None:
        return ()
    out: list[int] = []
    for row in sets[name].rows:
        zero = [col for col, v in (("CNTVCT", row.cntvct), ("PMCCNTR", row.pmccntr)) if v == 0]
        if zero:
            out.append(row.thread)
            warnings.append(
                f"{sets[name].path}:{row.line}: thread {row.thread} has {' and '.join(zero)} 0 in {name}: "
                "its time-based metrics are n/a and the CMG's time averages leave it out"
            )
    return tuple(out)
