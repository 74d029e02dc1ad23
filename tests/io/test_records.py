"""Recording writer and reader: round trips, damage handling, versions and migrations."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest

from sectormon.data.readings import Mark, Slice
from sectormon.io import (
    RecordingError,
    RecordingWriter,
    open_recording,
    read_recording,
)
from sectormon.io.header_codec import header_to_json
from sectormon.io.jsonl import encode_slice, slice_from_record
from sectormon.io.reader import scan_recording
from tests.files.nodes import FULL, char_device
from tests.io.recording_synth import header, slices, stream, v1_slice_record, write
from tests.rows import readings_of


def lines(path: Path) -> list[str]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode().splitlines()


@pytest.mark.parametrize("name", ["rec.jsonl", "rec.jsonl.gz"])
def test_round_trip_is_exact(tmp_path: Path, name: str) -> None:
    items = stream(30, marks={10: Mark(t=0.2, kind="baseline", label="b", data={"why": "test"})})
    path = write(tmp_path / name, items)
    rec = read_recording(path)
    assert rec.items == tuple(items)
    assert rec.skipped == 0 and rec.warnings == ()
    assert rec.header.schema == "sectormon/recording/2"
    assert rec.header.options.interval == 1.0
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")


def test_decoded_slice_equals_constructed_one() -> None:
    s = next(slices(1))
    decoded = slice_from_record(json.loads(encode_slice(s)))
    assert decoded == s
    with pytest.raises(AttributeError):
        decoded.t = 3.0  # type: ignore[misc]


def test_format_is_plain_json_lines(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", stream(3))
    text = lines(path)
    assert len(text) == 5  # header, 3 slices, end mark
    first, second, last = json.loads(text[0]), json.loads(text[1]), json.loads(text[-1])
    assert first["schema"] == "sectormon/recording/2" and next(iter(first)) == "schema"
    assert list(second) == [
        "schema", "t", "index", "duration", "group", "overhead_s", "ended", "events", "readings",
    ]  # fmt: skip
    assert second["schema"] == "sectormon/slice/2"
    assert second["events"] == [["TASK_CLOCK", "PAGE_FAULTS"]]
    s = next(slices(1))
    r = readings_of(s)[0]
    assert second["readings"][0] == [
        r.unit, r.core, r.cmg, r.group, r.time_enabled, r.time_running, 0, list(r.counts.values()),
    ]  # fmt: skip
    assert last == {"schema": "sectormon/mark/2", "t": 0.06, "kind": "end", "label": "", "data": {}}
    assert " " not in text[1]  # compact separators


def test_writer_stamps_its_own_schema_on_the_header(tmp_path: Path) -> None:
    # Callers may still name an older header schema: the file is this version, so is its header.
    hdr = {"schema": "sectormon/recording/1", **header()}
    path = write(tmp_path / "r.jsonl", [], hdr)
    assert header_to_json(read_recording(path).header) == {**hdr, "schema": "sectormon/recording/2"}
    assert json.loads(lines(path)[0])["schema"] == "sectormon/recording/2"


def test_scan_gives_timeline_without_decoding(tmp_path: Path) -> None:
    items = stream(50, marks={20: Mark(t=0.4, kind="bookmark", label="phase 2")})
    path = write(tmp_path / "r.jsonl.gz", items)
    scan = scan_recording(path)
    assert scan.slices == 50
    assert scan.first_t == pytest.approx(0.02)
    assert scan.end_t == pytest.approx(1.0)
    assert [m.kind for m in scan.marks] == ["bookmark", "end"]


# ------------------------------------------------------------------------------------- damage


def test_truncated_last_line_is_skipped_with_warning(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", stream(5, end=False))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    rec = read_recording(path)
    assert len(rec.slices) == 4
    assert rec.skipped == 1
    assert len(rec.warnings) == 1 and ":6: last line is incomplete" in rec.warnings[0]


def test_a_whole_garbage_last_line_is_a_bad_line_not_a_cut(tmp_path: Path) -> None:
    """A writer cut mid-line leaves no newline; a complete line of garbage at the end is damage
    like anywhere else."""
    path = write(tmp_path / "r.jsonl", stream(3, end=False))
    with path.open("ab") as f:
        f.write(b'{"schema":"sectormon/sli\n')
    with pytest.raises(RecordingError, match=r"r\.jsonl:5: not valid JSON .*\(use --skip-bad"):
        read_recording(path)
    rec = read_recording(path, skip_bad=True)
    assert len(rec.slices) == 3 and rec.skipped == 1
    assert not any("incomplete" in w for w in rec.warnings)


def test_gzip_cut_midway_reads_to_last_whole_line(tmp_path: Path) -> None:
    items = stream(40, end=False)
    path = write(tmp_path / "r.jsonl.gz", items)
    data = path.read_bytes()
    for cut in (len(data) // 3, len(data) // 2, len(data) - 9):
        path.write_bytes(data[:cut])
        rec = read_recording(path)
        assert rec.items == tuple(items[: len(rec.items)])
        assert any("gzip stream ends early" in w for w in rec.warnings)


def test_bad_line_in_middle_names_line(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", stream(5))
    text = lines(path)
    text[3] = "#garbage#" + text[3]
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(RecordingError) as err:
        read_recording(path)
    msg = str(err.value)
    assert f"{path}:4: not valid JSON" in msg and "\n" not in msg and "--skip-bad" in msg
    rec = read_recording(path, skip_bad=True)
    assert rec.skipped == 1 and len(rec.slices) == 4


def test_bad_record_fields_name_line(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", stream(3))
    text = lines(path)
    rec = json.loads(text[2])
    rec["readings"][1][7][0] = -5
    text[2] = json.dumps(rec)
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(RecordingError, match=r":3: reading 1: counts must be non-negative integers, got -5"):
        read_recording(path)


def test_bad_v1_record_fields_name_line(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", stream(3))
    text = lines(path)
    rec = v1_slice_record(next(slices(2, seed=1)))
    rec["readings"][1]["counts"]["TASK_CLOCK"] = -5
    text.insert(1, json.dumps(rec))
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(RecordingError, match=r":2: reading 1: counts must be non-negative integers"):
        read_recording(path)


def test_slice_going_back_in_time_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", stream(4, end=False))
    text = lines(path)
    text[2], text[3] = text[3], text[2]
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(RecordingError, match=r":4: slice t=0.04 goes back in time from t=0.06"):
        read_recording(path)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", ":1: empty file"),
        (b"\n\n", ":1: empty file"),
        (b"hello world\nmore\n", ":1: not a sectormon recording: first line is not JSON"),
        (
            b'{"schema":"sectormon/slice/1","t":1}\n{}\n',
            ":1: not a sectormon recording: first record is a 'slice'",
        ),
        (b'{"schema":"sectormon/recor', ":1: the header line is incomplete"),
        # One line that does not even start like JSON is not a cut recording.
        (b"\x00\x01binary", ":1: not a sectormon recording: first line is not JSON"),
        (b"hello", ":1: not a sectormon recording: first line is not JSON"),
        (
            b'{"schema":"sectormon/header/1","sectormon":"0.1.0"}\n{"schema":"sectormon/frame/1"}\n',
            ":1: this is a --json frame stream (computed frames), not a recording of raw readings "
            "(record with --record FILE",
        ),
        (b'{"schema":"sectormon/frame/1","t":1}\n', ":1: this is a --json frame stream"),
        (b'{"a": 1}\n', ":1: record has no 'schema' string"),
        (b"[1, 2]\n{}\n", ":1: not a sectormon recording: first record is not an object"),
    ],
)
def test_not_a_recording(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    with pytest.raises(RecordingError) as err:
        open_recording(path)
    assert problem in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="cannot read the recording"):
        read_recording(tmp_path / "nope.jsonl")


def test_corrupt_gzip_data_in_middle(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl.gz", stream(200, end=False))
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 64):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    with pytest.raises(RecordingError) as err:
        read_recording(path)
    assert "\n" not in str(err.value) and str(path) + ":" in str(err.value)
    rec = read_recording(path, skip_bad=True)
    assert rec.skipped >= 1 and 0 < len(rec.slices) < 200


def test_concatenated_gzip_members_are_one_recording(tmp_path: Path) -> None:
    items = stream(6, end=False)
    path = write(tmp_path / "r.jsonl.gz", items[:3])
    extra = "".join(encode_slice(s) + "\n" for s in items[3:] if isinstance(s, Slice)).encode()
    with path.open("ab") as f:
        f.write(gzip.compress(extra))
    assert read_recording(path).items == tuple(items)


def test_unknown_mark_kind_is_ignored_with_one_warning(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", [Mark(t=0.0, kind="future"), *stream(2), Mark(t=1.0, kind="future")])
    rec = read_recording(path)
    assert [m.kind for m in rec.marks] == ["end"]
    assert len(rec.warnings) == 1 and "unknown mark kind 'future'" in rec.warnings[0]


def test_a_warning_the_session_recorded_is_said_again_with_its_line(tmp_path: Path) -> None:
    """A ``warning`` mark (a thread left uncounted, ...) is a warning of every reading, with the
    line it is on and the time the session gave it; it is not an item (nothing else uses it)."""
    said = "thread 7 is not counted (EMFILE)"
    path = write(tmp_path / "r.jsonl", stream(4, marks={2: Mark(t=0.125, kind="warning", label=said)}))
    rec = read_recording(path)
    assert [m.kind for m in rec.marks] == ["end"]
    assert rec.warnings == (f"{path}:4: the live session warned at t=0.125 s: {said}",)
    assert scan_recording(path).warnings == rec.warnings  # the TUI's scan says it as well


# ----------------------------------------------------------------------------- versions, migrations


def test_newer_version_is_refused_with_supported_version(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    path.write_text(json.dumps({"schema": "sectormon/recording/3"}) + "\n")
    with pytest.raises(RecordingError) as err:
        open_recording(path)
    msg = str(err.value)
    assert f"{path}:1:" in msg and "sectormon/recording/3" in msg and "(sectormon/recording/2)" in msg
    assert "upgrade sectormon" in msg


def test_newer_record_in_middle_is_refused_even_with_skip_bad(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", stream(2, end=False))
    with path.open("a") as f:
        f.write(json.dumps({"schema": "sectormon/slice/7", "t": 9}) + "\n")
        f.write(encode_slice(next(slices(1))) + "\n")
    with pytest.raises(RecordingError, match=r":4: record version sectormon/slice/7 is newer"):
        read_recording(path, skip_bad=True)


def test_unknown_record_kind(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", stream(1, end=False))
    with path.open("a") as f:
        f.write(json.dumps({"schema": "sectormon/annotation/2"}) + "\n{}\n")
    with pytest.raises(RecordingError, match=r":3: unknown record kind 'annotation'"):
        read_recording(path)


def test_a_version_older_than_any_migration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps({"schema": "sectormon/recording/0", **header()}) + "\n")
    with pytest.raises(RecordingError, match=r":1: format version 0 is too old: this sectormon reads"):
        open_recording(path)


# ------------------------------------------------------------------------------------ writer errors


def test_unwritable_path_fails_once_and_goes_on(tmp_path: Path) -> None:
    errors: list[str] = []
    w = RecordingWriter(tmp_path / "no" / "such" / "dir.jsonl", header(), on_error=errors.append)
    assert w.failed is not None and "cannot write recording" in w.failed and "No such file" in w.failed
    for s in slices(3):
        w.write_slice(s)
    w.write_mark(Mark(t=1, kind="end"))
    w.close()
    assert errors == [w.failed]


@pytest.mark.parametrize("gz", [False, True])
def test_disk_full_stops_recording_with_one_error(gz: bool, tmp_path: Path) -> None:
    errors: list[str] = []
    # a full device of the test's own (the machine's /dev/full is never an output path here)
    full = char_device(tmp_path / ("full.jsonl.gz" if gz else "full.jsonl"), FULL)
    w = RecordingWriter(full, header(), on_error=errors.append)
    for s in slices(5):
        w.write_slice(s)
    w.close()
    assert w.failed is not None and "No space left on device" in w.failed
    assert "No space left on device" in w.failed  # the session adds "monitoring goes on"
    assert errors == [w.failed]


def test_unrecordable_value_stops_with_one_error(tmp_path: Path) -> None:
    errors: list[str] = []
    w = RecordingWriter(tmp_path / "r.jsonl", header(), on_error=errors.append)
    w.write_slice(Slice(t=float("nan"), index=0, duration=0.02, group="SW1", rows=()))
    w.write_slice(next(slices(1)))
    w.close()
    assert len(errors) == 1 and "slice 0 is not recordable" in errors[0]
    assert len(lines(tmp_path / "r.jsonl")) == 1


def test_close_is_idempotent_and_writes_after_close_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl.gz"
    w = RecordingWriter(path, header())
    w.close()
    w.close()
    w.write_slice(next(slices(1)))
    assert w.closed and w.failed is None
    assert len(read_recording(path).items) == 0
    zlib.decompress(path.read_bytes(), 31)  # a complete gzip stream
