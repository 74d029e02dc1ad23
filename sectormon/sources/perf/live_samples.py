"""Live sampling beside a counting session (``sectormon --sample EVENT[:PERIOD] ...``).

It opens the same sampling events, rings and counting-mode total as ``sectormon hotspots``
(``samples.open_rings``) on the session's target before it runs. One thread copies the rings' bytes
out (at their watermark or every 100 ms), a second parses and resolves them, so neither the
sampler's rotation nor a ring waits for ELF files. Each take, once per frame, hands over the samples
resolved since the last, with the lost samples and the counted total of the same time.

Longer notes: docs/internals.md.
"""

from __future__ import annotations

import collections
import select
import threading
import time
from dataclasses import dataclass

from sectormon.attribution.symbolize import Symbolizer
from sectormon.data.hotspots import HotspotSettings
from sectormon.data.samples import AttributedSample, LatencyBucket, SampleBatch
from sectormon.errors import UsageError
from sectormon.perf.errors import EventUnsupported
from sectormon.perf.sampling import SamplingConfig, check_sampling
from sectormon.profiles.model import Profile
from sectormon.sources.base import SampleRequest
from sectormon.sources.perf.samples import (
    FAULT_EVENTS,
    POLL_SECONDS,
    RecordStream,
    SamplingRings,
    counted_total,
    default_rate,
    open_rings,
    resolve_event,
    wait_for_rings,
)
from sectormon.sources.perf.targets import CommandTarget, CpuTarget, Target

RESOLVE_STEP = 256
"""Samples resolved between two hand-overs of the interpreter lock: short enough that the ring
reader never waits long for it (bench_live_hotspots in docs/perf-tuning.md)."""

CARRIES = {
    "fault": "the faulting instruction (exact) and the exact faulting data address; no latency",
    "other": "the interrupted instruction (with skid on hardware events); a data address and a latency "
    "only where the PMU provides them (x86 PEBS memory events, Arm SPE), none on A64FX",
}


@dataclass
class _Cut:
    """Where one hot-spot window ends in the stream of ring bytes: the counters' readings and the
    kernel's lost count when the rings were read there, and (set by the resolver when it gets
    there) the stream's count of LOST records, the fallback of the kernel's."""

    readings: list[tuple[int, int, int]] | None
    kernel_lost: int | None
    stream_lost: int = 0


