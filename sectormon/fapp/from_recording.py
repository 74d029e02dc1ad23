"""A recording made by ``sectormon import fapp`` back into the measurement it came from.

``compare`` reads an imported recording through this rather than the engine, so a fapp folder and its
import give the same metrics: the fapp analysis takes all of a metric's inputs from one event set,
where the engine keeps one count per event. The recording keeps which set each count came from (the
reading's group, the rows whole, the header's ``source.event_sets``), which is what makes this exact.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sectormon.data.header import Header
from sectormon.data.readings import Slice
from sectormon.errors import DataError
from sectormon.fapp.measurement import assemble, valid_vector_length
from sectormon.fapp.model import CPU_CYCLES_CODE, DEFAULT_VECTOR_LENGTH_BITS, EventSet, Measurement, ThreadRow
from sectormon.fapp.names import CYCLES_NAME

SOURCE_KIND = "fapp"
SLICE_LINE = 2
"""An import's one slice is its second line, after the header."""
_SOURCE_KEYS = ("kind", "path", "cntfrq_hz_used", "vector_length_bits_used", "event_sets")
_FIX = "re-import the fapp folder with 'sectormon import fapp'"


def is_fapp_import(header: Header) -> bool:
    """Whether a recording header is that of a fapp import this sectormon can rebuild."""
    return header.source.kind == SOURCE_KIND and isinstance(header.source.fields.get("event_sets"), dict)


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _columns(path: str, source: Mapping[str, Any]) -> dict[str, dict[int, str]]:
    """Each set's event codes (file order) and the names their counts have in the readings."""
    out: dict[str, dict[int, str]] = {}
    for set_name, columns in source["event_sets"].items():
        if not isinstance(columns, dict):
            raise DataError(path, 1, f"source.event_sets.{set_name} is not an object", _FIX)
        codes: dict[int, str] = {}
        for code, name in columns.items():
            try:
                value = int(code, 16)
            except ValueError:
                raise DataError(
                    path, 1, f"source.event_sets.{set_name}: {code!r} is not a hex code", _FIX
                ) from None
            if not isinstance(name, str) or not 0 <= value <= 0xFFFF:
                raise DataError(path, 1, f"source.event_sets.{set_name}: bad column {code!r}: {name!r}", _FIX)
            codes[value] = name
        out[set_name] = codes
    return out


def _frequency(path: str, source: Mapping[str, Any]) -> float:
    cntfrq = source.get("cntfrq_hz_used")
    if isinstance(cntfrq, bool) or not isinstance(cntfrq, (int, float)) or not 0 < cntfrq < math.inf:
        raise DataError(path, 1, f"source.cntfrq_hz_used must be a positive number, not {cntfrq!r}", _FIX)
    return float(cntfrq)


def _thread(unit: str) -> int | None:
    kind, _, ident = unit.partition(":")
    return int(ident) if kind == "thread" and ident.isdigit() else None


def rebuild_measurement(path: str, header: Header, slices: tuple[Slice, ...]) -> Measurement:
    """The measurement of a fapp import (``is_fapp_import(header)``), one event set per group."""
    source = header.source.fields
    if len(slices) != 1:
        raise DataError(path, None, f"a fapp import holds one slice; this recording has {len(slices)}", _FIX)
    (s,) = slices
    columns = _columns(path, source)
    cntfrq = _frequency(path, source)
    info = {k: v for k, v in source.items() if k not in _SOURCE_KEYS}
    spawn, process = _int(info.get("spawn"), 0), _int(info.get("process"), 0)
    region = info.get("region_name") if isinstance(info.get("region_name"), str) else ""
    region_number = _int(info.get("region_number"), 0)
    rows: dict[str, list[ThreadRow]] = {name: [] for name in columns}
    seen: set[tuple[str, int]] = set()  # (set, thread): a set look-up, not a search per reading
    for unit, _core, _cmg, group, time_enabled, _tr, names, values in s.rows:
        thread = _thread(unit)
        if thread is None:
            continue  # the CMG unit's readings: means of the rows, which the rows give again
        codes = columns.get(group)
        if codes is None:
            raise DataError(path, SLICE_LINE, f"a reading of {unit} in unknown set {group!r}", _FIX)
        reading = dict(zip(names, values, strict=True))
        missing = [name for name in (CYCLES_NAME, *codes.values()) if name not in reading]
        if missing:
            raise DataError(
                path, SLICE_LINE, f"the {group} reading of {unit} lacks {', '.join(missing)}", _FIX
            )
        if (group, thread) in seen:
            raise DataError(path, SLICE_LINE, f"two {group} readings of {unit}", _FIX)
        seen.add((group, thread))
        counts = {code: reading[name] for code, name in codes.items()}
        rows[group].append(
            ThreadRow(
                line=SLICE_LINE,
                spawn=spawn,
                process=process,
                thread=thread,
                region_name=str(region),
                region_number=region_number,
                call=1,
                cntvct=round(time_enabled * cntfrq / 1e9),
                pmccntr=counts.get(CPU_CYCLES_CODE, reading[CYCLES_NAME]),
                counts=counts,
            )
        )
    sets: dict[str, EventSet] = {}
    for name, codes in columns.items():
        if not rows[name]:
            raise DataError(path, SLICE_LINE, f"no thread reading of event set {name}", _FIX)
        sets[name] = EventSet(name, path, tuple(codes), tuple(rows[name]))
    vector_length = _int(source.get("vector_length_bits_used"), DEFAULT_VECTOR_LENGTH_BITS)
    if not valid_vector_length(vector_length):
        raise DataError(path, 1, f"source.vector_length_bits_used {vector_length} is not an SVE length", _FIX)
    return assemble(path, sets, info, cntfrq_hz=cntfrq, vector_length_bits=vector_length, warnings=[])
