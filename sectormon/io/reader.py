"""The recording reader: streams a header, then slices, marks and sample batches, and migrates
older versions (:mod:`.migrations`).

It splits the file's bytes (:mod:`.chunks`: plain or gzip) into numbered lines, decodes each as a
record (:mod:`.jsonl`, :mod:`.samples`, the header through :mod:`.header_codec`) and checks that
slices follow each other in time and index; a jump in index is a gap mark. Scanning a file for
its timeline reads slice lines only as far as :mod:`.slice_keys` needs.

A cut file (a last line with no newline, a gzip stream that stops mid-way) is read up to its last
whole line with a warning; anything else wrong is a :class:`RecordingError` naming the file and
line (unless ``skip_bad``); slices missing from the file are a warning and a gap mark.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sectormon.data.header import Header
from sectormon.data.readings import Mark, Slice, gap_mark
from sectormon.data.regions import RegionsReading
from sectormon.data.samples import SampleBatch
from sectormon.errors import DataError
from sectormon.files.lines import MIB, too_long
from sectormon.files.regular import open_input
from sectormon.files.text import printable
from sectormon.io.chunks import GZIP_MAGIC, CorruptStream, gzip_chunks, plain_chunks, span_chunks
from sectormon.io.header_codec import header_from_json
from sectormon.io.jsonl import (
    FORMAT_VERSION,
    MARK_SCHEMA,
    RECORD_KINDS,
    RECORDING_SCHEMA,
    SLICE_SCHEMA,
    BadRecord,
    known_mark_kind,
    loads,
    loads_record,
    mark_from_record,
    parse_schema,
    slice_from_record,
)
from sectormon.io.migrations import migrate, slice_from_v1
from sectormon.io.regions_record import REGIONS_SCHEMA, regions_from_record
from sectormon.io.samples import SAMPLES_SCHEMA, LocationInterner, samples_from_record
from sectormon.io.slice_keys import index_of, slice_head

# The --json stream's records (sectormon.data.frames; io does not import it): a header, then frames.
_FRAME_STREAM_SCHEMAS = ("sectormon/header/", "sectormon/frame/")

_CUT = "the recording was cut"  # in every warning about a cut, so a second one is not given
RECORDED = "the live session warned at"  # a ``warning`` mark, said again when the file is read
NO_END_MARK = f"no end mark ({_CUT}: sectormon was killed or its disk filled); read up to its last whole line"

CHUNK = 1 << 20
"""Bytes read from the file at once."""
MAX_LINE = 64 * MIB
"""The longest line a recording may hold: a slice of 400,000 units of eight events (a 48-core
line is 12 KB). A longer one (a gzip bomb's endless line) is an error at that line, found before
it is decoded, so reading one never holds more than this of a line."""

Item = Slice | Mark | SampleBatch | RegionsReading


class RecordingError(DataError):
    """A recording that cannot be read (as far as asked): names the file and the line."""


# ------------------------------------------------------------------------------------------- stream


@dataclass
class Recording:
    """A whole recording in memory (fine for minutes; use :func:`open_recording` for hours)."""

    path: str
    header: Header
    items: tuple[Item, ...]
    skipped: int = 0
    warnings: tuple[str, ...] = ()

    @property
    def slices(self) -> tuple[Slice, ...]:
        return tuple(i for i in self.items if isinstance(i, Slice))

    @property
    def marks(self) -> tuple[Mark, ...]:
        return tuple(i for i in self.items if isinstance(i, Mark))

    @property
    def end_t(self) -> float:
        """The time of the last record (0 for a recording without any)."""
        return self.items[-1].t if self.items else 0.0


@dataclass
class _State:
    lineno: int = 0
    last_slice_t: float = float("-inf")
    last_index: int | None = None  # of the slice before (None: none, or not known)
    gap: Mark | None = None  # the gap mark to yield before the slice just decoded
    warned_kinds: dict[str, int] = field(default_factory=dict)  # unknown mark kind -> its warning's index


class RecordingStream:
    """An open recording: ``header`` is read at once, iteration yields slices, marks and sample
    batches (a sampling session's ``samples`` records) in file order.

    Iterate once. ``skipped`` counts lines not used (bad lines under ``skip_bad`` and a truncated
    last line); ``warnings`` holds one line per problem that did not stop the read.
    """

    def __init__(self, path: str | Path, *, skip_bad: bool = False, name: str | None = None) -> None:
        self.path = str(path)
        self.name = printable(name if name is not None else self.path)
        """What messages call the file: its path, or where it came from (a job's node)."""
        self.skip_bad = skip_bad
        self.skipped = 0
        self.end_seen = False  # the `end` mark was read (read to the end without one: cut)
        self.warnings: list[str] = []
        self.warning_lines: list[tuple[int, str]] = []  # the warnings as (line, text)
        self.lines_read = 0  # lines (blank or not) the line source went through, so far
        self.version = FORMAT_VERSION
        self.compressed = False
        self.header_line = b""  # the header's line as in the file
        self._state = _State()
        self._interner = LocationInterner()
        self._gzip_flags: dict[str, bool] = {}
        try:
            self._file: IO[bytes] = open_input(self.path, "recording")
        except DataError as exc:
            raise RecordingError(self.name, None, exc.problem, exc.fix) from None
        try:
            first = self._file.read(CHUNK)
            self.compressed = first.startswith(GZIP_MAGIC)
            chunks = (
                gzip_chunks(self._file, first, CHUNK, self._gzip_flags)
                if self.compressed
                else plain_chunks(self._file, first, CHUNK)
            )
            self._lines = self._numbered_lines(chunks)
            self.header = self._read_header()
        except BaseException:
            self._file.close()
            raise
        self._iterated = False

    # ------------------------------------------------------------------------------------- public

    def __iter__(self) -> Iterator[Item]:
        self._start()
        return self._items()

    def resume_after(self, line: int, last_slice_t: float) -> Iterator[Item]:
        """Iterate from the record after ``line`` (lines before it are skipped unparsed; ``line``
        itself is read for its slice's index, which the order check goes on from).

        For a replay restarting from an engine snapshot taken after the slice at ``line``.
        """
        self._start()
        self._state.last_slice_t = last_slice_t
        return self._items(after=line)

    def iter_span(
        self, start: int, end: int | None, *, last_slice_t: float, last_index: int | None = None
    ) -> Iterator[Item]:
        """Iterate the lines of bytes ``start`` to ``end`` of a plain file (``None``: to
        its end): what one of several readers of a recording reads (a replay's reader processes).

        ``start`` and ``end`` are line starts; ``last_slice_t`` and ``last_index`` are the time and
        index of the slice before ``start`` (the order check goes on from there). Lines are checked
        and warned about as a whole-file iteration would, but numbered from 1 at ``start`` (the
        caller knows where the span is in the file); ``lines_read`` ends as the span's number of
        lines. ``skipped``, ``warnings`` and :attr:`kind_warnings` start over with each span: a
        stream may read one span after another (never the whole file as well).
        """
        if self.compressed:
            raise ValueError("a span of a gzip recording cannot be read on its own")
        self._iterated = True
        self._state = _State(last_slice_t=last_slice_t, last_index=last_index)
        self.skipped = 0
        self.end_seen = False
        self.warnings = []
        self.warning_lines = []
        self.lines_read = 0
        self._file.seek(start)
        chunks = plain_chunks(self._file, b"", CHUNK) if end is None else span_chunks(self._file, end, CHUNK)
        self._lines = self._numbered_lines(chunks, 0, at_end=end is None)
        return self._items()

    def raw_lines(self) -> Iterator[tuple[int, bytes, bool]]:
        """The lines after the header as this reader finds them, undecoded: ``(line number,
        bytes without the newline, cut)``; blank lines left out, ``cut`` for a last line with no
        newline. A corrupt or cut gzip stream ends them as iteration would (an error, or a
        warning under ``skip_bad``). What ``merge`` copies into a job: the lines a replay reads."""
        self._start()
        return self._lines

    @property
    def kind_warnings(self) -> dict[str, int]:
        """For each unknown mark kind met, the index of its warning in ``warnings`` (a reader warns
        once per kind)."""
        return dict(self._state.warned_kinds)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> RecordingStream:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _start(self) -> None:
        if self._iterated:
            raise RuntimeError("a RecordingStream can be iterated once; open the recording again")
        self._iterated = True

    # ------------------------------------------------------------------------------------- lines

    def _numbered_lines(
        self, chunks: Iterator[bytes], lineno: int = 0, at_end: bool = True
    ) -> Iterator[tuple[int, bytes, bool]]:
        """Non-blank lines as ``(line number, bytes, cut)``; gzip trouble becomes an error/warning.

        ``cut`` is true for the file's last line when no newline ends it: what a writer stopped
        mid-line leaves (a whole line of garbage is a bad line like any other). ``lineno`` is the
        number of the line before the first; ``at_end=False`` for a span that stops before the end
        of the file (its last line is not the file's last)."""
        buf = b""
        held: list[bytes] = []  # the pieces of a line no chunk has ended yet
        held_bytes = 0
        overlong = False  # under skip_bad: discarding a line over MAX_LINE up to its end
        try:
            for chunk in chunks:
                if b"\n" not in chunk:
                    if not overlong:
                        held.append(chunk)
                        held_bytes += len(chunk)
                        if held_bytes > MAX_LINE:
                            overlong = self._overlong(lineno + 1)
                            held, held_bytes = [], 0
                    continue
                if overlong:
                    chunk = chunk[chunk.index(b"\n") + 1 :]
                    lineno += 1
                    overlong = False
                elif held:
                    # Joined once its line ends: adding each chunk to a growing line would copy
                    # it again and again (quadratic in the line).
                    chunk = b"".join(held) + chunk
                pieces = chunk.split(b"\n")
                buf = pieces.pop()
                held, held_bytes = [buf], len(buf)
                for piece in pieces:
                    lineno += 1
                    if not piece or piece.isspace():
                        continue
                    if len(piece) > MAX_LINE:
                        self._overlong(lineno)
                        continue
                    yield lineno, piece, False
                if held_bytes > MAX_LINE:
                    overlong = self._overlong(lineno + 1)
                    held, held_bytes = [], 0
        except CorruptStream as exc:
            problem = f"compressed data is corrupt near byte {exc.offset:,} of the file ({exc})"
            if not self.skip_bad:
                raise RecordingError(
                    self.name, lineno + 1, problem, "use --skip-bad to keep what precedes"
                ) from None
            self._warn(lineno + 1, f"{problem}; the rest of the file was skipped")
            self.skipped += 1
            held = []
        if overlong:
            lineno += 1  # the long line ran to the end of the file
        buf = b"".join(held)
        tail = buf if buf and not buf.isspace() else None
        if tail is not None:
            lineno += 1
        if self._gzip_flags.get("truncated"):
            self._warn(lineno, f"gzip stream ends early ({_CUT}); read up to here")
        self.lines_read = lineno
        if tail is not None:
            yield lineno, tail, at_end
        # Read to the end (the caller asked past the last line, so it has been decoded): a file
        # without its end mark was cut, said once with the other cuts (kill -9, a full disk).
        if at_end and not self.end_seen and not any(_CUT in w for w in self.warnings):
            self._warn(lineno, NO_END_MARK)

    def _overlong(self, lineno: int) -> bool:
        """A line over :data:`MAX_LINE`: an error, or under ``skip_bad`` a warning (the line is
        then skipped, never held)."""
        error = too_long(self.name, lineno, MAX_LINE)
        if not self.skip_bad:
            raise RecordingError(error.path, error.line, error.problem, "use --skip-bad to skip it")
        self.skipped += 1
        self._warn(lineno, f"{error.problem}; skipped it")
        return True

    def _warn(self, lineno: int, text: str) -> None:
        self.warnings.append(f"{self.name}:{lineno}: {text}")
        self.warning_lines.append((lineno, text))

    def _parse(self, lineno: int, line: bytes, cut: bool) -> dict[str, Any] | None:
        """One line as a JSON object; ``None`` when it is skipped (truncated last line or skip_bad)."""
        try:
            rec = loads(line)
        except (ValueError, RecursionError) as exc:
            if cut:
                self.skipped += 1
                self._warn(lineno, f"last line is incomplete ({_CUT}); skipped it")
                return None
            self._bad(lineno, f"not valid JSON ({_short(exc)})")
            return None
        if type(rec) is not dict:
            self._bad(lineno, "a record must be a JSON object")
            return None
        return rec

    def _bad(self, lineno: int, problem: str) -> None:
        if not self.skip_bad:
            raise RecordingError(self.name, lineno, problem, "use --skip-bad to skip bad lines")
        self.skipped += 1
        return None

    # ------------------------------------------------------------------------------------ records

    def _read_header(self) -> Header:
        for lineno, line, cut in self._lines:
            try:
                rec = loads_record(line)
            except (ValueError, RecursionError) as exc:
                if line.lstrip()[:1] in (b"{", "{"):
                    problem = (
                        "the header line is incomplete (the recording was cut at its start)"
                        if cut
                        else f"the header line is not valid JSON ({_short(exc)})"
                    )
                    raise RecordingError(self.name, lineno, problem) from None
                raise RecordingError(
                    self.name, lineno, f"not a sectormon recording: first line is not JSON ({_short(exc)})"
                ) from None
            if type(rec) is not dict:
                raise RecordingError(
                    self.name, lineno, "not a sectormon recording: first record is not an object"
                )
            schema = rec.get("schema")
            if type(schema) is str and schema.startswith(_FRAME_STREAM_SCHEMAS):
                raise RecordingError(
                    self.name,
                    lineno,
                    "this is a --json frame stream (computed frames), not a recording of raw readings",
                    "record with --record FILE to replay or compare a run; a frame stream is read "
                    "with jq or pandas",
                )
            kind, version = self._schema(lineno, rec)
            if kind != "recording":
                raise RecordingError(
                    self.name,
                    lineno,
                    f"not a sectormon recording: first record is a {kind!r}, expected the header "
                    f"(schema {RECORDING_SCHEMA!r})",
                    "the file may be reordered or cut at its start",
                )
            self.version = version
            try:
                if version < FORMAT_VERSION:
                    rec = migrate(rec, version)
                header = header_from_json(rec)
            except BadRecord as exc:
                raise RecordingError(
                    self.name, lineno, str(exc), "the header is damaged: restore it from a copy of the file"
                ) from None
            self._state.lineno = lineno
            self.header_line = line
            return header
        raise RecordingError(self.name, 1, "empty file: not a sectormon recording (no header line)")

    def _schema(self, lineno: int, rec: dict[str, Any]) -> tuple[str, int]:
        """Kind and version of a record; unknown kinds and newer versions are errors even with skip_bad."""
        try:
            kind, version = parse_schema(rec.get("schema"))
        except BadRecord as exc:
            raise RecordingError(self.name, lineno, str(exc)) from None
        if kind not in RECORD_KINDS:
            raise RecordingError(
                self.name,
                lineno,
                f"unknown record kind {kind!r} (this sectormon reads {', '.join(RECORD_KINDS)} "
                f"records, version {FORMAT_VERSION})",
                "a newer sectormon may read it",
            )
        if version > FORMAT_VERSION:
            raise RecordingError(
                self.name,
                lineno,
                f"record version sectormon/{kind}/{version} is newer than this sectormon supports "
                f"(sectormon/{kind}/{FORMAT_VERSION})",
                "upgrade sectormon to replay it",
            )
        return kind, version

    def _items(self, after: int = 0) -> Iterator[Item]:
        decode = self._decode
        state = self._state
        for lineno, line, cut in self._lines:
            if lineno <= after:
                if lineno == after:
                    state.last_index = index_of(line)
                continue
            item = decode(lineno, line, cut)
            if item is not None:
                if state.gap is not None:
                    yield state.gap
                    state.gap = None
                yield item

    def _decode(self, lineno: int, line: bytes, cut: bool) -> Item | None:
        """One line as a slice, mark or sample batch; ``None`` when skipped (bad under skip_bad,
        cut, unknown mark kind). A slice after missing ones leaves its gap mark in ``_state.gap``."""
        state = self._state
        state.lineno = lineno
        rec = self._parse(lineno, line, cut)
        if rec is None:
            return None
        schema = rec.get("schema")
        item: Slice | Mark
        try:
            if schema == SLICE_SCHEMA:
                item = slice_from_record(rec, text=line)
            elif schema == MARK_SCHEMA:
                item = mark_from_record(rec)
            elif schema == REGIONS_SCHEMA:
                # Just before its slice: cumulative, so it is kept whatever the slice's fate.
                return regions_from_record(rec)
            elif schema == SAMPLES_SCHEMA:
                # Not in the slices' time order: a batch carries the time it was taken at.
                return samples_from_record(rec, self._interner)
            else:
                kind, version = self._schema(lineno, rec)
                if kind == "recording":
                    raise BadRecord("a second header in the middle of the recording")
                if kind in ("samples", "regions"):
                    raise BadRecord(f"{kind} records begin with format version {FORMAT_VERSION}")
                if kind == "slice" and version == 1:
                    item = slice_from_v1(rec)  # directly: no intermediate version-2 record
                else:
                    rec = migrate(rec, version)
                    item = mark_from_record(rec) if kind == "mark" else slice_from_record(rec)
        except BadRecord as exc:
            self._bad(lineno, str(exc))
            return None
        if isinstance(item, Mark):
            if not known_mark_kind(item.kind):
                if item.kind not in state.warned_kinds:
                    state.warned_kinds[item.kind] = len(self.warnings)
                    self._warn(lineno, f"unknown mark kind {item.kind!r} ignored")
                return None
            if item.kind == "end":
                self.end_seen = True
            elif item.kind == "warning":
                # What the live session warned about (a thread left uncounted, events it could
                # not count) is said again by every reader of the file, as its own warnings are.
                self._warn(lineno, f"{RECORDED} t={item.t:g} s: {item.label}")
                return None
        elif not self._slice_in_order(lineno, item.t, item.index, item.duration):
            return None
        return item

    def _slice_in_order(self, lineno: int, t: float, index: int, duration: float) -> bool:
        """Whether a slice follows the one before in time and index (else a bad line); a jump in
        index is a gap: warned about, and its mark left in ``_state.gap``."""
        state = self._state
        before = state.last_slice_t
        if t < before:
            self._bad(
                lineno,
                f"slice t={t:g} goes back in time from t={before:g} "
                "(lines reordered or two recordings joined)",
            )
            return False
        last = state.last_index
        if last is not None and index != last + 1:
            if index <= last:
                self._bad(
                    lineno,
                    f"slice index {index} does not follow index {last} (a line repeated or reordered)",
                )
                return False
            self._gap(lineno, before, last, t - duration, index)
        state.last_slice_t = t
        state.last_index = index
        return True

    def _gap(self, lineno: int, t_before: float, last: int, t_after: float, index: int) -> None:
        """Slices ``last + 1 .. index - 1`` are missing between ``t_before`` and ``t_after``."""
        missing = index - last - 1
        lost = max(0.0, t_after - t_before)
        self._warn(
            lineno,
            f"{missing} slice(s) missing before this line: index {last + 1}..{index - 1}, "
            f"{lost:.6g} s of t={t_before:g}..{t_after:g} s not in the file (lines deleted?); "
            "the coverage of windows over that time shows it",
        )
        if lost > 0:
            self._state.gap = gap_mark(t_before, lost, last + 1, index - 1)

    def absorb(self, *, last_line: int, skipped: int, warnings: list[str]) -> None:
        """Take over what another reader of this file found (a replay's reader process read it
        for us): where it stopped, what it skipped, what it warned about."""
        self._iterated = True
        self._state.lineno = last_line
        self.skipped += skipped
        self.warnings.extend(warnings)

    @property
    def last_line(self) -> int:
        """The number of the last line read so far."""
        return self._state.lineno

    def scan(self) -> ScanResult:
        """Go through the whole file for its timeline (marks, first and last slice time), quickly.

        Slice lines in a writer's own layout (version 2 or 1) are not decoded beyond their ``t``;
        playback checks them fully. Everything else goes through the full decoder.
        """
        self._start()
        marks: list[Mark] = []
        first_t: float | None = None
        end_t = 0.0
        slices = 0
        state = self._state
        for lineno, line, cut in self._lines:
            head = None if cut else slice_head(line)
            if head is not None:
                state.lineno = lineno
                t = head[0]
                if not self._slice_in_order(lineno, t, head[1], head[2]):
                    continue
            else:
                item = self._decode(lineno, line, cut)
                if item is None or isinstance(item, (SampleBatch, RegionsReading)):
                    continue
                t = item.t
                if isinstance(item, Mark):
                    marks.append(item)
                    end_t = max(end_t, t)
                    continue
            if state.gap is not None:
                marks.append(state.gap)
                state.gap = None
            slices += 1
            first_t = t if first_t is None else first_t
            end_t = max(end_t, t)
        return ScanResult(
            header=self.header,
            marks=tuple(marks),
            slices=slices,
            first_t=first_t if first_t is not None else 0.0,
            end_t=end_t,
            skipped=self.skipped,
            warnings=tuple(self.warnings),
        )


@dataclass(frozen=True)
class ScanResult:
    """A recording's timeline without its readings (what a replay's progress bar needs)."""

    header: Header
    marks: tuple[Mark, ...]
    slices: int
    first_t: float
    end_t: float
    skipped: int
    warnings: tuple[str, ...]


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:120]


def open_recording(path: str | Path, *, skip_bad: bool = False, name: str | None = None) -> RecordingStream:
    """Open a recording for streaming (header read and checked now); iterating yields
    :class:`Slice`, :class:`Mark` and :class:`SampleBatch`. ``name``: what messages call it
    (default: its path)."""
    return RecordingStream(path, skip_bad=skip_bad, name=name)


def scan_recording(path: str | Path, *, skip_bad: bool = False, name: str | None = None) -> ScanResult:
    """The timeline of a recording (see :meth:`RecordingStream.scan`)."""
    with open_recording(path, skip_bad=skip_bad, name=name) as stream:
        return stream.scan()


def read_recording(path: str | Path, *, skip_bad: bool = False) -> Recording:
    """Read a whole recording into memory."""
    with open_recording(path, skip_bad=skip_bad) as stream:
        items = tuple(stream)
        return Recording(
            path=stream.path,
            header=stream.header,
            items=items,
            skipped=stream.skipped,
            warnings=tuple(stream.warnings),
        )