class PerfSampleFeed:
    """A :class:`~sectormon.sources.base.SampleFeed` of perf samples on a started target."""

    def __init__(
        self,
        target: Target,
        request: SampleRequest,
        profile: Profile,
        *,
        exclude_kernel: bool = True,
    ) -> None:
        name, spec = resolve_event(request.event, profile, option="--sample")
        period, freq = (request.period, 0) if request.period else default_rate(name, spec, profile)
        config = SamplingConfig(period=period, freq=freq, exclude_kernel=exclude_kernel)
        try:
            check_sampling(spec, config, name=name)
        except EventUnsupported as exc:
            raise UsageError(
                f"--sample {request.event}: {spec.spec} cannot be sampled on this host ({exc.errno_name}: "
                "no such event on this PMU, or it cannot sample); page-faults samples on any host"
            ) from None
        fault = spec.spec.lower() in FAULT_EVENTS
        self.settings = HotspotSettings(
            event=name,
            spec=spec.spec,
            source="perf",
            period=period,
            freq=freq,
            top=request.top,
            buckets=tuple(LatencyBucket(b.name, b.max_cycles) for b in profile.latency_buckets),
            carries=CARRIES["fault" if fault else "other"],
        )
        self._rings: SamplingRings
        self._rings, before = open_rings(target, spec, config, name=name)
        self._stream = RecordStream(self._rings.config.layout(), (), period=period)
        self._symbolizer = Symbolizer(read_proc=isinstance(target, CpuTarget))
        # The mappings that existed before go first, on the resolver thread: placing a process's
        # libraries reads their ELF files, which must not hold up the session's start.
        self._before = before
        self._lock = threading.Lock()
        # Samples resolved since the resolver passed the last cut, and the windows it closed.
        self._pending: list[AttributedSample] = []
        self._closed_windows: list[tuple[list[AttributedSample], _Cut]] = []
        self._said: set[str] = set()
        self._new_warnings: list[str] = []
        self._last_readings = [(0, 0, 0)] * len(self._rings.counters)
        self._last_lost = 0
        self._cuts_made = 0
        self._cuts_passed = 0
        # The rings' bytes and the cuts between them, in the order they were read.
        self._rounds: collections.deque[list[bytes] | _Cut] = collections.deque()
        self._ring_lock = threading.Lock()  # one reader of the rings at a time: their order is kept
        self._arrived = threading.Condition(self._lock)
        self._stop_reading = threading.Event()
        self._reading_done = False
        self._closed = False
        try:
            if not isinstance(target, CommandTarget):
                self._rings.enable()  # a command's events start at its exec
        except BaseException:
            self._rings.close()
            raise
        self._reader = threading.Thread(target=self._read_loop, name="sectormon-sample-reader", daemon=True)
        self._resolver = threading.Thread(
            target=self._resolve_loop, name="sectormon-sample-resolver", daemon=True
        )
        self._reader.start()
        self._resolver.start()

    # -- the threads ---------------------------------------------------------------------------
    # Reading only copies the rings' bytes out (their space is free again at once); resolving
    # (parsing, following the mappings, reading ELF files) runs on a second thread, so a slow
    # first look at a large binary cannot let a ring fill up.

    def _read_loop(self) -> None:
        poller = select.poll()
        for fd in self._rings.fds():
            poller.register(fd, select.POLLIN)
        try:
            while not self._stop_reading.is_set():
                wait_for_rings(poller, POLL_SECONDS)
                self._read()
        except Exception as exc:  # a background thread must not die silently: the session says it
            self._say(f"sampling stopped: {exc}; the hot spots end here, the counts go on")

    def _read(self, *, cut: bool = False) -> None:
        """Queue the rings' new bytes; with ``cut``, then a :class:`_Cut` (the counters and the
        kernel's lost count now), so the samples read so far and the count so far close together."""
        with self._ring_lock:
            chunks = self._rings.read_new()
            marker = _Cut(self._rings.readings(), self._rings.lost()) if cut else None
            with self._arrived:
                if any(chunks):
                    self._rounds.append(chunks)
                if marker is not None:
                    self._rounds.append(marker)
                    self._cuts_made += 1
                self._arrived.notify()

    def _resolve_loop(self) -> None:
        stream = self._stream
        feed = self._symbolizer.feed
        for event in self._before:
            feed(event)
        stopped = False  # after a failure the bytes are dropped, and the cuts still close windows
        while True:
            with self._arrived:
                while not self._rounds and not self._reading_done:
                    self._arrived.wait()
                if not self._rounds:
                    return
                chunks = self._rounds.popleft()
                if isinstance(chunks, _Cut):
                    # Everything read before this cut is resolved: the window closes here.
                    chunks.stream_lost = stream.lost
                    self._closed_windows.append((self._pending, chunks))
                    self._pending = []
                    self._cuts_passed += 1
                    continue
            if stopped:
                continue
            try:
                events = stream.feed_round(chunks)
                resolved: list[AttributedSample] = []
                for start in range(0, len(events), RESOLVE_STEP):
                    resolved += [s for s in map(feed, events[start : start + RESOLVE_STEP]) if s is not None]
                    # Hand the interpreter lock over: the reader must not wait the 5 ms switch
                    # interval for it while a ring fills at a fault's pace.
                    time.sleep(0)
            except Exception as exc:  # said by the session; the counts go on
                self._say(f"sampling stopped: {exc}; the hot spots end here, the counts go on")
                stopped = True
                continue
            if resolved:
                with self._lock:
                    self._pending.extend(resolved)

    def _finish_threads(self) -> None:
        """Stop reading, read what the rings still hold (and cut there), and resolve everything read."""
        self._stop_reading.set()
        self._reader.join()
        self._read(cut=True)
        with self._arrived:
            self._reading_done = True
            self._arrived.notify()
        self._resolver.join()

    # -- SampleFeed ----------------------------------------------------------------------------

    def take(self, t: float, *, final: bool = False) -> SampleBatch:
        """The samples of the windows the resolver has closed, with the count and the lost samples
        of the same windows.

        A window closes at a cut: the rings are read and the counters read right after, so the
        samples read up to the cut and the count up to it are of the same events (within the few
        microseconds between the two reads). Resolving runs behind reading; a window is handed over
        once every sample read before its cut is resolved, so a frame can show an earlier window
        (said once, with how far behind), and the final frame has them all.
        """
        if final:
            if not self._closed:
                self._finish_threads()
        else:
            self._read(cut=True)
        with self._lock:
            windows, self._closed_windows = self._closed_windows, []
            behind = self._cuts_made - self._cuts_passed
        samples = [sample for window, _ in windows for sample in window]
        counted: int | None = 0
        multiplexed = False
        lost = 0
        if windows:
            last = windows[-1][1]
            counted, multiplexed = self._counted(last.readings)
            kernel_lost = last.kernel_lost
            # The kernel's own count of the lost samples is exact; the LOST records also count the
            # side-band records dropped with them and miss the drops after the last one: they are
            # only the fallback on kernels without PERF_FORMAT_LOST.
            lost_now = kernel_lost if kernel_lost is not None else last.stream_lost
            lost, self._last_lost = lost_now - self._last_lost, lost_now
        if behind > 1:
            self._say(
                "resolving the samples ran behind reading them: a frame's hot spots can be of an earlier "
                "window (its samples, lost samples and count together); the final frame has them all"
            )
        self._check()
        return SampleBatch(t, tuple(samples), lost, counted, multiplexed)

    def _counted(self, readings: list[tuple[int, int, int]] | None) -> tuple[int | None, bool]:
        """(count, multiplexed) from the last handed-over readings to ``readings``."""
        if readings is None:
            self._say("the counted total of the sampled event could not be read: its estimates are n/a")
            return None, False
        deltas = [
            (count - c0, enabled - e0, running - r0)
            for (count, enabled, running), (c0, e0, r0) in zip(readings, self._last_readings, strict=True)
        ]
        self._last_readings = readings
        total = counted_total(deltas)
        return total.value, total.multiplexed

    def _check(self) -> None:
        stream = self._stream
        for warning in self._symbolizer.images.new_warnings():  # files the resolver could not read
            self._say(warning)
        if self._last_lost:
            self._say(
                "samples were lost: the ring buffer filled faster than it was read (give a larger "
                "--sample period); the scale factor makes up for them"
            )
        if stream.throttled:
            self._say(
                "the kernel throttled sampling (kernel.perf_event_max_sample_rate): "
                "give a larger --sample period"
            )
        if stream.errors:
            self._say(f"part of the sample data could not be read: {stream.errors[0]}")
        if stream.malformed:
            self._say("malformed sample records were skipped")

    def _say(self, message: str) -> None:
        with self._lock:
            if message not in self._said:
                self._said.add(message)
                self._new_warnings.append(message)

    def warnings(self) -> list[str]:
        with self._lock:
            out, self._new_warnings = self._new_warnings, []
        return out

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._finish_threads()
        self._rings.close()
