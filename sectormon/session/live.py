"""The live session: source -> sampler -> engine -> subscribers, with recording and marks.

It owns the sampler, feeds the engine on the sampler thread, writes the recording, applies marks
(baseline, configuration changes) in stream order, and hands frames to subscribers (JSON stream,
TUI, exporters) without ever waiting for them.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as _dt
import signal
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from sectormon.data.frames import Frame
from sectormon.data.header import Header
from sectormon.data.readings import Mark, Slice
from sectormon.data.regions import RegionsReading
from sectormon.errors import SectormonError
from sectormon.metrics.builder import build_engine
from sectormon.metrics.proxy import proxy_setting
from sectormon.profiles.model import Profile
from sectormon.rotation.control import CountingControl
from sectormon.rotation.markers import MarkerService
from sectormon.rotation.plan import Rotation, RotationPlan
from sectormon.rotation.sampler import Sampler
from sectormon.session.control import SessionBase, WarningCallback
from sectormon.session.control_channel import ControlChannel, DelayTimer
from sectormon.session.hotspots import builder_for
from sectormon.session.options import SessionOptions
from sectormon.sources.base import SampleFeed, Source

if TYPE_CHECKING:  # the recording's modules: imported when a recording starts (--record, 'r')
    from sectormon.io.recording import RecordingWriter

SAMPLING_STOPPED = "sampling stopped"
"""How a session that failed mid-run says so (on screen, and in its recording)."""


def auto_recording_name(directory: str | Path = ".") -> str:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return str(Path(directory) / f"sectormon-{stamp}.jsonl.gz")


class LiveSession(SessionBase):
    """A live or simulated session: implements :class:`~sectormon.session.control.SessionControl`.

    ``warnings`` are said at once (through ``on_warning`` until a front end subscribes); ``notes``
    are shown to subscribers and kept in the recording like warnings, but not said on stderr.
    """

    def __init__(
        self,
        *,
        source: Source,
        profile: Profile,
        plan: RotationPlan,
        options: SessionOptions,
        header: Header,
        on_warning: WarningCallback | None = None,
        warnings: Sequence[str] = (),
        notes: Sequence[str] = (),
        sampling: SampleFeed | None = None,
        markers: MarkerService | None = None,
    ) -> None:
        super().__init__(on_warning)
        for message in warnings:
            super()._warn(message)
        self._warnings.extend(notes)
        self.source = source
        self.profile = profile
        self.plan = plan
        self.options = options
        self._header = header
        self._pending: collections.deque[Mark] = collections.deque()
        self._sampling = sampling
        self._regions: RegionsReading | None = None  # the newest region table (cumulative)
        self._regions_recorded = True  # it is in the recording already (or there is none)
        self._recorder: RecordingWriter | None = None
        self.recording_failed = False  # a recording stopped on an error: the run ends with status 1
        # Re-entrant: a write that fails warns, and a warning is written to the recording.
        self._record_lock = threading.RLock()
        self._control = (
            CountingControl(plan, start_enabled=options.delay is None, on_warning=self._warn)
            if options.controlled
            else None
        )
        self._sampler = Sampler(
            source,
            plan,
            timeslice=options.timeslice,
            on_slice=self._on_slice,
            on_warning=self._warn,
            cmg_enabled=source.cmg_unavailable_reason is None,
            rotation=options.rotation,
            max_overhead=options.max_overhead,
            may_switch=options.may_switch,
            max_timeslice=options.interval,
            on_rotation=self._rotation_changed,
            proxy=options.proxy,
            on_counting=self._counting_started,
            markers=markers,
            control=self._control,
        )
        self._markers = markers
        self._counting = False
        self._on_counting: list[Callable[[], None]] = []
        self._controllers = self._open_controllers(options)
        if options.proxy is not None:
            self._choose_stand_ins(options.proxy)
        self._builder = builder_for(self._header, build_engine(profile, self._header), options.interval)
        self._baseline_done = options.baseline_after is None
        self._finished = threading.Event()
        self._stopped = False
        self._error: str | None = None
        self.final_frame: Frame | None = None
        self.frames = 0
        if options.record:
            # An unwritable path stops the recording with one warning; monitoring goes on.
            self._open_recorder(options.record)

    @property
    def header(self) -> Header:
        return self._header

    def _choose_stand_ins(self, per_cmg: int) -> None:
        """``--proxy``: open the units there now, so the header names the stand-ins; where no unit
        would be left out for good (a fixed set of units, none more than ``per_cmg`` in its CMG)
        or nothing rotates, say so: every unit then counts everything, as without a proxy."""
        self._sampler.open_units()
        counted = self._sampler.counted_units()
        stand_ins = self._sampler.stand_ins()
        always = self.plan.always
        setting = proxy_setting(
            per_cmg,
            [event.name for group in self.plan.groups for event in group.pe_events],
            timed=always is not None and bool(always.pe_events),
            stand_ins=stand_ins,
        )
        if not setting.events:
            self._warn(
                f"--proxy {per_cmg}: no group rotates here, so there is nothing to proxy; every unit counts"
            )
            return
        fixed = not self.source.capabilities.follows_threads or all(unit.kind == "cpu" for unit in counted)
        if fixed and len(stand_ins) == len(counted):
            self._warn(
                f"--proxy {per_cmg}: no CMG has more than {per_cmg} counted unit(s), so every unit "
                "stands in and counts every group, as without --proxy"
            )
            return
        self._header = self._header.with_fields(proxy=setting)

    # -- SessionControl ------------------------------------------------------------------------

    def _warn(self, message: str) -> None:
        self._record_warning(message)
        super()._warn(message)

    def start(self) -> None:
        """Run the session in a background thread (the TUI path). The source is already started."""
        threading.Thread(target=self._run_in_thread, name="sectormon-session", daemon=True).start()

    def stop(self) -> None:
        self._sampler.stop()

    def wait(self, timeout: float | None = None) -> bool:
        return self._finished.wait(timeout)

    def error(self) -> str | None:
        return self._error

    def mark_baseline(self) -> None:
        self._pending.append(Mark(t=self._builder.last_t, kind="baseline"))

    def clear_baseline(self) -> None:
        self._pending.append(Mark(t=self._builder.last_t, kind="baseline-clear"))

    def bookmark(self, label: str) -> None:
        self._pending.append(Mark(t=self._builder.last_t, kind="bookmark", label=label))

    def recording_path(self) -> str | None:
        recorder = self._recorder
        if recorder is None or recorder.failed:
            return None
        return str(recorder.path)

    def command_exit_code(self) -> int | None:
        """A launched command's exit code once it ended by itself (negative: a signal), else None."""
        return self.source.exit_code

    def end_note(self) -> str | None:
        """How a launched command ended, when it ended by itself with a status other than 0
        (the TUI says it next to 'session ended': a crash must not look like a normal end)."""
        return self.source.end_note()

    def toggle_recording(self) -> str | None:
        with self._record_lock:
            if self._recorder is not None:
                self._close_recorder()
                return None
        return self._open_recorder(auto_recording_name())

    def sector_presets(self) -> tuple[str, ...]:
        return self.source.sector_presets()

    def sector_config_for(self, name: str) -> dict[str, Any] | None:
        return self.source.sector_config_for(name)

    def apply_sector_preset(self, name: str) -> None:
        presets = self.source.sector_presets()
        if name not in presets:
            offered = ", ".join(presets) or "none"
            raise SectormonError(f"unknown sector preset {name!r}; this source offers {offered}")
        # Applied on the sampler thread between slices, recorded as a config mark.
        self._pending.append(Mark(t=self._builder.last_t, kind="config", label=name, data={"preset": name}))

    # -- running -------------------------------------------------------------------------------

    def run(self) -> None:
        """Sample until stopped or the target finishes; then emit the final frame and close."""
        try:
            self._sampler.run()
        except Exception as exc:
            # Said in the recording before its end mark (the callers report the error itself).
            self._record_warning(f"{SAMPLING_STOPPED}: {exc}")
            raise
        finally:
            self._finish()

    def _run_in_thread(self) -> None:
        try:
            self.run()
        except Exception as exc:  # a background thread must not die silently: the front end shows it
            self._error = f"{SAMPLING_STOPPED}: {exc}"
            self._warn(self._error)

    def run_headless(self) -> Frame | None:
        """Run in the calling (main) thread; SIGINT/SIGTERM end the session with a final frame."""

        def _stop(_signum: int, _frame: FrameType | None) -> None:
            self._sampler.stop()

        previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.run()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return self.final_frame

    def _on_slice(self, item: Slice) -> None:
        while self._pending:
            self._apply_mark(self._pending.popleft())
        if self._sampling is not None and self._builder.clock.reaches_next(item.t):
            self._take_samples(item.t)
        if self._recorder is not None:
            with self._record_lock:  # not after the end mark of a recording stopped meanwhile
                if self._recorder is not None:
                    self._recorder.write_slice(self._recordable(item))
        for frame in self._builder.feed(item):
            self._emit(frame)
        after = self.options.baseline_after
        if not self._baseline_done and after is not None and item.t >= after:
            self._baseline_done = True
            self._apply_mark(Mark(t=item.t, kind="baseline", label="--baseline-after"))
        if self.options.duration is not None and item.t >= self.options.duration:
            self._sampler.stop()

    def _recordable(self, item: Slice) -> Slice:
        """``item`` as the recording keeps it: the region table goes with the slice that closes a
        frame (or at the end), the newest one; an open region changes it at every slice, and
        writing it each time would make a recording several times larger for tables no frame
        shows. A replay at the recording's interval meets every table its frames used."""
        if item.regions is not None:
            self._regions = RegionsReading(item.t, item.index, item.regions)
            self._regions_recorded = False
        newest = self._regions
        if newest is None or self._regions_recorded or not self._builder.clock.reaches_next(item.t):
            return item if item.regions is None else dataclasses.replace(item, regions=None)
        self._regions_recorded = True
        return dataclasses.replace(item, regions=newest.snapshot)

    def _record_last_regions(self) -> None:
        """The newest region table, if no frame-closing slice has recorded it yet (the final
        frame's ``run.regions`` come from it)."""
        if self._recorder is not None and self._regions is not None and not self._regions_recorded:
            self._recorder.write_regions(self._regions)
            self._regions_recorded = True

    def when_counting(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the run has opened its units and counts (the JSON stream writes
        its header then: a session that cannot open any event writes nothing on stdout)."""
        self._on_counting.append(callback)

    def _open_controllers(self, options: SessionOptions) -> list[ControlChannel | DelayTimer]:
        """``--control``'s reader and ``--delay``'s timer, started once counting is (commands sent
        before wait in the descriptor), closed when the session ends."""
        control = self._control
        out: list[ControlChannel | DelayTimer] = []
        if control is None:
            return out
        if options.control is not None:
            out.append(ControlChannel(options.control, control, self._warn))
        if options.delay is not None and options.delay > 0:
            out.append(DelayTimer(options.delay, control))
        return out

    def _close_controllers(self) -> None:
        for controller in self._controllers:
            controller.close()

    def _counting_started(self) -> None:
        self._counting = True
        for controller in self._controllers:
            controller.start()
        for callback in self._on_counting:
            callback()

    def _rotation_changed(self, rotation: Rotation) -> None:
        """The sampler changed its rotation (over the overhead budget): a recorded mark, so the
        frames from here on, live and replayed, say which rotation ran."""
        mark = Mark(t=self._builder.last_t, kind="rotation", label=rotation.reason, data=rotation.to_json())
        self._apply_mark(mark)

    def _take_samples(self, t: float, *, final: bool = False) -> None:
        """The samples of the frame window that ends now: recorded before the slice that closes
        the frame (a replay meets them at the same place), then aggregated by the builder."""
        assert self._sampling is not None
        batch = self._sampling.take(t, final=final)
        for message in self._sampling.warnings():
            self._warn(message)
        if self._recorder is not None:
            with self._record_lock:
                if self._recorder is not None:
                    self._recorder.write_samples(batch)
        self._builder.feed(batch)

    def _apply_mark(self, mark: Mark) -> None:
        if mark.kind == "config":
            self.source.apply_sector_preset(mark.label)
        if self._recorder is not None:
            with self._record_lock:
                if self._recorder is not None:
                    self._recorder.write_mark(mark)
        self._builder.feed(mark)

    def _emit(self, frame: Frame) -> None:
        self.frames += 1
        self._publish(frame)
        if self.options.count is not None and self.frames >= self.options.count:
            self._sampler.stop()

    def discard(self) -> None:
        """End a session that never ran (stopped while it was set up): its sampling, recording
        and source are closed, a launched command never runs, and no frame is published."""
        if self._stopped:
            return
        self._stopped = True
        self._close_controllers()
        if self._sampling is not None:
            self._sampling.close()
        with self._record_lock:
            self._close_recorder()
        self._close_markers()
        self.source.close()
        self._finished.set()

    def _finish(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._close_controllers()
        while self._pending:
            self._apply_mark(self._pending.popleft())
        if self._sampling is not None:
            self._take_samples(self._builder.last_t, final=True)
            self._sampling.close()
        if self._counting:  # nothing counted (no unit could be opened): no frame to give
            final = self._builder.finish()
            self.final_frame = final
            self._publish(final)
        with self._record_lock:
            self._record_last_regions()
            code = self.command_exit_code()
            self._close_recorder({"exit_status": code} if code is not None else {})
        self._close_markers()
        self.source.close()
        self._finished.set()

    def _close_markers(self) -> None:
        """The region endpoint goes with the run (the final slice has read its table)."""
        if self._markers is not None:
            self._markers.close()

    # -- recording -----------------------------------------------------------------------------

    def _open_recorder(self, path: str) -> str | None:
        from sectormon.io.jsonl import RECORDING_SCHEMA
        from sectormon.io.recording import RecordingWriter

        header = self.header.with_fields(schema=RECORDING_SCHEMA, recording_started=self._builder.last_t)
        writer = RecordingWriter(path, header, on_error=self._recording_failed)
        with self._record_lock:
            self._recorder = writer
            self._regions_recorded = False  # a recording started mid-run gets the newest table too
            for message in list(self._warnings):  # a recording tells what the session said so far
                self._record_warning(message)
        return None if writer.failed else path

    def _record_warning(self, message: str) -> None:
        """Keep a warning in the recording as a ``warning`` mark: a replay or compare of the file
        says it again (which threads went uncounted is part of what the figures mean)."""
        if self._recorder is None:
            return
        with self._record_lock:
            recorder = self._recorder
            if recorder is not None and not recorder.failed:
                recorder.write_mark(Mark(t=self._builder.last_t, kind="warning", label=message))

    def _recording_failed(self, message: str) -> None:
        self.recording_failed = True
        self._warn(f"recording stopped: {message} (record to a writable path with space); monitoring goes on")

    def _close_recorder(self, end_data: dict[str, Any] | None = None) -> None:
        """End the recording with its ``end`` mark (a file without one reads as cut), then close
        it. The caller holds ``_record_lock``, which also keeps a slice from landing after it."""
        recorder, self._recorder = self._recorder, None
        if recorder is not None:
            recorder.write_mark(Mark(t=self._builder.last_t, kind="end", data=end_data or {}))
            recorder.close()
