"""One sampling event on a thread or CPU: ``sample_period``/``sample_freq``, its ring buffer, its records.

The event writes samples with IP, pid/tid, time, data address, CPU and weight (the period only in
``freq`` mode: with a fixed period, asking for it makes a software event sample every occurrence).
Beside it a ``dummy`` tracking event writes the side-band records symbolization needs (mmap, comm,
fork/exit) into the same ring, so the sampling event's lost count is its lost samples alone.
CLOCK_MONOTONIC stamps make every time comparable with ``time.monotonic_ns()``.

Longer notes: docs/internals.md.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import time
from dataclasses import dataclass, replace

from sectormon.perf import abi, syscall
from sectormon.perf.errors import Attempt, InvalidAttribute, PerfError
from sectormon.perf.events import EventSpec
from sectormon.perf.records import ParseResult, RecordLayout
from sectormon.perf.ring import RingBuffer, check_pages

SAMPLE_TYPE = (
    abi.PERF_SAMPLE_IP
    | abi.PERF_SAMPLE_TID
    | abi.PERF_SAMPLE_TIME
    | abi.PERF_SAMPLE_ADDR
    | abi.PERF_SAMPLE_CPU
    | abi.PERF_SAMPLE_WEIGHT
)
_VALUE_LOST = struct.Struct("=QQ")  # read(): the count, then the lost samples
DEFAULT_PAGES = 128  # 512 KiB with 4 KiB pages: perf record's default, inside the unprivileged allowance
CLOCK_MONOTONIC = time.CLOCK_MONOTONIC


@dataclass(frozen=True, slots=True)
class SamplingConfig:
    """How to sample: every ``period`` events, or about ``freq`` times a second (exactly one is set).

    ``wakeup_bytes`` is when poll() on the fd reports data (default: a quarter of the ring), so a
    reader that sleeps in poll() wakes in time to drain before the ring fills.
    """

    period: int = 0
    freq: int = 0
    pages: int = DEFAULT_PAGES
    exclude_kernel: bool = True
    exclude_hv: bool = True
    inherit: bool = False
    enable_on_exec: bool = False
    precise_ip: int = 0
    wakeup_bytes: int = 0

    def __post_init__(self) -> None:
        if (self.period > 0) == (self.freq > 0):
            raise ValueError("give exactly one of period and freq, > 0")
        check_pages(self.pages)

    @property
    def sample_type(self) -> int:
        """:data:`SAMPLE_TYPE`, with each sample's period when it varies (``freq``)."""
        return SAMPLE_TYPE | (abi.PERF_SAMPLE_PERIOD if self.freq else 0)

    def layout(self) -> RecordLayout:
        """How this configuration's records look."""
        return RecordLayout(self.sample_type, sample_id_all=True)


