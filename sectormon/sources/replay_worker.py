"""A replay's reading half in a second process: JSON, checks and row sums beside the frames.

Replaying an hour of a 48-core run is about half reading (a JSON parse and checks per line, the
engine's per-row sums) and half building frames. On a machine with a second CPU, a child process
(:func:`main` of this module in a new interpreter) reads the recording and sums its rows with
:class:`sectormon.metrics.batch.RowAggregator`, one :class:`RowBatch` per frame interval, while
this process builds the frames: the replay takes the longer of the two halves instead of their sum.
The frames are those of the one-process replay, bit for bit (the batch module says why).

The child writes length-prefixed :mod:`marshal` messages to its stdout (its stderr is ours):
``("b", batch)``, ``("m", mark)``, then ``("end", last line, skipped, warnings)``, or
``("error", path, line, problem, fix)`` for a :class:`RecordingError`, ``("fail", text)`` for
anything else. The parent rebuilds the same errors, and kills the child when it stops early
(``--to``, a closed pipe, Ctrl-C, an error); a child whose parent died stops at its next write.
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
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from sectormon.errors import SectormonError
from sectormon.frames import FrameClock
from sectormon.io.reader import RecordingError, RecordingStream, open_recording
from sectormon.metrics.batch import RowAggregator, RowBatch, unwire, wire
from sectormon.readings import Mark

MIN_BYTES = 8_000_000
"""Recordings smaller than this replay in one process: starting the child (~0.1 s) would not pay.
(A 48-core recording grows by about 16 MB a minute.)"""

GZIP_RATIO = 3
"""About how much a gzip recording grows when decompressed (2.7 for the benchmark's counts)."""

ENV_SWITCH = "SECTORMON_REPLAY_WORKER"
"""``0`` never uses the reader process, ``1`` always does (where the machine has 2 CPUs or more)."""

_LENGTH = struct.Struct("<Q")


def usable(stream: RecordingStream[Any]) -> bool:
    """Whether a replay of ``stream`` should read it in a second process."""
    switch = os.environ.get(ENV_SWITCH, "")
    if switch == "0":
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    if cpus < 2:
        return False
    if switch == "1":
        return True
    try:
        size = os.path.getsize(stream.path)
    except OSError:
        return False
    return size * (GZIP_RATIO if stream.compressed else 1) >= MIN_BYTES


def read_batches(
    stream: RecordingStream[Any], interval: float, start: float, t_to: float = math.inf
) -> Iterator[RowBatch | Mark]:
    """The items of ``stream`` after its header, read by a child process: slices as
    :class:`RowBatch` (one per frame interval, split at marks), marks as they are. Items after
    ``t_to`` are not read. At the end ``stream`` holds the child's ``last_line``, ``skipped`` and
    ``warnings``, as if it had been iterated here."""
    # The child imports this very package: its directory goes last on the child's path, so an
    # installed sectormon is found as usual and a source checkout (tests, benchmarks) works too.
    package_root = str(Path(__file__).resolve().parents[2])
    bootstrap = (
        f"import sys; sys.path.append({package_root!r}); "
        "from sectormon.sources.replay_worker import main; sys.exit(main(sys.argv[1:]))"
    )
    argv = [
        sys.executable,
        "-c",
        bootstrap,
        stream.path,
        "1" if stream.skip_bad else "0",
        repr(interval),
        repr(start),
        repr(t_to),
    ]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    pipe = proc.stdout
    _widen(pipe)
    finished = False
    try:
        while True:
            message = _receive(pipe)
            if message is None:
                code = proc.wait()
                raise SectormonError(
                    f"{stream.path}: the replay's reader process ended early (exit status {code})"
                    f" (set {ENV_SWITCH}=0 to replay in one process)"
                )
            kind = message[0]
            if kind == "b":
                yield unwire(message[1])
            elif kind == "m":
                t, mark_kind, label, data = message[1]
                yield Mark(t=t, kind=mark_kind, label=label, data=data)
            elif kind == "end":
                _, last_line, skipped, warnings = message
                stream.absorb(last_line=last_line, skipped=skipped, warnings=list(warnings))
                finished = True
                return
            elif kind == "error":
                _, path, line, problem, fix = message
                raise RecordingError(path, line, problem, fix)
            else:
                raise SectormonError(f"{stream.path}: the replay's reader process failed: {message[1]}")
    finally:
        if not finished and proc.poll() is None:
            proc.kill()
        pipe.close()
        proc.wait()


PIPE_BYTES = 1 << 20
"""Pipe buffer asked for (Linux's default is 64 KB, two batches of a 48-core run): the reader can
run some frames ahead when a frame takes longer than usual, instead of waiting."""


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
    """The child's work: read ``path`` and send its batches and marks to ``out``."""

    def send(message: tuple[Any, ...]) -> None:
        data = marshal.dumps(message)
        out.write(_LENGTH.pack(len(data)))
        out.write(data)

    try:
        with open_recording(path, skip_bad=skip_bad, rows=True) as stream:
            clock = FrameClock(interval, start)
            rows = RowAggregator()
            for item in stream:
                if item.t > t_to:
                    break
                if isinstance(item, Mark):
                    if rows.pending:
                        send(("b", wire(rows.take(frame_due=False))))
                    send(("m", (item.t, item.kind, item.label, item.data)))
                    continue
                rows.add(item)
                if clock.due(item.t):
                    send(("b", wire(rows.take(frame_due=True))))
            if rows.pending:
                send(("b", wire(rows.take(frame_due=False))))
            send(("end", stream.last_line, stream.skipped, tuple(stream.warnings)))
    except RecordingError as exc:
        send(("error", exc.path, exc.line, exc.problem, exc.fix))
    except (BrokenPipeError, ConnectionResetError):
        raise
    except Exception:
        send(("fail", traceback.format_exc(limit=8).strip().splitlines()[-1]))
    out.flush()


def main(argv: list[str]) -> int:
    # The parent handles Ctrl-C (and kills this process): no second traceback from here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # What this process makes (JSON values, rows, tuples, batches) holds no reference cycle, so
    # reference counting frees all of it; the cycle collector would only walk the rows pending
    # a frame, again and again (3 % of the reading's instructions, measured with cachegrind).
    gc.disable()
    path, skip_bad, interval, start, t_to = argv
    out = sys.stdout.buffer
    try:
        serve(path, skip_bad == "1", float(interval), float(start), float(t_to), out)
    except (BrokenPipeError, ConnectionResetError):
        # The parent stopped reading (it stopped early or died): nothing left to do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
