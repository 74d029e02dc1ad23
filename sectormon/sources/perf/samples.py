"""Live sampling of a perf target: sampling events and their ring buffers, plus the counted total.

One sampling event per CPU is opened with ``inherit`` on the launched command or each thread of a
process (``--cpus``: one per CPU), writing into one ring per CPU, with the same event in counting
mode beside it for the scale factor's total. While the target runs only the rings' bytes are copied
out; parsing and resolving come afterwards, so the target is disturbed as little as possible.
``open_rings`` is shared with the live feed (``live_samples.py``), which parses round by round.

Longer notes: docs/internals.md.
"""

from __future__ import annotations

import heapq
import resource
import select
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from types import FrameType

from sectormon.data.samples import Event, MapEvent, ProcessEvent, Sample
from sectormon.errors import UsageError
from sectormon.host.maps import all_proc_maps, read_proc_maps
from sectormon.host.topology import online_cpus
from sectormon.perf import abi
from sectormon.perf.errors import PerfError
from sectormon.perf.events import EventSpec, parse_event
from sectormon.perf.group import PerfGroup
from sectormon.perf.records import (
    CommRecord,
    LostRecord,
    MmapRecord,
    Record,
    RecordLayout,
    SampleRecord,
    TaskRecord,
    ThrottleRecord,
)
from sectormon.perf.sampling import SamplingConfig, SamplingEvent
from sectormon.profiles.model import Profile
from sectormon.sources.perf.launch import describe_exit, shell_status
from sectormon.sources.perf.targets import BadTarget, CommandTarget, CpuTarget, PidTarget

POLL_SECONDS = 0.1
FAULT_EVENTS = ("page-faults", "faults", "minor-faults", "major-faults")
DEFAULT_FREQ = 1000
Target = CommandTarget | PidTarget | CpuTarget


def wait_for_rings(poller: select.poll, timeout_s: float) -> None:
    """Wait up to ``timeout_s`` for data in the polled rings.

    A ring whose task is gone is unregistered: it brings no more data, and poll() would return at
    once for it forever.
    """
    try:
        ready = poller.poll(timeout_s * 1000)
    except InterruptedError:
        return
    for fd, flags in ready:
        if flags & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
            poller.unregister(fd)


def resolve_event(event: str, profile: Profile, *, option: str) -> tuple[str, EventSpec]:
    """A profile event name, else a perf event spec (one clear error for neither)."""
    if event in profile.events:
        return event, parse_event(profile.events[event].spec)
    try:
        return event, parse_event(event)
    except PerfError as exc:
        raise UsageError(f"{option} {event}: not an event of the {profile.name} profile, and {exc}") from None


def default_rate(name: str, spec: EventSpec, profile: Profile) -> tuple[int, int]:
    """(period, freq) when none is given: the profile's period for its sampling event, every
    fault for the fault events (they are microseconds apart), else about DEFAULT_FREQ a second."""
    sampling = profile.sampling
    if sampling is not None and sampling.event == name:
        return sampling.period, 0
    if spec.spec.lower() in FAULT_EVENTS:
        return 1, 0
    return 0, DEFAULT_FREQ


def make_target(
    *,
    pid: int | None = None,
    cpus: Sequence[int] = (),
    command: Sequence[str] = (),
    stdout: int | None = None,
) -> Target:
    """The target of a sampling run: exactly one of ``pid``, ``cpus`` and ``command``."""
    if pid is not None:
        return PidTarget(pid)
    if cpus:
        return CpuTarget(cpus)
    if command:
        return CommandTarget(list(command), stdout=stdout)
    raise BadTarget("nothing to sample: give --pid PID, --cpus LIST or -- CMD ARGS")


def exit_status(target: Target) -> tuple[int, str]:
    """(shell exit status, what happened) of a launched command that ended by itself; (0, "") else."""
    if isinstance(target, CommandTarget) and not target.stopped and target.exit_code:
        return shell_status(target.exit_code), describe_exit(target.exit_code)
    return 0, ""


