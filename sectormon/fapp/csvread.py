"""Reader for fapp ``cpupa`` CSV exports (``fapppx -A -Icpupa -tcsv``): one event set per file.

Each file's ``LABEL-FAPP-cpupa`` header names its columns; data rows start with ``FAPP-cpupa``.
Other record types of a full fapp export (``FAPP-info``, ``FAPP-core``, ...) are skipped, except
that ``FAPP-info`` rows are kept because they carry the timer frequency. Every problem is a
:class:`DataError` naming the file and line, because users feed this hand-edited exports. A UTF-8
byte-order mark (spreadsheet programs write one) is accepted.
"""

from __future__ import annotations

import codecs
import csv
import re
from dataclasses import dataclass

from sectormon.errors import DataError
from sectormon.fapp.model import EventSet, RowKey, ThreadRow, add_row, parse_count

HEADER_LABEL = "LABEL-FAPP-cpupa"
ROW_LABEL = "FAPP-cpupa"
INFO_LABEL = "FAPP-info"
THREAD_LEVEL = "Thread"

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


def _fix_header() -> str:
    return f"the first cpupa line must be the header '{HEADER_LABEL},{','.join(FIXED_COLUMNS)},0x....'"


def _split_lines(data: bytes, path: str) -> list[str]:
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
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
    ints = {name: parse_count(fields[idx[name]], name, path, number) for name in _INT_COLUMNS}
    counts = {
        code: parse_count(fields[col], f"event 0x{code:04x}", path, number) for col, code in header.events
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


def parse_cpupa(data: bytes, path: str, name: str) -> EventSet:
    """Parse one cpupa CSV export (bytes, so decoding errors also name their line)."""
    lines = _split_lines(data, path)
    header: _Header | None = None
    rows: dict[RowKey, ThreadRow] = {}
    info: dict[str, str] = {}
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
            add_row(rows, row, path)
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
    return EventSet(name, path, tuple(code for _, code in header.events), tuple(rows.values()), info)