def sampling_attr(
    spec: EventSpec,
    config: SamplingConfig,
    *,
    page_size: int,
    count_lost: bool = True,
    side_band: bool = True,
) -> abi.PerfEventAttr:
    """The attr of a sampling event, with the side-band records symbolization needs (``side_band``).

    ``count_lost`` asks for the event's lost count in its reads (PERF_FORMAT_LOST, Linux 6.0):
    unlike PERF_RECORD_LOST, which the kernel writes only when the ring has room again, it also
    covers the records dropped at the very end of a run. Both count every record the kernel could
    not write, of any kind: PERF_FORMAT_LOST counts those of this event only (its children's
    included), PERF_RECORD_LOST those of every event writing into the ring. So an event whose lost
    count must be its lost samples alone carries no side-band records (``side_band`` False): a
    :data:`TRACKING` event beside it does (see :meth:`SamplingEvent.tracking`).
    """
    attr = abi.make_attr(
        spec.type,
        spec.config,
        config1=spec.config1,
        config2=spec.config2,
        config3=spec.config3,
        read_format=abi.PERF_FORMAT_LOST if count_lost else 0,
        sample_period=config.freq or config.period,
        sample_type=config.sample_type,
        wakeup=config.wakeup_bytes or max(1, config.pages * page_size // 4),
        clockid=CLOCK_MONOTONIC,
        flags={
            "disabled": True,
            "inherit": config.inherit,
            "exclude_kernel": config.exclude_kernel,
            "exclude_hv": config.exclude_hv,
            "enable_on_exec": config.enable_on_exec,
            "freq": config.freq > 0,
            "mmap": side_band,
            "mmap2": side_band,
            "mmap_data": side_band,
            "comm": side_band,
            "comm_exec": side_band,
            "task": side_band,
            "sample_id_all": True,
            "watermark": True,
            "use_clockid": True,
        },
    )
    attr.precise_ip = config.precise_ip
    return attr


TRACKING = EventSpec("dummy", abi.PERF_TYPE_SOFTWARE, abi.PERF_COUNT_SW_DUMMY)
"""The event that carries a sampling event's side-band records: it never counts nor samples."""


class SamplingEvent:
    """A sampling event opened on ``pid``/``cpu`` with its ring buffer mapped, or writing into the
    ring of ``output`` (an event on the same CPU: PERF_EVENT_IOC_SET_OUTPUT).

    Opened disabled (``enable_on_exec`` lets the kernel enable it at the target's exec);
    :meth:`read_records` drains the ring and parses what it held. ``side_band`` False: it writes
    samples only (and the kernel's THROTTLE records), and :meth:`lost` counts lost samples alone;
    the MMAP2, COMM and FORK/EXIT records then come from a :meth:`tracking` event.

    The kernel refuses a ring on an inherited event that follows a task on every CPU (``cpu=-1``),
    so inherited events are opened once per CPU: one ring per CPU, shared by every task sampled there.
    """

    def __init__(
        self,
        spec: EventSpec,
        config: SamplingConfig,
        *,
        pid: int,
        cpu: int = -1,
        name: str = "",
        output: SamplingEvent | None = None,
        side_band: bool = True,
    ) -> None:
        self.name = name or spec.spec
        self.pid = pid
        self.cpu = cpu
        self.config = config
        self.layout = config.layout()
        page_size = os.sysconf("SC_PAGE_SIZE")
        attempt = Attempt(self.name, pid, cpu, spec=spec.spec, exclude_kernel=config.exclude_kernel)
        self.counts_lost = True
        try:
            try:
                self.fd: int | None = syscall.perf_event_open(
                    sampling_attr(spec, config, page_size=page_size, side_band=side_band),
                    pid,
                    cpu,
                    attempt=attempt,
                )
            except InvalidAttribute as exc:
                if exc.errno != errno.EINVAL:
                    raise
                # A kernel before 6.0 has no PERF_FORMAT_LOST: lost samples then come from the
                # PERF_RECORD_LOST records alone.
                self.counts_lost = False
                attr = sampling_attr(spec, config, page_size=page_size, count_lost=False, side_band=side_band)
                self.fd = syscall.perf_event_open(attr, pid, cpu, attempt=attempt)
        except InvalidAttribute as exc:
            raise InvalidAttribute(
                f"{exc} (sampling needs a kernel of 4.1 or later, and some PMUs cannot sample: "
                "try a software event such as page-faults)",
                errno=exc.errno,
                event=exc.event,
            ) from None
        self.ring: RingBuffer | None = None
        try:
            if output is None:
                self.ring = RingBuffer(self.fd, config.pages, event=self.name)
            else:
                redirect = Attempt(self.name, pid, cpu, action="redirect the samples of")
                syscall.ioctl(self.fd, abi.PERF_EVENT_IOC_SET_OUTPUT, output._fd(), attempt=redirect)
        except BaseException:
            os.close(self.fd)
            raise
        self._attempt = Attempt(self.name, pid, cpu, action="enable")

    @classmethod
    def tracking(cls, sampled: SamplingEvent, output: SamplingEvent | None = None) -> SamplingEvent:
        """The side-band event of ``sampled`` (opened with ``side_band`` False): same task, CPU,
        configuration and timing (so its records share the ring's layout: ``sample_type``,
        ``sample_id_all``, clock), writing its MMAP2, COMM and FORK/EXIT records into the ring of
        ``output`` (default: ``sampled``'s own), so that those records, when the ring is full,
        are dropped on its lost count and not on the samples'."""
        return cls(
            TRACKING,
            sampled.config,
            pid=sampled.pid,
            cpu=sampled.cpu,
            name=f"{sampled.name} (side-band)",
            output=output or sampled,
            side_band=True,
        )

    def enable(self) -> None:
        syscall.ioctl(self._fd(), abi.PERF_EVENT_IOC_ENABLE, 0, attempt=self._attempt)

    def disable(self) -> None:
        syscall.ioctl(self._fd(), abi.PERF_EVENT_IOC_DISABLE, 0, attempt=self._attempt)

    def lost(self) -> int | None:
        """Samples of this event the kernel dropped so far (None: this kernel does not count them)."""
        if not self.counts_lost:
            return None
        try:
            data = os.read(self._fd(), 16)
        except OSError:
            return None
        return _VALUE_LOST.unpack(data)[1] if len(data) == _VALUE_LOST.size else None

    def read_raw(self) -> bytes:
        """The bytes the kernel published since the last read (the ring's space is freed); b""
        for an event that writes into another one's ring."""
        return self.ring.read() if self.ring is not None else b""

    def read_records(self) -> ParseResult:
        """Drain the ring and parse what it held."""
        return self.layout.parse(self.read_raw())

    def _fd(self) -> int:
        if self.fd is None:
            raise PerfError(f"sampling event '{self.name}' is closed")
        return self.fd

    @property
    def closed(self) -> bool:
        return self.fd is None

    def close(self) -> None:
        """Unmap the ring and close the fd; safe to call more than once."""
        if self.ring is not None:
            self.ring.close()
        fd, self.fd = self.fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> SamplingEvent:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def check_sampling(spec: EventSpec, config: SamplingConfig, *, name: str = "") -> None:
    """Open ``spec`` as a sampling event on this thread and close it again: raises the
    :class:`~sectormon.perf.errors.PerfError` a real open would (unsupported event, PMU that
    cannot sample, permissions) before any target is started."""
    plain = replace(config, inherit=False, enable_on_exec=False)
    attr = sampling_attr(spec, plain, page_size=4096, count_lost=False)
    attempt = Attempt(name or spec.spec, 0, -1, spec=spec.spec, exclude_kernel=config.exclude_kernel)
    fd = syscall.perf_event_open(attr, 0, -1, attempt=attempt)
    os.close(fd)
