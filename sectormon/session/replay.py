"""Replay: a recording read back through today's engine, frame for frame as the live run made them.

A recording stores raw slices and marks, never metrics, so a replay builds the engine the header
describes (profile, options, unavailable events) and feeds it the same stream through the same
:class:`sectormon.session.frame_builder.FrameBuilder` the live session used: same frames, current formulas.
:func:`replay_frames` is the headless path (``sectormon replay --json``, ``compare``);
:class:`ReplaySession` is the TUI's timeline (play, pause, speed, seek, marks) on its own thread.
"""

from __future__ import annotations

import copy
import gc
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sectormon.data.frames import HEADER_SCHEMA, Frame
from sectormon.data.header import Header
from sectormon.data.readings import Mark, Slice
from sectormon.io.bookmarks import BookmarkFile
from sectormon.io.reader import Item, RecordingError, RecordingStream, open_recording, scan_recording
from sectormon.metrics.batch import RowBatch
from sectormon.metrics.builder import build_engine
from sectormon.profiles.codec import profile_from_dict
from sectormon.session import replay_worker
from sectormon.session.control import ReplayControl
from sectormon.session.frame_builder import FrameBuilder
from sectormon.session.hotspots import builder_for
from sectormon.session.timeline import Anchor, TimelineSession, is_hole

CHECKPOINT_EVERY = 30.0
"""Stream seconds between engine snapshots of a :class:`ReplaySession` (about 1 MB each at 48 cores):
a seek starts from the nearest one instead of the start of the file."""

COLLECT_AFTER = 20_000
"""Containers allocated (net) between two passes of the cycle collector during a replay; Python's
default is 700. A frame holds some ten thousand containers and a reader's batch thousands, none of
them in a cycle; at 700 the collector walked most of them before they were freed, once per frame:
6 % of a replay's instructions in this process (cachegrind, 48 cores; 0.3 % left at 20,000)."""


def stream_header(header: Header) -> Header:
    """The JSON stream header a replay prints: the live run's header record (the recording's
    start, which the recorder added, left out)."""
    return header.without_recording_start().with_fields(schema=HEADER_SCHEMA)


def frame_timing(header: Header) -> tuple[float, float]:
    """The frame interval and the stream start a recording's header gives (the codec checked both)."""
    return header.options.frame_interval, header.stream_start


def frame_builder(header: Header, path: str) -> FrameBuilder:
    """The engine and frame builder a recording's header describes (the live run's own, with its
    hot spots when it sampled)."""
    if not header.profile:
        raise RecordingError(path, 1, "the header has no profile", "record with sectormon >= 0.1")
    interval, start = frame_timing(header)
    profile = profile_from_dict(dict(header.profile), source=path)
    return builder_for(header, build_engine(profile, header), interval, start=start)


class Pacer:
    """Real-time pacing by stream time: item at ``t`` is due ``(t - t0) / speed`` after the anchor.

    A live session leaves no more than a frame interval between two slices, so a jump further
    (a damaged or edited file: ``t`` from 10 s to 1e9 s) is a hole in the recording, not time to
    wait through (it would be years): the item after it is due at once, and pacing goes on from it.
    """

    def __init__(
        self,
        speed: float,
        sleep: Callable[[float], None],
        clock: Callable[[], float],
        hole: float = math.inf,
    ) -> None:
        self.speed = speed
        self.sleep = sleep
        self.clock = clock
        self.hole = hole  # stream seconds between two items that are not waited through
        self.anchor: tuple[float, float] | None = None
        self._last = -math.inf

    def wait(self, t: float) -> None:
        if self.anchor is None or is_hole(self._last, t, self.hole):
            self.anchor = (t, self.clock())
            self._last = t
            return
        self._last = t
        t0, wall0 = self.anchor
        delay = wall0 + (t - t0) / self.speed - self.clock()
        if delay > 0:
            self.sleep(delay)


BuilderFactory = Callable[[Header, str], FrameBuilder]