@dataclass(frozen=True, slots=True)
class CountedTotal:
    """The event counted in counting mode over the run, summed over the units.

    ``value`` is ``raw`` with each unit scaled by its enabled/running times where the kernel
    multiplexed it (``multiplexed``); None when a unit was enabled but never got a counter.
    """

    raw: int
    value: int | None
    multiplexed: bool


def counted_total(readings: Sequence[tuple[int, int, int]]) -> CountedTotal:
    """Sum (raw count, time_enabled, time_running) readings of the units into a :class:`CountedTotal`."""
    raw = 0
    value: float | None = 0.0
    multiplexed = False
    for count, enabled, running in readings:
        raw += count
        if value is None:
            continue
        if running >= enabled:
            value += count
        elif running > 0:
            multiplexed = True
            value += count * enabled / running
        else:
            value = None
    return CountedTotal(raw, None if value is None else round(value), multiplexed)


@dataclass
class RecordStream:
    """The run's records, merged by time across rings and turned into attribution events.

    ``period`` is the fixed sampling period (samples carry their own in ``freq`` mode). Iterating
    fills the counters: ``lost`` records dropped by the kernel (ring full), ``throttled``
    times the kernel paused sampling for the max sample rate, ``malformed`` records skipped, and
    ``errors`` rings whose bytes could not be parsed to the end.
    """

    layout: RecordLayout
    rings: Sequence[Sequence[bytes]]
    before: Sequence[MapEvent] = ()
    period: int = 0
    lost: int = 0
    throttled: int = 0
    malformed: int = 0
    errors: list[str] = field(default_factory=list)
    _carry: list[bytes | None] = field(default_factory=list)

    def __iter__(self) -> Iterator[Event]:
        yield from self.before
        merged = heapq.merge(*(self._records(chunks) for chunks in self.rings), key=_record_time)
        for record in merged:
            event = self._event(record)
            if event is not None:
                yield event

    def feed_round(self, chunks: Sequence[bytes]) -> list[Event]:
        """A live round's events: each ring's new bytes (one per ring, in ring order), parsed
        after what the ring's last round left unfinished, merged by time. A ring whose bytes
        could not be parsed is read no further (its error is in ``errors``)."""
        carry = self._carry
        while len(carry) < len(chunks):
            carry.append(b"")
        parsed: list[list[Record]] = []
        for i, chunk in enumerate(chunks):
            left = carry[i]
            if left is None:
                continue
            data = left + chunk if left else chunk
            result = self.layout.parse(data)
            self.malformed += result.malformed
            parsed.append(list(result.records))
            if result.error:
                self.errors.append(result.error)
                carry[i] = None
            else:
                carry[i] = data[result.consumed :]
        out = []
        for record in heapq.merge(*parsed, key=_record_time):
            event = self._event(record)
            if event is not None:
                out.append(event)
        return out

    def _records(self, chunks: Sequence[bytes]) -> Iterator[Record]:
        carry = b""
        for chunk in chunks:
            data = carry + chunk if carry else chunk
            result = self.layout.parse(data)
            self.malformed += result.malformed
            yield from result.records
            if result.error:
                self.errors.append(result.error)
                return
            carry = data[result.consumed :]

    def _event(self, record: Record) -> Event | None:
        if isinstance(record, SampleRecord):
            ip, pid, tid, time, addr, cpu, period, weight, _, misc = record
            kernel = misc & abi.PERF_RECORD_MISC_CPUMODE_MASK == abi.PERF_RECORD_MISC_KERNEL
            return Sample(
                time, pid, tid, cpu, ip, addr or None, period or self.period, weight or None, kernel
            )
        if isinstance(record, MmapRecord):
            end = record.addr + record.length
            return MapEvent(
                record.time, record.pid, record.addr, end, record.pgoff, record.filename, record.prot or None
            )
        if isinstance(record, CommRecord):
            return ProcessEvent(record.time, record.pid, "exec") if record.exec else None
        if isinstance(record, TaskRecord):
            if not record.exit and record.pid != record.ppid:
                return ProcessEvent(record.time, record.pid, "fork", record.ppid)
            return None
        if isinstance(record, LostRecord):
            self.lost += record.lost
        elif isinstance(record, ThrottleRecord) and record.throttled:
            self.throttled += 1
        return None


