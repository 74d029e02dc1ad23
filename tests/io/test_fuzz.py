"""Property tests: damaged recordings never crash the reader with anything but RecordingError.

Every failure is one line that names the file and a line number; a recording cut anywhere reads
back as a prefix of what was written.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sectormon.data.readings import Mark, Slice
from sectormon.io import RecordingError, read_recording
from sectormon.io.jsonl import encode, encode_mark, encode_slice, header_record
from sectormon.io.reader import scan_recording
from tests.io.recording_synth import header, stream

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def recording_lines(n: int, with_mark: bool) -> tuple[list[bytes], list[Slice | Mark]]:
    marks = {n // 2: Mark(t=0.0, kind="bookmark", label="m")} if with_mark else {}
    items = stream(n, marks=marks)
    out = [encode(header_record(header())).encode()]
    for item in items:
        out.append((encode_slice(item) if isinstance(item, Slice) else encode_mark(item)).encode())
    return out, items


def check_outcome(path: Path, skip_bad: bool) -> tuple[Slice | Mark, ...] | None:
    """Read; the only acceptable failure is a one-line RecordingError with file:line."""
    try:
        rec = read_recording(path, skip_bad=skip_bad)
    except RecordingError as exc:
        msg = str(exc)
        assert "\n" not in msg
        assert re.match(re.escape(str(path)) + r":\d+: ", msg), msg
        assert exc.line is not None and exc.line >= 1
        return None
    assert all(isinstance(i, (Slice, Mark)) for i in rec.items)
    assert all("\n" not in w for w in rec.warnings)
    try:
        scan_recording(path, skip_bad=skip_bad)
    except RecordingError as exc:
        assert "\n" not in str(exc)
    return rec.items


def write(path: Path, data: bytes, gz: bool) -> None:
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)


@SETTINGS
@given(n=st.integers(1, 6), with_mark=st.booleans(), gz=st.booleans(), cut=st.floats(0, 1))
def test_cut_anywhere_reads_a_prefix(tmp_path: Path, n: int, with_mark: bool, gz: bool, cut: float) -> None:
    lines, items = recording_lines(n, with_mark)
    data = b"\n".join(lines) + b"\n"
    full = gzip.compress(data, mtime=0) if gz else data
    path = tmp_path / ("r.jsonl.gz" if gz else "r.jsonl")
    path.write_bytes(full[: int(len(full) * cut)])
    result = check_outcome(path, skip_bad=False)
    if result is not None:
        assert result == tuple(items[: len(result)])


@SETTINGS
@given(
    n=st.integers(1, 5),
    gz=st.booleans(),
    skip_bad=st.booleans(),
    edits=st.lists(st.tuples(st.floats(0, 1), st.binary(min_size=1, max_size=4)), min_size=1, max_size=6),
    compressed_edit=st.booleans(),
)
def test_corrupted_bytes(
    tmp_path: Path,
    n: int,
    gz: bool,
    skip_bad: bool,
    edits: list[tuple[float, bytes]],
    compressed_edit: bool,
) -> None:
    lines, _ = recording_lines(n, True)
    data = bytearray(b"\n".join(lines) + b"\n")
    if gz and compressed_edit:
        data = bytearray(gzip.compress(bytes(data), mtime=0))
    for where, junk in edits:
        i = int(where * (len(data) - 1))
        data[i : i + len(junk)] = junk
    path = tmp_path / ("r.jsonl.gz" if gz else "r.jsonl")
    if gz and compressed_edit:
        path.write_bytes(bytes(data))
    else:
        write(path, bytes(data), gz)
    check_outcome(path, skip_bad)


@SETTINGS
@given(
    n=st.integers(1, 6),
    gz=st.booleans(),
    skip_bad=st.booleans(),
    data=st.data(),
)
def test_reordered_dropped_duplicated_lines(
    tmp_path: Path, n: int, gz: bool, skip_bad: bool, data: st.DataObject
) -> None:
    lines, _ = recording_lines(n, True)
    ops = data.draw(
        st.lists(st.sampled_from(["shuffle", "drop", "dup", "junk", "blank"]), min_size=1, max_size=4)
    )
    for op in ops:
        if not lines:
            break
        i = data.draw(st.integers(0, len(lines) - 1))
        if op == "shuffle":
            lines = data.draw(st.permutations(lines))
        elif op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "junk":
            lines.insert(
                i,
                data.draw(
                    st.sampled_from([b"{}", b"[]", b"null", b'{"schema":7}', b"\xff\xfe", b"[" * 3000])
                ),
            )
        else:
            lines.insert(i, b"   ")
    path = tmp_path / ("r.jsonl.gz" if gz else "r.jsonl")
    write(path, b"\n".join(lines) + b"\n", gz)
    check_outcome(path, skip_bad)


@pytest.mark.parametrize("gz", [False, True])
def test_deep_nesting_is_a_recording_error(tmp_path: Path, gz: bool) -> None:
    lines, _ = recording_lines(2, False)
    lines.insert(1, b"[" * 100000 + b"]" * 100000)
    path = tmp_path / ("r.jsonl.gz" if gz else "r.jsonl")
    write(path, b"\n".join(lines) + b"\n", gz)
    with pytest.raises(RecordingError, match=r":2: not valid JSON"):
        read_recording(path)
