"""Records of a sampling event's ring buffer: their types and one parser (and its inverse).

A sample's payload holds the fields its ``sample_type`` asked for in the ABI's fixed order;
``RecordLayout`` turns a ``sample_type`` into precompiled structs once, so a sample parses with one
``unpack_from``. The parser never trusts the bytes: a size smaller than a header stops it with a
reason, a record cut at the end waits for the next read, and a known record of the wrong size is
counted as malformed and skipped.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from sectormon.perf import abi

HEADER = struct.Struct("=IHH")

# sample_type bits the parser understands: the fixed-size ones, in the order the kernel writes them.
_SAMPLE_FIELDS: tuple[tuple[int, str, str], ...] = (
    (abi.PERF_SAMPLE_IDENTIFIER, "Q", "identifier"),
    (abi.PERF_SAMPLE_IP, "Q", "ip"),
    (abi.PERF_SAMPLE_TID, "II", "pid tid"),
    (abi.PERF_SAMPLE_TIME, "Q", "time"),
    (abi.PERF_SAMPLE_ADDR, "Q", "addr"),
    (abi.PERF_SAMPLE_ID, "Q", "id"),
    (abi.PERF_SAMPLE_STREAM_ID, "Q", "stream_id"),
    (abi.PERF_SAMPLE_CPU, "II", "cpu res"),
    (abi.PERF_SAMPLE_PERIOD, "Q", "period"),
    (abi.PERF_SAMPLE_WEIGHT, "Q", "weight"),
)
# The identity fields appended to other records with sample_id_all (IDENTIFIER comes last there).
_ID_FIELDS: tuple[tuple[int, str, str], ...] = (
    (abi.PERF_SAMPLE_TID, "II", "pid tid"),
    (abi.PERF_SAMPLE_TIME, "Q", "time"),
    (abi.PERF_SAMPLE_ID, "Q", "id"),
    (abi.PERF_SAMPLE_STREAM_ID, "Q", "stream_id"),
    (abi.PERF_SAMPLE_CPU, "II", "cpu res"),
    (abi.PERF_SAMPLE_IDENTIFIER, "Q", "identifier"),
)
SUPPORTED_SAMPLE_TYPE = 0
for _bit, _, _ in _SAMPLE_FIELDS:
    SUPPORTED_SAMPLE_TYPE |= _bit


class SampleRecord(NamedTuple):
    """One PERF_RECORD_SAMPLE. ``addr`` is the data address (0: none: the event or PMU gives none);
    ``weight`` the PMU's cost of the sampled access, in cycles on PEBS and SPE (0: none).

    A named tuple, not a frozen dataclass like the rarer records: a run has millions of samples,
    and a frozen dataclass takes several times as long to build (bench_hotspots in
    docs/perf-tuning.md).
    """

    ip: int
    pid: int
    tid: int
    time: int
    addr: int
    cpu: int
    period: int
    weight: int
    id: int = 0
    misc: int = 0

    @property
    def cpumode(self) -> int:
        """PERF_RECORD_MISC_KERNEL / _USER / _HYPERVISOR (``misc`` & CPUMODE_MASK)."""
        return self.misc & abi.PERF_RECORD_MISC_CPUMODE_MASK


@dataclass(frozen=True, slots=True)
class MmapRecord:
    """A new mapping (PERF_RECORD_MMAP or MMAP2): ``filename`` is a path, ``//anon``, ``[heap]``,
    ``[stack]``, ``[vdso]``, ...; ``prot``/``flags`` are 0 in a plain MMAP record."""

    pid: int
    tid: int
    addr: int
    length: int
    pgoff: int
    filename: str
    prot: int = 0
    flags: int = 0
    time: int = 0
    misc: int = 0

    @property
    def executable(self) -> bool:
        """A code mapping (MMAP_DATA is the kernel's flag for non-exec mappings)."""
        return not self.misc & abi.PERF_RECORD_MISC_MMAP_DATA


@dataclass(frozen=True, slots=True)
class CommRecord:
    """A thread's name changed; ``exec`` when the change came from an exec (a new address space)."""

    pid: int
    tid: int
    comm: str
    exec: bool = False
    time: int = 0


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """PERF_RECORD_FORK (``exit`` False) or PERF_RECORD_EXIT (``exit`` True) of thread ``tid``."""

    exit: bool
    pid: int
    ppid: int
    tid: int
    ptid: int
    time: int = 0


@dataclass(frozen=True, slots=True)
class LostRecord:
    """Records the kernel dropped because the ring buffer was full (PERF_RECORD_LOST, ``samples``
    False: any record kind) or samples a PMU dropped (PERF_RECORD_LOST_SAMPLES, ``samples`` True)."""

    lost: int
    samples: bool = False
    id: int = 0
    time: int = 0


@dataclass(frozen=True, slots=True)
class ThrottleRecord:
    """The kernel stopped (``throttled``) or resumed sampling: the sample rate hit
    ``kernel.perf_event_max_sample_rate``, so samples are missing in between."""

    throttled: bool
    time: int = 0
    id: int = 0


Record = SampleRecord | MmapRecord | CommRecord | TaskRecord | LostRecord | ThrottleRecord


@dataclass(slots=True)
class ParseResult:
    """What :meth:`RecordLayout.parse` found in a byte string.

    ``consumed`` bytes were whole records; a record cut at the end is left for the next read.
    ``error`` says why parsing stopped early (the rest cannot be read). ``malformed`` counts records
    of a known type whose size did not match, ``skipped`` records of types sectormon does not use.
    """

    records: list[Record] = field(default_factory=list)
    consumed: int = 0
    malformed: int = 0
    skipped: int = 0
    error: str = ""


def _struct(
    fields: Iterable[tuple[int, str, str]], sample_type: int
) -> tuple[struct.Struct, tuple[str, ...]]:
    fmt = "".join(code for bit, code, _ in fields if sample_type & bit)
    names = tuple(name for bit, _, names in fields if sample_type & bit for name in names.split())
    return struct.Struct("=" + fmt), names


def _cstring(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _padded(text: str) -> bytes:
    """``text`` NUL-terminated and padded to 8 bytes, as the kernel writes names."""
    raw = text.encode("utf-8", "surrogateescape") + b"\0"
    return raw + b"\0" * (-len(raw) % 8)


_MMAP = struct.Struct("=IIQQQ")
_MMAP2 = struct.Struct("=IIQQQIIQQII")
_COMM = struct.Struct("=II")
_TASK = struct.Struct("=IIIIQ")
_LOST = struct.Struct("=QQ")
_LOST_SAMPLES = struct.Struct("=Q")
_THROTTLE = struct.Struct("=QQQ")


class RecordLayout:
    """How records look for one ``sample_type`` (and ``sample_id_all``): parse and build them."""

    def __init__(self, sample_type: int, *, sample_id_all: bool = True) -> None:
        unsupported = sample_type & ~SUPPORTED_SAMPLE_TYPE
        if unsupported:
            raise ValueError(f"sample_type bits {unsupported:#x} have variable-size fields this parser lacks")
        self.sample_type = sample_type
        self.sample_id_all = sample_id_all
        self._sample, self._sample_names = _struct(_SAMPLE_FIELDS, sample_type)
        self._trailer, self._trailer_names = (
            _struct(_ID_FIELDS, sample_type) if sample_id_all else (struct.Struct("="), ())
        )
        self.sample_size = HEADER.size + self._sample.size
        names = self._sample_names
        # IDENTIFIER carries the same id as ID, at a fixed place; either fills SampleRecord.id.
        wanted = ["identifier" if n == "id" and "id" not in names else n for n in _SAMPLE_RECORD_FIELDS]
        # SampleRecord's fields from the unpacked values with a 0 appended for the absent ones.
        self._pick: Callable[[tuple[int, ...]], _Fields] = operator.itemgetter(
            *(names.index(n) if n in names else len(names) for n in wanted)
        )
        tnames = self._trailer_names
        self._time_index = tnames.index("time") if "time" in tnames else -1

    # ------------------------------------------------------------------ parsing

    def parse(self, buf: bytes | bytearray | memoryview) -> ParseResult:
        """Every whole record in ``buf``, in order (see :class:`ParseResult`)."""
        result = ParseResult()
        records = result.records
        append = records.append
        header = HEADER.unpack_from
        sample_size = self.sample_size
        sample_unpack = self._sample.unpack_from
        pick = self._pick
        end = len(buf)
        offset = 0
        while offset + HEADER.size <= end:
            kind, misc, size = header(buf, offset)
            if size < HEADER.size:
                result.error = f"record at byte {offset} has size {size}, less than its 8-byte header"
                break
            if offset + size > end:
                break
            if kind == abi.PERF_RECORD_SAMPLE:
                if size == sample_size:
                    append(SampleRecord(*pick(sample_unpack(buf, offset + HEADER.size) + _ZERO), misc))
                else:
                    result.malformed += 1
            elif kind in _SIDE_BAND:
                try:
                    append(self._side_band(kind, misc, bytes(buf[offset + HEADER.size : offset + size])))
                except _Malformed:
                    result.malformed += 1
            else:
                result.skipped += 1
            offset += size
        result.consumed = offset
        return result

    def _time(self, body: bytes) -> tuple[bytes, int]:
        """Split the sample_id trailer off ``body``: (payload, time or 0)."""
        size = self._trailer.size
        if len(body) < size:
            raise _Malformed
        if not size:
            return body, 0
        values = self._trailer.unpack_from(body, len(body) - size)
        return body[: len(body) - size], (values[self._time_index] if self._time_index >= 0 else 0)

    def _side_band(self, kind: int, misc: int, body: bytes) -> Record:
        """One record of a kind in ``_SIDE_BAND``; raises :class:`_Malformed` when it does not fit."""
        payload, time = self._time(body)
        if kind in (abi.PERF_RECORD_MMAP, abi.PERF_RECORD_MMAP2):
            fixed = _MMAP2 if kind == abi.PERF_RECORD_MMAP2 else _MMAP
            if len(payload) <= fixed.size:
                raise _Malformed
            values = fixed.unpack_from(payload)
            name = _cstring(payload[fixed.size :])
            pid, tid, addr, length, pgoff = values[:5]
            prot, flags = (values[9], values[10]) if kind == abi.PERF_RECORD_MMAP2 else (0, 0)
            return MmapRecord(pid, tid, addr, length, pgoff, name, prot, flags, time, misc)
        if kind == abi.PERF_RECORD_COMM:
            if len(payload) <= _COMM.size:
                raise _Malformed
            pid, tid = _COMM.unpack_from(payload)
            exec_ = bool(misc & abi.PERF_RECORD_MISC_COMM_EXEC)
            return CommRecord(pid, tid, _cstring(payload[_COMM.size :]), exec_, time)
        fixed = _FIXED[kind]
        if len(payload) != fixed.size:
            raise _Malformed
        values = fixed.unpack(payload)
        if kind in (abi.PERF_RECORD_FORK, abi.PERF_RECORD_EXIT):
            pid, ppid, tid, ptid, task_time = values
            return TaskRecord(kind == abi.PERF_RECORD_EXIT, pid, ppid, tid, ptid, task_time)
        if kind == abi.PERF_RECORD_LOST:
            return LostRecord(values[1], False, values[0], time)
        if kind == abi.PERF_RECORD_LOST_SAMPLES:
            return LostRecord(values[0], True, 0, time)
        return ThrottleRecord(kind == abi.PERF_RECORD_THROTTLE, values[0], values[1])

    # ------------------------------------------------------------------ building (tests and fakes)

    def _trailer_bytes(self, pid: int, tid: int, time: int, cpu: int = 0, id_: int = 0) -> bytes:
        known = {"pid": pid, "tid": tid, "time": time, "id": id_, "stream_id": id_}
        known.update(cpu=cpu, res=0, identifier=id_)
        return self._trailer.pack(*(known[n] for n in self._trailer_names))

    def build(self, record: Record) -> bytes:
        """The bytes the kernel would write for ``record`` (the inverse of :meth:`parse`)."""
        if isinstance(record, SampleRecord):
            known = {name: getattr(record, name) for name in _SAMPLE_RECORD_FIELDS}
            known.update(identifier=record.id, stream_id=record.id, res=0)
            body = self._sample.pack(*(known[n] for n in self._sample_names))
            return HEADER.pack(abi.PERF_RECORD_SAMPLE, record.misc, HEADER.size + len(body)) + body
        if isinstance(record, MmapRecord):
            fixed = _MMAP2.pack(
                record.pid,
                record.tid,
                record.addr,
                record.length,
                record.pgoff,
                0,
                0,
                0,
                0,
                record.prot,
                record.flags,
            )
            kind, misc = abi.PERF_RECORD_MMAP2, record.misc
            payload = fixed + _padded(record.filename)
            trailer = self._trailer_bytes(record.pid, record.tid, record.time)
        elif isinstance(record, CommRecord):
            kind = abi.PERF_RECORD_COMM
            misc = abi.PERF_RECORD_MISC_COMM_EXEC if record.exec else 0
            payload = _COMM.pack(record.pid, record.tid) + _padded(record.comm)
            trailer = self._trailer_bytes(record.pid, record.tid, record.time)
        elif isinstance(record, TaskRecord):
            kind, misc = (abi.PERF_RECORD_EXIT if record.exit else abi.PERF_RECORD_FORK), 0
            payload = _TASK.pack(record.pid, record.ppid, record.tid, record.ptid, record.time)
            trailer = self._trailer_bytes(record.pid, record.tid, record.time)
        elif isinstance(record, LostRecord):
            misc = 0
            if record.samples:
                kind, payload = abi.PERF_RECORD_LOST_SAMPLES, _LOST_SAMPLES.pack(record.lost)
            else:
                kind, payload = abi.PERF_RECORD_LOST, _LOST.pack(record.id, record.lost)
            trailer = self._trailer_bytes(0, 0, record.time, id_=record.id)
        else:
            kind = abi.PERF_RECORD_THROTTLE if record.throttled else abi.PERF_RECORD_UNTHROTTLE
            misc = 0
            payload = _THROTTLE.pack(record.time, record.id, record.id)
            trailer = self._trailer_bytes(0, 0, record.time, id_=record.id)
        body = payload + trailer
        return HEADER.pack(kind, misc, HEADER.size + len(body)) + body


_ZERO = (0,)
_Fields = tuple[int, int, int, int, int, int, int, int, int]
_SAMPLE_RECORD_FIELDS = ("ip", "pid", "tid", "time", "addr", "cpu", "period", "weight", "id")


class _Malformed(Exception):
    """A side-band record whose size does not fit its type (counted, then skipped by its size)."""


_FIXED = {
    abi.PERF_RECORD_FORK: _TASK,
    abi.PERF_RECORD_EXIT: _TASK,
    abi.PERF_RECORD_LOST: _LOST,
    abi.PERF_RECORD_LOST_SAMPLES: _LOST_SAMPLES,
    abi.PERF_RECORD_THROTTLE: _THROTTLE,
    abi.PERF_RECORD_UNTHROTTLE: _THROTTLE,
}
_SIDE_BAND = frozenset((abi.PERF_RECORD_MMAP, abi.PERF_RECORD_MMAP2, abi.PERF_RECORD_COMM, *_FIXED))
