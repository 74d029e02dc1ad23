"""The recorder: raw slices, marks and sample batches to a JSON Lines file (gzip when the name
ends in ``.gz``).

Every line is flushed as it is written (for gzip with ``Z_SYNC_FLUSH``), so a recording cut by a
crash, ``kill -9`` or a full disk is readable up to its last whole line, so the path is written in
place by the project's output rule (:func:`sectormon.files.output.open_output`: a device or a FIFO
stays what it is). Recording is a side job of monitoring: the first failure (disk full,
unwritable path) stops the recording with one clear message, stored in
:attr:`RecordingWriter.failed` and reported once through ``on_error``; later writes are no-ops
and the monitor goes on.
"""

from __future__ import annotations

import contextlib
import gzip
import threading
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from sectormon.data.header import Header
from sectormon.data.readings import Mark, Slice
from sectormon.data.regions import RegionsReading
from sectormon.data.samples import SampleBatch
from sectormon.files.output import OutputPathError, open_output
from sectormon.io.header_codec import header_to_json
from sectormon.io.jsonl import encode, encode_mark, encode_slice, header_record
from sectormon.io.regions_record import regions_record
from sectormon.io.samples import samples_record

GZIP_LEVEL = 6
"""zlib's default: a tenth of level 9's CPU for a few percent more bytes, on the sampler thread."""


def is_gzip_name(path: str | Path) -> bool:
    return str(path).endswith(".gz")


class RecordingWriter:
    """Writes one recording: the header at construction, then slices, marks and sample batches in
    call order.

    Thread-safe (the sampler writes slices, a front end may write marks). ``path`` is where it
    writes; ``failed`` is ``None`` while it works, else the one-line reason it stopped.
    """

    def __init__(
        self,
        path: str | Path,
        header: Header | Mapping[str, Any],
        *,
        on_error: Callable[[str], None] | None = None,
        option: str = "--record",
        stream: IO[bytes] | None = None,
    ) -> None:
        """``header``: the session's :class:`Header`, or a header record as JSON (written as it
        is: converters of other formats, tests of damaged files); ``option`` names the path in
        an error; ``stream``: write there instead of opening ``path`` (a caller that replaces a
        file whole opens its temporary file itself)."""
        self.path = str(path)
        self.failed: str | None = None
        self.failed_errno: int | None = None  # of the OSError that stopped it, if one did
        self._on_error = on_error
        self._lock = threading.RLock()  # on_error may write a mark from inside a failed write
        self._raw: IO[bytes] | None = None
        self._gz: gzip.GzipFile | None = None
        self._closed = False
        # A header that is not JSON-able is a programming error: raise before touching the disk.
        header_line = encode(header_record(header_to_json(header) if isinstance(header, Header) else header))
        try:
            self._raw = stream if stream is not None else open_output(self.path, option)
            if is_gzip_name(self.path):
                self._gz = gzip.GzipFile(
                    filename="", mode="wb", fileobj=self._raw, compresslevel=GZIP_LEVEL, mtime=0
                )
        except OSError as exc:
            self._fail(exc)
            return
        except OutputPathError as exc:  # a FIFO nobody reads, a name too long, a missing folder
            self._fail_message(f"cannot write recording {self.path}: {exc.reason}")
            return
        self._write_line(header_line)

    # ------------------------------------------------------------------------------------- public

    def write_slice(self, s: Slice) -> None:
        if self.failed is not None or self._closed:
            return
        try:
            line = encode_slice(s)
            if s.regions is not None:  # the region table first: a replay meets it before the slice
                table = encode(regions_record(RegionsReading(s.t, s.index, s.regions)))
                line = table + "\n" + line
        except (TypeError, ValueError) as exc:
            self._fail_message(f"recording to {self.path} stopped: slice {s.index} is not recordable ({exc})")
            return
        self._write_line(line)

    def write_mark(self, m: Mark) -> None:
        if self.failed is not None or self._closed:
            return
        try:
            line = encode_mark(m)
        except (TypeError, ValueError) as exc:
            self._fail_message(f"recording to {self.path} stopped: mark {m.kind!r} is not recordable ({exc})")
            return
        self._write_line(line)

    def write_regions(self, reading: RegionsReading) -> None:
        """A region table on its own (the newest, at the end of a run: see ``write_slice``)."""
        if self.failed is not None or self._closed:
            return
        try:
            line = encode(regions_record(reading))
        except (TypeError, ValueError) as exc:
            self._fail_message(f"recording to {self.path} stopped: a region table is not recordable ({exc})")
            return
        self._write_line(line)

    def write_samples(self, batch: SampleBatch) -> None:
        if self.failed is not None or self._closed:
            return
        try:
            line = encode(samples_record(batch))
        except (TypeError, ValueError) as exc:
            self._fail_message(
                f"recording to {self.path} stopped: the samples at t={batch.t:g} are not recordable ({exc})"
            )
            return
        self._write_line(line)

    def close(self) -> None:
        """Finish the file (the gzip trailer); idempotent. The caller writes the ``end`` mark first."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._gz is not None:
                    self._gz.close()
                if self._raw is not None:
                    self._raw.close()
            except OSError as exc:
                if self.failed is None:
                    self._fail(exc)
            finally:
                self._release()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------ private

    def _write_line(self, line: str) -> None:
        data = (line + "\n").encode("utf-8")
        with self._lock:
            if self.failed is not None or self._closed:
                return
            try:
                if self._gz is not None:
                    self._gz.write(data)
                    self._gz.flush(zlib.Z_SYNC_FLUSH)  # also flushes the raw file to the OS
                elif self._raw is not None:
                    self._raw.write(data)
                    self._raw.flush()
            except OSError as exc:
                self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        self.failed_errno = exc.errno
        reason = exc.strerror or str(exc)
        self._fail_message(f"cannot write recording {self.path}: {reason}")

    def _fail_message(self, message: str) -> None:
        with self._lock:
            if self.failed is not None:
                return
            self.failed = message
            self._release()
        if self._on_error is not None:
            self._on_error(message)

    def _release(self) -> None:
        """Drop the file objects without raising: a failed disk may refuse even the close."""
        for f in (self._gz, self._raw):
            if f is None:
                continue
            with contextlib.suppress(OSError, ValueError):
                f.close()
        self._gz = None
        self._raw = None
