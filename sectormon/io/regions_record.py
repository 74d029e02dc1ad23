"""The ``regions`` record of a recording: the marked regions' table, written when it changed.

A slice that carries a new table (:attr:`sectormon.data.readings.Slice.regions`) is written as
this record, then the slice record; the reader gives it back as a
:class:`~sectormon.data.regions.RegionsReading` just before that slice. The table is cumulative,
so the last record holds the whole run. Each (region, thread) is a list, as readings are::

    [name, number, pid, tid, rank|null, last_cpu, calls, open, open_counted, wall_ns, exited,
     [[events, values, time_enabled, time_running, thread_ns], ...]]

Everything read back is checked (a recording is input like any other): a damaged record is a bad
line, never a wrong count.
"""

from __future__ import annotations

from typing import Any

from sectormon.data.regions import GroupDelta, RegionSnapshot, RegionsReading, ThreadRegion
from sectormon.io.jsonl import FORMAT_VERSION, BadRecord, number

REGIONS_SCHEMA = f"sectormon/regions/{FORMAT_VERSION}"
_U64 = 1 << 64
_MAX_NAME = 4096


def regions_record(reading: RegionsReading) -> dict[str, Any]:
    snapshot = reading.snapshot
    return {
        "schema": REGIONS_SCHEMA,
        "t": reading.t,
        "index": reading.index,
        "overflow": sorted(snapshot.overflow),
        "unpaired": snapshot.unpaired,
        "dropped": snapshot.dropped,
        "threads": [_thread_json(r) for r in snapshot.threads],
    }


def _thread_json(r: ThreadRegion) -> list[Any]:
    groups = [[list(g.events), list(g.values), g.time_enabled, g.time_running, g.thread_ns] for g in r.groups]
    return [
        r.name,
        r.number,
        r.pid,
        r.tid,
        r.rank,
        r.last_cpu,
        r.calls,
        r.open,
        r.open_counted,
        r.wall_ns,
        r.thread_exited,
        groups,
    ]


def regions_from_record(rec: dict[str, Any]) -> RegionsReading:
    """A checked :class:`RegionsReading`; :class:`BadRecord` naming what is wrong."""
    t = number(rec, "t")
    if not t >= 0:
        raise BadRecord(f"regions 't' must be 0 or more, got {t!r}")
    index = _count(rec.get("index"), "regions 'index'")
    overflow = rec.get("overflow", [])
    if type(overflow) is not list or not all(type(x) is str for x in overflow):
        raise BadRecord("regions 'overflow' must be a list of strings")
    threads = rec.get("threads")
    if type(threads) is not list:
        raise BadRecord("regions 'threads' must be a list")
    snapshot = RegionSnapshot(
        threads=tuple(_thread(i, raw) for i, raw in enumerate(threads)),
        overflow=frozenset(overflow),
        unpaired=_count(rec.get("unpaired", 0), "regions 'unpaired'"),
        dropped=_count(rec.get("dropped", 0), "regions 'dropped'"),
    )
    return RegionsReading(t=t, index=index, snapshot=snapshot)


def _count(value: object, what: str) -> int:
    if type(value) is not int or not 0 <= value < _U64:
        raise BadRecord(f"{what} must be an integer from 0 to 2^64-1, got {str(value)[:40]!r}")
    return value


def _int(value: object, what: str, low: int = 0) -> int:
    if type(value) is not int or not low <= value < _U64:
        raise BadRecord(f"{what} must be an integer, got {str(value)[:40]!r}")
    return value


def _thread(i: int, raw: object) -> ThreadRegion:
    what = f"regions 'threads'[{i}]"
    if type(raw) is not list or len(raw) != 12:
        raise BadRecord(f"{what} must be a list of 12 fields")
    name, num, pid, tid, rank, cpu, calls, is_open, counted, wall, exited, groups = raw
    if type(name) is not str or len(name) > _MAX_NAME:
        raise BadRecord(f"{what}: the region name must be a string")
    if type(is_open) is not bool or type(counted) is not bool or type(exited) is not bool:
        raise BadRecord(f"{what}: open, open_counted and exited must be true or false")
    if rank is not None:
        rank = _int(rank, f"{what}: rank")
    if type(groups) is not list:
        raise BadRecord(f"{what}: groups must be a list")
    return ThreadRegion(
        name=name,
        number=_int(num, f"{what}: number", -(1 << 31)),
        pid=_int(pid, f"{what}: pid"),
        tid=_int(tid, f"{what}: tid"),
        rank=rank,
        last_cpu=_int(cpu, f"{what}: last_cpu", -1),
        calls=_int(calls, f"{what}: calls"),
        open=is_open,
        open_counted=counted,
        wall_ns=_int(wall, f"{what}: wall_ns"),
        groups=tuple(_group(f"{what} group {g}", raw_group) for g, raw_group in enumerate(groups)),
        thread_exited=exited,
    )


def _group(what: str, raw: object) -> GroupDelta:
    if type(raw) is not list or len(raw) != 5:
        raise BadRecord(f"{what} must be [events, values, time_enabled, time_running, thread_ns]")
    events, values, enabled, running, thread_ns = raw
    if type(events) is not list or not all(type(e) is str for e in events) or len(set(events)) != len(events):
        raise BadRecord(f"{what}: events must be a list of distinct names")
    if type(values) is not list or len(values) != len(events):
        raise BadRecord(f"{what}: values must be one count per event")
    return GroupDelta(
        events=tuple(events),
        values=tuple(_int(v, f"{what}: a value") for v in values),
        time_enabled=_int(enabled, f"{what}: time_enabled"),
        time_running=_int(running, f"{what}: time_running"),
        thread_ns=_int(thread_ns, f"{what}: thread_ns"),
    )