def replay_frames(
    stream: RecordingStream,
    *,
    t_from: float | None = None,
    t_to: float | None = None,
    speed: float | None = None,
    builder_factory: BuilderFactory = frame_builder,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Frame]:
    """Frames of a recording, ending with the final frame.

    Only frames with ``t_from <= t <= t_to`` are yielded, but every record before ``t_from`` is fed
    so rolling and whole-run windows are what the live run showed (the frames before it are not
    built, only their intervals closed: :meth:`FrameBuilder.quiet`). ``speed`` paces frames in real
    time (2.0 = twice as fast); ``None`` = as fast as possible. Reading stops after ``t_to``.
    A large recording replayed as fast as possible is read by a second process (:mod:`.replay_worker`).
    """
    builder = builder_factory(stream.header, stream.name)
    lo = -math.inf if t_from is None else t_from
    hi = math.inf if t_to is None else t_to
    builder.quiet(lo)
    pacer = None
    if speed is not None and math.isfinite(speed):
        pacer = Pacer(speed, sleep, clock, hole=frame_timing(stream.header)[0])
    with collector_paced_for_frames():
        for _, frames in _feed(stream, builder, t_from=lo, t_to=hi, pacer=pacer):
            for frame in frames:
                if lo <= frame.t <= hi:
                    yield frame
        final = builder.finish()
    if lo <= final.t <= hi:
        yield final


def final_frame(
    path: str | Path,
    *,
    skip_bad: bool = False,
    builder_factory: BuilderFactory = frame_builder,
    name: str | None = None,
) -> tuple[Header, Frame, RecordingStream]:
    """Replay a whole recording to its final frame (what ``compare`` uses); ``name``: what
    messages call it."""
    with open_recording(path, skip_bad=skip_bad, name=name) as stream:
        builder = builder_factory(stream.header, stream.name)
        builder.quiet(math.inf)  # only the final frame is wanted
        with collector_paced_for_frames():
            slices = sum(fed for fed, _ in _feed(stream, builder, frames=False))
        if slices == 0:
            raise RecordingError(
                stream.name, stream.last_line, "the recording has no slices: nothing to replay"
            )
        return stream.header, builder.finish(), stream


