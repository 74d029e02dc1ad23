"""The ``samples`` record of a recording: one frame window's samples, already attributed.

Samples are stored resolved (names, not addresses): resolving again would need the binaries and the
address spaces of the time, which a replay elsewhere does not have. Each record carries its own
tables of code and data locations, so every line stands alone as slices do (a cut file,
``--skip-bad`` and seeking work line by line); the reader interns the locations, since the
aggregator finds a location's tallies by identity first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sectormon.data.readings import U64
from sectormon.data.samples import (
    DATA_KINDS,
    AttributedSample,
    CodeLocation,
    DataLocation,
    SampleBatch,
)
from sectormon.io.jsonl import FORMAT_VERSION, BadRecord, stream_seconds

SAMPLES_SCHEMA = f"sectormon/samples/{FORMAT_VERSION}"
SAMPLE_FIELDS = "[time_ns, tid, cpu, period, weight, code, data, addr]"
_MAX_INTERNED = 1 << 16


def samples_record(batch: SampleBatch) -> dict[str, Any]:
    """The JSON record of a batch (its locations as per-record tables)."""
    codes: dict[CodeLocation, int] = {}
    datas: dict[DataLocation, int] = {}
    rows: list[list[Any]] = []
    append = rows.append
    for time, tid, cpu, period, weight, code, data, addr in batch.samples:
        ci = codes.get(code)
        if ci is None:
            ci = codes[code] = len(codes)
        di = None
        if data is not None:
            di = datas.get(data)
            if di is None:
                di = datas[data] = len(datas)
        append([time, tid, cpu, period, weight, ci, di, addr])
    return {
        "schema": SAMPLES_SCHEMA,
        "t": batch.t,
        "lost": batch.lost,
        "counted": batch.counted,
        "multiplexed": batch.multiplexed,
        "code": [[c.function, c.module, c.source] for c in codes],
        "data": [[d.name, d.kind, d.module] for d in datas],
        "samples": rows,
    }


class LocationInterner:
    """Equal locations of every record read become one object (the aggregator finds its tallies
    by identity first). Stops growing at a bound, so a file with absurdly many names cannot eat
    the memory; their samples still count by value."""

    def __init__(self) -> None:
        self._code: dict[CodeLocation, CodeLocation] = {}
        self._data: dict[DataLocation, DataLocation] = {}

    def code(self, location: CodeLocation) -> CodeLocation:
        known = self._code.get(location)
        if known is not None:
            return known
        if len(self._code) < _MAX_INTERNED:
            self._code[location] = location
        return location

    def data(self, location: DataLocation) -> DataLocation:
        known = self._data.get(location)
        if known is not None:
            return known
        if len(self._data) < _MAX_INTERNED:
            self._data[location] = location
        return location


def samples_from_record(rec: Mapping[str, Any], interner: LocationInterner | None = None) -> SampleBatch:
    """A ``samples`` record as a :class:`SampleBatch`; :class:`BadRecord` naming what is wrong."""
    interner = interner or LocationInterner()
    t = stream_seconds(rec, "t", what="samples ")
    lost = rec.get("lost", 0)
    counted = rec.get("counted")
    multiplexed = rec.get("multiplexed", False)
    if type(lost) is not int or not 0 <= lost < U64:
        raise BadRecord(f"samples 'lost' must be a whole number from 0 to 2^64-1, got {_short(lost)}")
    if counted is not None and (type(counted) is not int or not 0 <= counted < U64):
        raise BadRecord(
            f"samples 'counted' must be a whole number from 0 to 2^64-1 or null, got {_short(counted)}"
        )
    if type(multiplexed) is not bool:
        raise BadRecord(f"samples 'multiplexed' must be true or false, got {multiplexed!r}")
    codes = [
        interner.code(CodeLocation(*_strings(entry, 3, i, "code", last_optional=True)))
        for i, entry in enumerate(_list(rec.get("code"), "code"))
    ]
    datas = []
    for i, entry in enumerate(_list(rec.get("data"), "data")):
        name, kind, module = _strings(entry, 3, i, "data")
        if kind not in DATA_KINDS:
            raise BadRecord(f"samples 'data'[{i}]: kind {kind!r} is not one of {', '.join(DATA_KINDS)}")
        datas.append(interner.data(DataLocation(name, kind, module)))
    out: list[AttributedSample] = []
    append = out.append
    n_code = len(codes)
    n_data = len(datas)
    for i, row in enumerate(_list(rec.get("samples"), "samples")):
        if type(row) is list and len(row) == 8:
            time, tid, cpu, period, weight, ci, di, addr = row
            if (
                type(time) is int
                and 0 <= time < U64
                and type(tid) is int
                and type(cpu) is int
                and type(period) is int
                and 1 <= period < U64
                and (weight is None or (type(weight) is int and 0 <= weight < U64))
                and type(ci) is int
                and 0 <= ci < n_code
                and (di is None or (type(di) is int and 0 <= di < n_data))
                and (addr is None or (type(addr) is int and 0 <= addr < U64))
            ):
                data = None if di is None else datas[di]
                append(AttributedSample(time, tid, cpu, period, weight, codes[ci], data, addr))
                continue
        raise BadRecord(
            f"samples[{i}] must be {SAMPLE_FIELDS}: integers (time, period, weight and addr "
            "u64 values, period >= 1), code/data indexing the "
            f"record's tables (0..{n_code - 1} / 0..{n_data - 1} or null), got {_short(row)}"
        )
    return SampleBatch(t, tuple(out), lost, counted, multiplexed)


def _list(value: object, key: str) -> list[Any]:
    if type(value) is not list:
        raise BadRecord(f"samples {key!r} must be a list, got {_short(value)}")
    return value


def _strings(entry: object, size: int, i: int, key: str, *, last_optional: bool = False) -> list[Any]:
    ok = type(entry) is list and len(entry) == size
    if ok:
        assert isinstance(entry, list)
        head = entry[:-1] if last_optional else entry
        ok = all(type(v) is str for v in head) and (
            not last_optional or entry[-1] is None or type(entry[-1]) is str
        )
    if not ok:
        shape = "[function, module, source or null]" if key == "code" else "[name, kind, module]"
        raise BadRecord(f"samples {key!r}[{i}] must be {shape} (strings), got {_short(entry)}")
    assert isinstance(entry, list)
    return entry


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
