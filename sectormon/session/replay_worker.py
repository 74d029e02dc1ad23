"""A replay's reading half in other processes: JSON, checks and row sums beside the frames.

Replaying an hour of a 48-core run is two halves of similar cost: reading (a JSON parse and checks
per line, the engine's per-row sums) and building frames (bench_replay in docs/perf-tuning.md). On a
machine with a second CPU, a child process (:func:`main` of this module in a new interpreter) reads
the recording and sums its rows with :class:`sectormon.metrics.batch.RowAggregator`, one
:class:`RowBatch` per frame interval, while this process builds the frames: the replay takes the
longer of the two halves instead of their sum. The frames are those of the one-process replay, bit
for bit (the batch module says why).

Where reading is the longer half and CPUs are left (``compare``, which builds only the final
frame, or a machine with three CPUs or more), several children share a plain recording: the file
is cut into spans that each start a frame interval (:mod:`sectormon.session.replay_spans`), child ``i`` of
``n`` reads spans ``i, i + n, ...``, and this process takes the spans' batches in file order.
Gzip files and ``--skip-bad`` replays (whether a line counts depends on every line before it)
are read by one child.

A child writes length-prefixed :mod:`marshal` messages to its stdout (its stderr is ours):
``("b", batch)``, ``("m", mark)``, and ``("end", last line, skipped, warnings as (line, text),
unknown mark kinds, stopped at --to, lines read)`` after the file or after each of its spans; or
``("error", path, line, problem, fix)`` for a :class:`RecordingError`, ``("fail", text)`` for
anything else. Span readers number lines from each span's start; this process places them. It
rebuilds the same errors, and kills the children when it stops early (``--to``, a closed pipe,
Ctrl-C, an error); a child whose parent died stops at its next write.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import marshal
import math
import os
import signal
import struct
import subprocess
import sys
import traceback
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from sectormon.data.hotspots import HEADER_KEY as HOTSPOTS_KEY
from sectormon.data.readings import Mark, Slice
from sectormon.data.regions import RegionsReading
from sectormon.data.samples import SampleBatch
from sectormon.errors import SectormonError, UsageError
from sectormon.files.text import is_ascii_digits, printable
from sectormon.io.reader import RecordingError, RecordingStream, open_recording
from sectormon.io.regions_record import regions_from_record, regions_record
from sectormon.metrics.batch import RowAggregator, RowBatch, unwire, wire
from sectormon.session.frame_clock import FrameClock
from sectormon.session.replay_spans import SpanFinder

MIN_BYTES = 8_000_000
"""Recordings smaller than this replay in one process: starting the child would not pay (bench_replay
in docs/perf-tuning.md, "Third pass", has the child's start and a 48-core recording's growth)."""

GZIP_RATIO = 3
"""About how much a gzip recording grows when decompressed (bench_replay's counts: docs/perf-tuning.md)."""

ENV_SWITCH = "SECTORMON_REPLAY_WORKER"
"""``0`` never uses reader processes; ``N`` from 1 to :data:`MAX_READERS` always uses N (one where
a file cannot be shared), on a machine with 2 CPUs or more; a larger N is a usage error (each
reader is a process of its own: a thousand would only fight over the CPUs)."""

SPAN_BYTES = 4_000_000
"""Bytes of a span when children share a file. A span's batches (a small share of its bytes: see
bench_replay in docs/perf-tuning.md, "Third pass") fit the pipe (:data:`PIPE_BYTES`): a child
reads its next span while the last one waits its turn."""

MAX_READERS = 8
"""Reader processes at most when only the final frame is built (``compare``)."""

MAX_READERS_WITH_FRAMES = 3
"""... and when every frame is built: reading costs a little more than the frames (bench_replay in
docs/perf-tuning.md, "Sixth pass"), so with two or three readers the frames are the bound and more
would only wait."""

PIPE_BYTES = 1 << 20
"""Pipe buffer asked for (Linux's default of 64 KB holds only a couple of a 48-core run's batches):
the reader can run some frames ahead when a frame takes longer than usual, instead of waiting."""

_LENGTH = struct.Struct("<Q")

Message = tuple[Any, ...]


def readers(stream: RecordingStream, *, frames: bool = True) -> int:
    """How many reader processes a replay of ``stream`` should use (0: read it in this one).

    ``frames=False`` when only the final frame is built (``compare``): this process then has
    little to do and every CPU can read."""
    switch = os.environ.get(ENV_SWITCH, "").strip()
    if switch and not (is_ascii_digits(switch) and int(switch) <= MAX_READERS):
        raise UsageError(
            f"{ENV_SWITCH}={printable(switch)[:40]!r}: give 0 (read in this process) or the number of "
            f"reader processes, at most {MAX_READERS}, or leave it unset (sectormon picks)"
        )
    if switch and int(switch) == 0:
        return 0
    if HOTSPOTS_KEY in stream.header.keys:
        return 0  # sample batches go to the frame builder in order, in this process
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    if cpus < 2:
        return 0
    try:
        size = os.path.getsize(stream.path)
    except OSError:
        return 0
    forced = bool(switch)  # a number >= 1 (0 returned above)
    if forced:
        wanted = int(switch)
    elif size * (GZIP_RATIO if stream.compressed else 1) < MIN_BYTES:
        return 0
    else:
        wanted = min(cpus - 1, MAX_READERS_WITH_FRAMES) if frames else min(cpus, MAX_READERS)
        if size < 2 * SPAN_BYTES:
            wanted = 1
    if stream.compressed or stream.skip_bad:
        return 1
    return max(1, wanted)


def read_batches(
    stream: RecordingStream, interval: float, start: float, t_to: float = math.inf, count: int = 1
) -> Iterator[RowBatch | Mark | RegionsReading]:
    """The items of ``stream`` after its header, read by ``count`` child processes: slices as
    :class:`RowBatch` (one per frame interval, split at marks), marks as they are. Items after
    ``t_to`` are not read. At the end ``stream`` holds the children's ``last_line``, ``skipped``
    and ``warnings``, as if it had been iterated here."""
    common = [stream.path, "1" if stream.skip_bad else "0", repr(interval), repr(start), repr(t_to)]
    if count <= 1:
        parts = 1
        children = [_start(common)]
    else:
        size = os.path.getsize(stream.path)
        parts = max(1, math.ceil(size / SPAN_BYTES))
        children = [_start([*common, str(SPAN_BYTES), str(size), str(i), str(count)]) for i in range(count)]
    finished = False
    try:
        # Line numbers: the lone reader numbers the file's lines; span readers number each span's
        # from 1, and the spans' line counts, added up in file order, place them.
        base = 1 if count <= 1 else stream.last_line + 1
        last_line = stream.last_line
        skipped = 0
        warnings: list[str] = []
        warned_kinds: set[str] = set()
        for k in range(parts):
            end = yield from _part(children[k % len(children)], stream, base)
            line, part_skipped, part_warnings, kind_warnings, stopped, lines = end
            # Each reader warns once per unknown mark kind it meets: the file, once.
            repeated = {i for name, i in kind_warnings.items() if name in warned_kinds}
            warned_kinds.update(kind_warnings)
            warnings.extend(
                f"{stream.name}:{base + at - 1}: {text}"
                for i, (at, text) in enumerate(part_warnings)
                if i not in repeated
            )
            skipped += part_skipped
            if line:
                last_line = max(last_line, base + line - 1)
            base += lines
            if stopped:
                break
        stream.absorb(last_line=last_line, skipped=skipped, warnings=warnings)
        finished = True
    finally:
        for proc in children:
            if not finished and proc.poll() is None:
                proc.kill()
            if proc.stdout is not None:
                proc.stdout.close()
            proc.wait()


def _part(
    proc: subprocess.Popen[bytes], stream: RecordingStream, base: int
) -> Generator[RowBatch | Mark | RegionsReading, None, Message]:
    """The batches and marks of one part (the file, or one span) from ``proc``; returns its
    ``end`` message without the tag. Errors name lines as the file numbers them (``base``: the
    number of the part's first line); an ``end`` mark sets ``stream.end_seen``."""
    assert proc.stdout is not None
    path = stream.name
    while True:
        message = _receive(proc.stdout)
        if message is None:
            code = proc.wait()
            raise SectormonError(
                f"{path}: the replay's reader process ended early (exit status {code})"
                f" (set {ENV_SWITCH}=0 to replay in one process)"
            )
        kind = message[0]
        if kind == "b":
            yield unwire(message[1])
        elif kind == "r":
            yield regions_from_record(message[1])
        elif kind == "m":
            t, mark_kind, label, data = message[1]
            if mark_kind == "end":
                stream.end_seen = True
            yield Mark(t=t, kind=mark_kind, label=label, data=data)
        elif kind == "end":
            return message[1:]
        elif kind == "error":
            # The child opened the file by its path; the error names it as this reader does.
            _, _path, line, problem, fix = message
            raise RecordingError(stream.name, None if line is None else base + line - 1, problem, fix)
        else:
            raise SectormonError(
                f"{path}: the replay's reader process failed: {message[1]}"
                f" (set {ENV_SWITCH}=0 to replay in one process)"
            )


def _start(args: list[str]) -> subprocess.Popen[bytes]:
    """A child running :func:`main` with ``args``, its stdout a widened pipe."""
    # The child imports this very package: its directory goes last on the child's path, so an
    # installed sectormon is found as usual and a source checkout (tests, benchmarks) works too.
    package_root = str(Path(__file__).resolve().parents[2])
    bootstrap = (
        f"import sys; sys.path.append({package_root!r}); "
        "from sectormon.session.replay_worker import main; sys.exit(main(sys.argv[1:]))"
    )
    # A session of its own: Ctrl-C at the terminal goes to the foreground process group, and
    # the child must not get it (it would die with a traceback from wherever its interpreter is,
    # even before ``main`` could ignore SIGINT); the parent stops it.
    proc = subprocess.Popen(
        [sys.executable, "-c", bootstrap, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None
    _widen(proc.stdout)
    return proc


def _widen(pipe: IO[bytes]) -> None:
    # Above /proc/sys/fs/pipe-max-size for this user it fails: the default will do.
    with contextlib.suppress(OSError):
        fcntl.fcntl(pipe.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)


def _receive(pipe: IO[bytes]) -> Any:
    """The next message, ``None`` at the end of the pipe (the child died)."""
    head = pipe.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    data = pipe.read(size)
    if len(data) < size:
        return None
    return marshal.loads(data)


# ------------------------------------------------------------------------------------------ child


def serve(path: str, skip_bad: bool, interval: float, start: float, t_to: float, out: IO[bytes]) -> None:
    """A lone child's work: read ``path`` and send its batches and marks to ``out``."""
    send = _sender(out)
    with _reporting(send, out), open_recording(path, skip_bad=skip_bad) as stream:
        stopped = _sum(stream, FrameClock(interval, start), t_to, send)
        send(_end(stream, stopped))


def serve_spans(
    path: str, interval: float, start: float, t_to: float, spans: tuple[int, int, int, int], out: IO[bytes]
) -> None:
    """Child ``index`` of ``count`` sharing ``path`` (``spans`` = span bytes, file size, index,
    count): read spans ``index, index + count, ...``, sending each one's batches and marks, then
    its ``end``. A span starts a frame interval, so each gets its own aggregator (``fresh``)."""
    span_bytes, size, index, count = spans
    send = _sender(out)
    with _reporting(send, out), open(path, "rb") as f, open_recording(path) as stream:
        finder = SpanFinder(f, size, span_bytes, interval, start)
        for k in range(index, finder.count, count):
            found = finder.span(k)
            if found is None:  # nothing starts here: the span before runs on
                send(("end", 0, 0, (), {}, False, 0))
                continue
            begin, end = found
            clock = FrameClock(interval, start)
            if begin.t_before > -math.inf:
                clock.due(begin.t_before)  # the clock as the slice before the span left it
            items = stream.iter_span(
                begin.offset, end, last_slice_t=begin.t_before, last_index=begin.index_before
            )
            stopped = _sum(items, clock, t_to, send, span_end=end)
            send(_end(stream, stopped))
            if stopped:
                break


@contextlib.contextmanager
def _reporting(send: Callable[[Message], None], out: IO[bytes]) -> Iterator[None]:
    """A child's failures as messages to the parent (a broken pipe: the parent is gone)."""
    try:
        yield
    except RecordingError as exc:
        send(("error", exc.path, exc.line, exc.problem, exc.fix))
    except (BrokenPipeError, ConnectionResetError):
        raise
    except Exception:
        send(("fail", traceback.format_exc(limit=8).strip().splitlines()[-1]))
    out.flush()


def _sum(
    items: Iterable[Slice | Mark | SampleBatch | RegionsReading],
    clock: FrameClock,
    t_to: float,
    send: Callable[[Message], None],
    span_end: int | None = None,
) -> bool:
    """Sum ``items`` into batches, one per frame interval (split at marks), sending them and the
    marks; whether it stopped at ``t_to``. A span that stops before the end of the file ends with
    a frame: that is where its boundary was found."""
    rows = RowAggregator()
    stopped = False
    for item in items:
        if item.t > t_to:
            stopped = True
            break
        if isinstance(item, SampleBatch):
            raise RuntimeError("a sampling session's recording is replayed in one process (see readers())")
        if isinstance(item, Mark):
            if rows.pending:
                send(("b", wire(rows.take(frame_due=False))))
            send(("m", (item.t, item.kind, item.label, item.data)))
            continue
        if isinstance(item, RegionsReading):
            # Cumulative: the engine takes it before the frame its slice is in, as live.
            send(("r", regions_record(item)))
            continue
        rows.add(item)
        if clock.due(item.t):
            send(("b", wire(rows.take(frame_due=True))))
    if rows.pending:
        if span_end is not None and not stopped:
            raise RuntimeError(f"the span ending at byte {span_end} does not end with a frame")
        send(("b", wire(rows.take(frame_due=False))))
    return stopped


def _end(stream: RecordingStream, stopped: bool) -> Message:
    return (
        "end",
        stream.last_line,
        stream.skipped,
        tuple(stream.warning_lines),
        stream.kind_warnings,
        stopped,
        stream.lines_read,
    )


def _sender(out: IO[bytes]) -> Callable[[Message], None]:
    def send(message: Message) -> None:
        data = marshal.dumps(message)
        out.write(_LENGTH.pack(len(data)))
        out.write(data)

    return send


def main(argv: list[str]) -> int:
    # The parent handles Ctrl-C (and kills this process): no second traceback from here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # What this process makes (JSON values, rows, tuples, batches) holds no reference cycle, so
    # reference counting frees all of it; the cycle collector would only walk the rows pending
    # a frame, again and again (bench_replay in docs/perf-tuning.md, "Fifth pass").
    gc.disable()
    path, skip_bad, interval, start, t_to, *span_args = argv
    out = sys.stdout.buffer
    try:
        if span_args:
            span_bytes, size, index, count = (int(a) for a in span_args)
            spans = (span_bytes, size, index, count)
            serve_spans(path, float(interval), float(start), float(t_to), spans, out)
        else:
            serve(path, skip_bad == "1", float(interval), float(start), float(t_to), out)
    except (BrokenPipeError, ConnectionResetError):
        # The parent stopped reading (it stopped early or died): nothing left to do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