@contextmanager
def collector_paced_for_frames(after: int = COLLECT_AFTER) -> Iterator[None]:
    """Let the cycle collector wait for ``after`` new containers (:data:`COLLECT_AFTER`) instead
    of Python's 700 while frames are built; its thresholds are restored afterwards."""
    old = gc.get_threshold()
    gc.set_threshold(max(after, old[0]), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _feed(
    stream: RecordingStream,
    builder: FrameBuilder,
    *,
    t_from: float = -math.inf,
    t_to: float = math.inf,
    pacer: Pacer | None = None,
    frames: bool = True,
) -> Iterator[tuple[int, list[Frame]]]:
    """Feed ``stream`` to ``builder`` up to ``t_to``: per record or batch, how many
    slices went in and the frames that came out. Unpaced replays of large recordings are read by
    other processes (:mod:`.replay_worker`), slices arriving summed per frame interval; with
    ``frames=False`` (only the final frame is built) by as many as there are CPUs."""
    readers = replay_worker.readers(stream, frames=frames) if pacer is None else 0
    if readers:
        interval, start = frame_timing(stream.header)
        for piece in replay_worker.read_batches(stream, interval, start, t_to, readers):
            if isinstance(piece, RowBatch):
                yield len(piece.slices), builder.feed_batch(piece)
            else:
                yield 0, builder.feed(piece)
        return
    for item in stream:
        if item.t > t_to:
            break
        is_slice = type(item) is Slice
        if pacer is not None and is_slice and item.t >= t_from:
            pacer.wait(item.t)
        yield int(is_slice), builder.feed(item)


# ------------------------------------------------------------------------------------------ session


@dataclass(frozen=True)
class _Checkpoint:
    """The frame builder right after the slice at ``t`` (file line ``line``) was fed."""

    t: float
    line: int
    builder: FrameBuilder
    frame: Frame | None


class ReplaySession(TimelineSession):
    """A recording played on a timeline for the TUI: implements :class:`ReplayControl`.

    A thread feeds the recording to the frame builder, pacing slices by their ``t`` at the chosen
    speed, and hands each frame to the subscribers. Seeking forward fast-forwards; seeking back
    replays up to the target from the nearest engine snapshot before it (taken every
    :data:`CHECKPOINT_EVERY` stream seconds on the way; the start of the file before the first),
    then publishes the frame at the target. Baseline marks set during the replay are kept and fed
    again at their time after a seek back; bookmarks go to the recording's bookmark file
    (:mod:`sectormon.io.bookmarks`), which the next replay shows again. Problems in the file stop
    playback and are reported through ``on_error`` / :meth:`error`; warnings through ``on_warning``.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        skip_bad: bool = False,
        speed: float = 1.0,
        paused: bool = False,
        builder_factory: BuilderFactory = frame_builder,
        on_warning: Callable[[str], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        time_scale: float | None = None,
    ) -> None:
        """``time_scale``: stream seconds that 1x plays in a wall second and that one seek step
        moves (None: one frame interval for a simulated recording, whose 10 ms would otherwise
        play in 10 ms, else 1 s)."""
        self.path = str(path)
        self.skip_bad = skip_bad
        self._factory = builder_factory
        self._on_error = on_error
        scan = scan_recording(self.path, skip_bad=skip_bad)
        if time_scale is None:
            time_scale = default_time_scale(scan.header)
        if not (math.isfinite(time_scale) and time_scale > 0):
            raise ValueError(f"time_scale must be > 0, not {time_scale!r}")
        super().__init__(
            on_warning,
            start=scan.first_t,
            end=scan.end_t,
            speed=speed,
            paused=paused,
            time_scale=time_scale,
            clock=clock,
        )
        self._hole = frame_timing(scan.header)[0]  # see Pacer
        self.header: Header = stream_header(scan.header)
        self._recorded_marks = scan.marks
        for warning in scan.warnings:
            self._warn(warning)
        self._bookmarks = BookmarkFile(self.path)
        for warning in self._bookmarks.warnings:
            self._warn(warning)
        # Fail now, not on the thread, when the profile or options cannot be replayed.
        builder_factory(scan.header, self.path)
        self._user_marks: list[Mark] = []
        self._pending_marks: list[Mark] = []
        self._checkpoints: list[_Checkpoint] = []
        self._checkpointing = True
        self._quiet_pass = False  # fast-forwarding with FrameBuilder.seek_quietly
        self._last_built: Frame | None = None  # the newest frame of the current builder
        self.frames = 0

    # -- SessionControl --------------------------------------------------------------------------

    def mark_baseline(self) -> None:
        self._add_user_mark("baseline", "")

    def clear_baseline(self) -> None:
        self._add_user_mark("baseline-clear", "")

    def bookmark(self, label: str) -> None:
        """A bookmark at the position: on the timeline, and kept in the recording's bookmark
        file (it changes no frame, so the engine never sees it)."""
        with self._cond:
            self._bookmarks.add(Mark(t=self._position, kind="bookmark", label=label))

    def bookmarks_file(self) -> str | None:
        return str(self._bookmarks.path)

    def timeline(self) -> ReplayControl:
        return self

    # -- ReplayControl ---------------------------------------------------------------------------

    def marks(self) -> tuple[Mark, ...]:
        with self._cond:
            user = [*self._user_marks, *self._bookmarks.marks]
        return tuple(sorted((*self._recorded_marks, *user), key=lambda m: m.t))

    # -- thread ----------------------------------------------------------------------------------

    def _add_user_mark(self, kind: str, label: str) -> None:
        with self._cond:
            mark = Mark(t=self._position, kind=kind, label=label)
            self._user_marks.append(mark)
            self._user_marks.sort(key=lambda m: m.t)
            self._pending_marks.append(mark)
            # Snapshots taken after this time lack the new mark: replay to them again.
            self._checkpoints = [c for c in self._checkpoints if c.t <= mark.t]
            self._control_version += 1
            self._cond.notify_all()

    def _emit(self, frame: Frame) -> None:
        self.frames += 1
        self._publish(frame)

    def _stopped_by(self, problem: str) -> None:
        if self._on_error is not None:
            self._on_error(problem)

    def _checkpoint_for(self, target: float) -> _Checkpoint | None:
        with self._cond:
            usable = [c for c in self._checkpoints if c.t <= target]
        return usable[-1] if usable else None

    def _open(
        self, target: float | None = None
    ) -> tuple[RecordingStream, Iterator[Item], FrameBuilder, list[Mark]]:
        """The stream and builder to play from: the nearest snapshot before ``target``, else the start."""
        checkpoint = None if target is None else self._checkpoint_for(target)
        stream = open_recording(self.path, skip_bad=self.skip_bad)
        with self._cond:
            # A snapshot holds the user's marks before its time; later ones are fed again on the way.
            user = [m for m in self._user_marks if checkpoint is None or m.t >= checkpoint.t]
            self._pending_marks = []
        if checkpoint is None:
            self._position = self._start_t
            self._last_built = None
            return stream, iter(stream), self._factory(stream.header, stream.name), user
        self._position = checkpoint.t
        self._last_built = checkpoint.frame
        items = stream.resume_after(checkpoint.line, checkpoint.t)
        return stream, items, copy.deepcopy(checkpoint.builder), user

    def _feed(
        self, stream: RecordingStream, builder: FrameBuilder, user: list[Mark], item: Item
    ) -> list[Frame]:
        self._feed_user_marks(builder, user, item.t)
        frames = builder.feed(item)
        self._position = max(self._position, item.t)
        if frames:
            self._last_built = frames[-1]
        if type(item) is Slice:
            self._maybe_checkpoint(stream, builder, item.t, built=bool(frames))
        return frames

    def _maybe_checkpoint(
        self, stream: RecordingStream, builder: FrameBuilder, t: float, *, built: bool
    ) -> None:
        if not self._checkpointing:
            return
        with self._cond:
            last = self._checkpoints[-1].t if self._checkpoints else self._start_t
        if t - last < CHECKPOINT_EVERY:
            return
        if self._quiet_pass and not built:
            # The newest frame may have been skipped, and a snapshot must hold it: snapshot
            # right after the next frame, built for that.
            builder.build_next = True
            return
        try:
            snapshot = copy.deepcopy(builder)
        except Exception:  # an engine that cannot be copied: seeks replay from the start
            self._checkpointing = False
            return
        if self._quiet_pass:
            snapshot.seek_quietly(None)  # restored, it plays normally
        with self._cond:
            if not self._checkpoints or t > self._checkpoints[-1].t:
                checkpoint = _Checkpoint(t=t, line=stream.last_line, builder=snapshot, frame=self._last_built)
                self._checkpoints.append(checkpoint)

    def _play(self) -> None:
        stream, items, builder, user = self._open()
        ended = False
        anchor: Anchor | None = None
        seen_version = -1
        pending: Item | None = None
        try:
            while True:
                with self._cond:
                    if self._stop:
                        return
                    target = self._seek_target
                    self._seek_target = None
                    marks_now = self._pending_marks
                    self._pending_marks = []
                    if seen_version != self._control_version:
                        seen_version = self._control_version
                        anchor = None
                    paused = self._paused
                    speed = self._speed * self._time_scale
                for mark in marks_now:
                    self._feed_emit(builder, mark)
                if target is not None:
                    checkpoint = self._checkpoint_for(target)
                    ahead = checkpoint is not None and checkpoint.t > self._position
                    if target < self._position or ahead:
                        stream.close()
                        stream, items, builder, user = self._open(target)
                        pending = None
                        ended = False
                    elif ended:
                        continue
                    result = self._fast_forward(stream, items, builder, user, target, pending)
                    if result is None:
                        # The frame to show was skipped (the slices stopped before the next
                        # one): replay to it from the snapshot before it, building every frame.
                        stream.close()
                        stream, items, builder, user = self._open(target)
                        result = self._fast_forward(stream, items, builder, user, target, None, quietly=False)
                        assert result is not None  # only a quiet pass skips frames
                    ended, pending, frame = result
                    if frame is None and not ended:
                        # Before the first frame there is none to show, and the screen would keep
                        # the one it had: show the first frame instead.
                        ended, pending, frame = self._first_frame(stream, items, builder, user, pending)
                    if frame is not None:
                        self._emit(frame)
                    if ended:
                        self.finished.set()
                    else:
                        self.finished.clear()
                    continue
                if paused or ended:
                    self._wait_for_control(seen_version)
                    continue
                item = pending if pending is not None else next(items, None)
                pending = None
                if item is None:
                    self._emit(builder.finish())
                    ended = True
                    self._position = self._end_t
                    self.finished.set()
                    continue
                if type(item) is not Mark:
                    anchor, due = self._wait_until_due(item.t, anchor, speed, self._hole, seen_version)
                    if not due:
                        pending = item
                        continue
                for frame in self._feed(stream, builder, user, item):
                    self._emit(frame)
        finally:
            stream.close()

    def _feed_user_marks(self, builder: FrameBuilder, user: list[Mark], before_t: float) -> None:
        """Marks set in an earlier pass go back in before the first record after their time."""
        while user and user[0].t < before_t:
            builder.feed(user.pop(0))

    def _feed_emit(self, builder: FrameBuilder, item: Mark) -> None:
        for frame in builder.feed(item):
            self._emit(frame)

    def _first_frame(
        self,
        stream: RecordingStream,
        items: Iterator[Item],
        builder: FrameBuilder,
        user: list[Mark],
        pending: Item | None,
    ) -> tuple[bool, Item | None, Frame]:
        """Feed records until the builder makes a frame: (ended, next record, that frame)."""
        while True:
            item = pending if pending is not None else next(items, None)
            pending = None
            if item is None:
                self._position = self._end_t
                return True, None, builder.finish()
            frames = self._feed(stream, builder, user, item)
            if frames:
                return False, None, frames[-1]

    def _fast_forward(
        self,
        stream: RecordingStream,
        items: Iterator[Item],
        builder: FrameBuilder,
        user: list[Mark],
        target: float,
        pending: Item | None,
        *,
        quietly: bool = True,
    ) -> tuple[bool, Item | None, Frame | None] | None:
        """Feed records up to ``target`` without pacing; return (ended, next record, frame to show).

        The frame to show is the newest the builder made up to ``target`` (possibly before this call,
        or restored with a snapshot). ``quietly``, a :class:`FrameBuilder` skips the frames before
        it (:meth:`FrameBuilder.seek_quietly`: about 40 % of a long seek's work); ``None`` when it
        skipped the one to show.
        """
        if quietly:
            builder.seek_quietly(target)
            self._quiet_pass = True
        try:
            while True:
                item = pending if pending is not None else next(items, None)
                pending = None
                if item is None:
                    self._position = self._end_t
                    return True, None, builder.finish()
                if item.t > target:
                    self._position = max(self._position, target)
                    if quietly and builder.skipped_last:
                        return None
                    return False, item, self._last_built
                self._feed(stream, builder, user, item)
        finally:
            if quietly:
                builder.seek_quietly(None)
                self._quiet_pass = False


def default_time_scale(header: Header) -> float:
    """One frame interval per wall second for a simulated recording, else real time."""
    if header.source.simulated:
        return frame_timing(header)[0]
    return 1.0
