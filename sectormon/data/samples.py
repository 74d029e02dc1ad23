"""What attribution reads and what it produces, as plain immutable data.

Input is a time-ordered stream of :class:`Sample` (one sampled event: where the code was, which
data address it touched, how long it took) and the address-space changes that say what those
addresses meant at the time (:class:`MapEvent`, :class:`ProcessEvent`). perf, a recording or the
simulator can produce it. Output is :class:`AttributedSample`: the same sample with its code and
data resolved to names, which is what the aggregator counts and what a recording can keep, so a
replay re-aggregates without the binaries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass(frozen=True, slots=True)
class LatencyBucket:
    """A latency class of sampled accesses: at most ``max_cycles`` (None: anything slower than the
    previous bucket), e.g. L1 hit / L2 hit / memory from the CPU's expected latencies."""

    name: str
    max_cycles: float | None = None
    description: str = ""


class Sample(NamedTuple):
    """One sampled event (a named tuple: millions are made, and a frozen dataclass costs several
    times as much to make: see bench_hotspots in docs/perf-tuning.md).

    ``time`` is in ns (CLOCK_MONOTONIC for perf). ``addr`` is the data address, None when the
    event or the PMU gives none (A64FX overflow samples, most hardware events). ``weight`` is the
    access's latency in cycles where the PMU measures it (PEBS, SPE), else None. ``period`` is
    how many events this sample stands for. ``kernel`` is True when the IP is in kernel mode.
    """

    time: int
    pid: int
    tid: int
    cpu: int
    ip: int
    addr: int | None
    period: int
    weight: int | None = None
    kernel: bool = False


@dataclass(frozen=True, slots=True)
class MapEvent:
    """Process ``pid`` mapped ``[start, end)`` from ``path`` at file offset ``pgoff``.

    ``path`` is a file, or a kernel name such as ``[heap]``, ``[stack]``, ``[vdso]``, ``//anon``.
    ``prot`` is the PROT_* bits (read 1, write 2, exec 4), None when the source does not say.
    """

    time: int
    pid: int
    start: int
    end: int
    pgoff: int
    path: str
    prot: int | None = None


@dataclass(frozen=True, slots=True)
class ProcessEvent:
    """A process's address space began anew (``exec``) or was copied (``fork``, from ``parent``)."""

    time: int
    pid: int
    kind: str
    parent: int = 0


Event = Sample | MapEvent | ProcessEvent


@dataclass(frozen=True, slots=True)
class CodeLocation:
    """Where a sample's IP was: ``function`` in ``module``, and ``source`` (``file:line``) when
    the module has DWARF line information. A stripped module gives ``module+0xOFFSET`` as the
    function; an address outside every module gives ``[unknown]``."""

    function: str
    module: str
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "module": self.module, "source": self.source}


DATA_KINDS = ("symbol", "section", "heap", "stack", "mapping", "unknown")


@dataclass(frozen=True, slots=True)
class DataLocation:
    """What a sample's data address belonged to.

    ``kind`` is ``symbol`` (a global or static variable: an ELF OBJECT symbol), ``section`` (inside
    a module's segments but no symbol covers it, e.g. a stripped binary: ``name`` is the section),
    ``heap``, ``stack``, ``mapping`` (another mapping: ``name`` is its path or ``[anon]``) or
    ``unknown`` (no mapping known). ``module`` is the ELF file for ``symbol``/``section``.
    """

    name: str
    kind: str
    module: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "module": self.module}


class AttributedSample(NamedTuple):
    """A sample with its locations resolved: what the aggregator counts and a recording keeps
    (a named tuple, like :class:`Sample`)."""

    time: int
    tid: int
    cpu: int
    period: int
    weight: int | None
    code: CodeLocation
    data: DataLocation | None
    addr: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "t": self.time,
            "tid": self.tid,
            "cpu": self.cpu,
            "period": self.period,
            "weight": self.weight,
            "code": self.code.to_json(),
            "data": self.data.to_json() if self.data is not None else None,
            "addr": self.addr,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AttributedSample:
        """The inverse of :meth:`to_json`; KeyError/TypeError/ValueError on a malformed object."""
        code = data["code"]
        raw = data["data"]
        where = None if raw is None else DataLocation(str(raw["name"]), str(raw["kind"]), str(raw["module"]))
        return cls(
            time=int(data["t"]),
            tid=int(data["tid"]),
            cpu=int(data["cpu"]),
            period=int(data["period"]),
            weight=None if data["weight"] is None else int(data["weight"]),
            code=CodeLocation(str(code["function"]), str(code["module"]), _optional_str(code["source"])),
            data=where,
            addr=None if data["addr"] is None else int(data["addr"]),
        )


@dataclass(frozen=True, slots=True)
class SampleBatch:
    """The samples a live session took over one frame window, in the order it took them.

    ``t`` is the stream time (seconds) it was taken at. ``lost`` is how many samples the kernel
    dropped in the window; ``counted`` is the sampled event's count in counting mode over the
    window, for the scale factor (None: it could not be read), ``multiplexed`` whether that count
    was scaled for multiplexing. A recording keeps batches as they are (``sectormon/samples``
    records), so a replay aggregates the same samples into the same windows.
    """

    t: float
    samples: tuple[AttributedSample, ...] = ()
    lost: int = 0
    counted: int | None = None
    multiplexed: bool = False


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)