def _record_time(record: Record) -> int:
    return record.time


@dataclass(frozen=True)
class SamplingRun:
    """What a run produced: the rings' bytes (see :attr:`stream`), the counted total, the costs.

    ``lost`` is the kernel's own count of dropped samples (PERF_FORMAT_LOST; None before Linux 6.0,
    where only the stream's PERF_RECORD_LOST records tell, counting the side-band records dropped
    with the samples too: see :meth:`SamplingRings.lost`). ``cpu_wide``: every process on the
    CPUs was sampled, including ones that never announced their mappings in the rings.
    """

    config: SamplingConfig
    rings: tuple[tuple[bytes, ...], ...]
    before: tuple[MapEvent, ...]
    counted: CountedTotal | None
    lost: int | None
    wall_seconds: float
    cpu_seconds: float
    target_cpu_seconds: float | None
    units: int
    cpu_wide: bool = False

    @property
    def bytes(self) -> int:
        return sum(len(chunk) for ring in self.rings for chunk in ring)

    def stream(self) -> RecordStream:
        return RecordStream(self.config.layout(), self.rings, self.before, self.config.period)


class SamplingRings:
    """The sampling events of a run, one ring buffer per CPU, and the counting groups beside them.

    The first event opened on a CPU owns that CPU's ring; every other event there (another thread
    of the process) writes into it. The sampling events write samples only: each has a tracking
    event beside it (``trackers``) for the side-band records, writing into the same ring, so the
    kernel's lost count of a sampling event is of its samples alone (see :meth:`lost`).
    """

    def __init__(self, spec: EventSpec, config: SamplingConfig, name: str) -> None:
        self.spec = spec
        self.config = config
        self.name = name
        self.owners: dict[int, SamplingEvent] = {}
        self.members: list[SamplingEvent] = []
        self.trackers: list[SamplingEvent] = []
        self.counters: list[PerfGroup] = []
        self.chunks: dict[int, list[bytes]] = {}
        # The counters' readings when sampling started and stopped (enable(), disable()).
        self._zero: list[tuple[int, int, int]] | None = None
        self._end: list[tuple[int, int, int]] | None = None

    def open_task(self, pid: int, cpus: Sequence[int]) -> None:
        """Sample task ``pid`` (and, with ``inherit``, what it starts) on ``cpus``, and count it."""
        counter = PerfGroup(
            [self.spec],
            pid=pid,
            cpu=-1,
            names=[self.name],
            exclude_kernel=self.config.exclude_kernel,
            exclude_hv=self.config.exclude_hv,
            enable_on_exec=self.config.enable_on_exec,
            inherit=self.config.inherit,
        )
        self.counters.append(counter)
        for cpu in cpus:
            self._open(pid, cpu)

    def open_cpu(self, cpu: int) -> None:
        """Sample and count everything on ``cpu``."""
        self.counters.append(
            PerfGroup(
                [self.spec],
                pid=-1,
                cpu=cpu,
                names=[self.name],
                exclude_kernel=self.config.exclude_kernel,
                exclude_hv=self.config.exclude_hv,
            )
        )
        self._open(-1, cpu)

    def _open(self, pid: int, cpu: int) -> None:
        owner = self.owners.get(cpu)
        event = SamplingEvent(
            self.spec, self.config, pid=pid, cpu=cpu, name=self.name, output=owner, side_band=False
        )
        if owner is None:
            self.owners[cpu] = event
            self.chunks[cpu] = []
        else:
            self.members.append(event)
        self.trackers.append(SamplingEvent.tracking(event, output=owner or event))

    def sampling_events(self) -> list[SamplingEvent]:
        """The events that sample (without their trackers)."""
        return [*self.owners.values(), *self.members]

    def events(self) -> list[SamplingEvent]:
        """Every event of the rings: the sampling events and their trackers."""
        return [*self.sampling_events(), *self.trackers]

    def lost(self) -> int | None:
        """Samples the kernel dropped on every sampling event (None: this kernel does not count them).

        Exact: the kernel counts a record it could not write on the event that wrote it (an
        inherited event's on its parent), and only samples are written by these events. The
        PERF_RECORD_LOST records in the rings are no substitute: they count the dropped records of
        every event writing into a ring, the trackers' side-band records too.
        """
        total = 0
        for event in self.sampling_events():
            lost = event.lost()
            if lost is None:
                return None
            total += lost
        return total

    def drain(self) -> int:
        total = 0
        for cpu, data in zip(self.owners, self.read_new(), strict=True):
            if data:
                self.chunks[cpu].append(data)
                total += len(data)
        return total

    def read_new(self) -> list[bytes]:
        """Each ring's bytes since its last read, in ring order (not kept: a live reader's)."""
        return [owner.read_raw() for owner in self.owners.values()]

    def fds(self) -> list[int]:
        """The fds of the rings (poll() them for the watermark)."""
        return [owner.fd for owner in self.owners.values() if owner.fd is not None]

    def enable(self) -> None:
        """Start counting and sampling now (a command's events start at its exec instead).

        The counters and the sampling events are separate fds, enabled one ioctl after another, so
        the counters start first and are read as the run's zero once every sampling event runs:
        what they counted before was never sampled and stays out of the total. Events between the
        last enable and that read are sampled but not counted (a read() syscall's time); a
        command's events all start at its exec and have no such window.
        """
        for counter in self.counters:
            counter.enable()
        for event in [*self.trackers, *self.sampling_events()]:
            event.enable()
        self._zero = self._read()

    def disable(self) -> None:
        """Stop sampling, read the counters as the run's end, then stop counting (enable's mirror)."""
        for event in self.events():
            event.disable()
        self._end = self._read()
        for counter in self.counters:
            counter.disable()

    def readings(self) -> list[tuple[int, int, int]] | None:
        """Each counting unit's (count, time_enabled, time_running) since :meth:`enable` (or since the
        command's exec) and until :meth:`disable`, if called; None when one cannot be read."""
        now = self._end if self._end is not None else self._read()
        if now is None or self._zero is None:
            return now
        return [
            (count - c0, enabled - e0, running - r0)
            for (count, enabled, running), (c0, e0, r0) in zip(now, self._zero, strict=True)
        ]

    def _read(self) -> list[tuple[int, int, int]] | None:
        out = []
        for counter in self.counters:
            try:
                values = counter.read()
            except PerfError:
                return None
            out.append((values.values[0], values.time_enabled, values.time_running))
        return out

    def close(self) -> None:
        for event in [*self.trackers, *self.members]:
            event.close()
        for event in self.owners.values():
            event.close()
        for counter in self.counters:
            counter.close()


class _Stop:
    """SIGTERM and SIGINT end the run (the report is still made), in the main thread only."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._previous: dict[int, object] = {}

    def __enter__(self) -> _Stop:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested.set()

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]


def _open_threads(target: PidTarget, rings: SamplingRings, cpus: Sequence[int]) -> None:
    """Every thread of a running process; threads started while opening are caught by listing
    again until no new one appears (those started later inherit their creator's events)."""
    opened: set[int] = set()
    while True:
        new = [tid for tid in target.tids() if tid not in opened]
        if not new:
            break
        for tid in new:
            opened.add(tid)
            try:
                rings.open_task(tid, cpus)
            except PerfError as exc:
                if not exc.unit_gone:
                    raise
    if not rings.owners:
        raise BadTarget(f"--pid {target.pid}: the process has no threads left to sample")


def open_rings(
    target: Target,
    spec: EventSpec,
    config: SamplingConfig,
    *,
    name: str = "",
) -> tuple[SamplingRings, list[MapEvent]]:
    """The sampling events and counting groups of a started target, opened disabled, and the
    mappings that existed before (a running process's, or every process's for CPUs).

    A command still held before its exec gets events the kernel enables at the exec (with
    ``inherit``, as do a process's threads); CPUs get one event and ring each. Enable the others
    with :meth:`SamplingRings.enable`.
    """
    name = name or spec.spec
    before: list[MapEvent] = []
    if isinstance(target, CpuTarget):
        config = replace(config, inherit=False, enable_on_exec=False)
    else:
        command = isinstance(target, CommandTarget)
        config = replace(config, inherit=True, enable_on_exec=command)
    rings = SamplingRings(spec, config, name)
    try:
        if isinstance(target, CommandTarget):
            assert target.pid is not None
            rings.open_task(target.pid, online_cpus())
        elif isinstance(target, PidTarget):
            _open_threads(target, rings, online_cpus())
            assert target.pid is not None
            before = read_proc_maps(target.pid, 0)
        else:
            for cpu in target.cpus:
                rings.open_cpu(cpu)
            before = all_proc_maps()
    except BaseException:
        rings.close()
        raise
    return rings, before


def sample_target(
    target: Target,
    spec: EventSpec,
    config: SamplingConfig,
    *,
    name: str = "",
    duration: float | None = None,
    stop: threading.Event | None = None,
) -> SamplingRun:
    """Sample ``target`` until it ends, ``duration`` seconds pass, ``stop`` is set, or SIGINT/SIGTERM.

    A command is launched gated and its events are enabled by the kernel at its exec; a running
    process or CPUs are sampled from the moment every event is open. The command is ended with the
    run (as ``perf record -- CMD`` does) when it is still running then.
    """
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    rings: SamplingRings | None = None
    try:
        if isinstance(target, CommandTarget):
            target.start()
        rings, before = open_rings(target, spec, config, name=name)
        with _Stop() as signals:
            wall_start = time.monotonic()
            cpu_start = time.process_time()
            if isinstance(target, CommandTarget):
                target.release()
            else:
                rings.enable()
            _run(target, rings, duration, stop, signals.requested)
            if not isinstance(target, CommandTarget):
                rings.disable()
            rings.drain()
            cpu_seconds = time.process_time() - cpu_start
            wall_seconds = time.monotonic() - wall_start
        readings = rings.readings()
        counted = counted_total(readings) if readings is not None else None
        lost = rings.lost()
    finally:
        if rings is not None:
            rings.close()
        target.close()
    target_cpu = None
    if isinstance(target, CommandTarget):
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        target_cpu = (children.ru_utime - children_before.ru_utime) + (
            children.ru_stime - children_before.ru_stime
        )
    return SamplingRun(
        config=rings.config,
        rings=tuple(tuple(chunks) for chunks in rings.chunks.values()),
        before=tuple(before),
        counted=counted,
        lost=lost,
        wall_seconds=wall_seconds,
        cpu_seconds=cpu_seconds,
        target_cpu_seconds=target_cpu,
        units=len(rings.counters),
        cpu_wide=isinstance(target, CpuTarget),
    )


def _run(
    target: Target,
    rings: SamplingRings,
    duration: float | None,
    stop: threading.Event | None,
    signalled: threading.Event,
) -> None:
    """Drain every ring whenever one reaches its watermark, or every POLL_SECONDS, until the end."""
    poller = select.poll()
    for owner in rings.owners.values():
        assert owner.fd is not None
        poller.register(owner.fd, select.POLLIN)
    deadline = None if duration is None else time.monotonic() + duration
    while True:
        timeout = POLL_SECONDS
        if deadline is not None:
            timeout = max(0.0, min(POLL_SECONDS, deadline - time.monotonic()))
        wait_for_rings(poller, timeout)
        rings.drain()
        if target.finished() or signalled.is_set() or (stop is not None and stop.is_set()):
            return
        if deadline is not None and time.monotonic() >= deadline:
            return
