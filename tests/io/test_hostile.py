"""Hostile recordings found by the fault suite (issues 28 and 34): each one ends in one line
naming the file and the line (exit 2), or plays with a warning, and never in a traceback, a hang
or unbounded memory.

The recordings are made by the simulator (``sectormon sim --json --count N --record``) or the
synthetic helpers, then damaged in one place; every case runs the CLI in this process.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sectormon import cli
from sectormon.data.readings import Mark
from sectormon.io import reader as reader_module
from sectormon.io.bookmarks import BookmarkFile, bookmarks_path
from sectormon.io.jsonl import BadRecord, parse_schema
from sectormon.io.reader import open_recording
from sectormon.io.samples import samples_from_record
from sectormon.io.strict_json import MAX_DEPTH, TooDeep, check_depth, decode_limited
from sectormon.session import replay_worker
from sectormon.session.replay import Pacer, replay_frames
from tests.e2e.helpers import run_sectormon, sectormon_command
from tests.io.recording_synth import header, stream
from tests.session.test_replay import real_header, write


def run(*args: str) -> tuple[int, str, str]:
    """``sectormon ARGS`` in this process: exit code, stdout, stderr (an exception escaping is
    the traceback the command would print, and fails the test)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


def one_error(code: int, err: str, where: str) -> str:
    """The single error line of a refused input, which names ``where`` (file:line)."""
    assert code == 2, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if not line.startswith("sectormon: warning:")]
    assert len(errors) == 1, err
    assert errors[0].startswith(f"sectormon: {where}"), err
    return errors[0]


@pytest.fixture(scope="module")
def sim_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """A simulator recording (header, 60-odd slices, marks) as its lines."""
    path = tmp_path_factory.mktemp("sim") / "sim.jsonl"
    code, _out, err = run("sim", "--json", "--count", "3", "--record", str(path))
    assert code == 0, err
    return path.read_bytes().splitlines()


def save(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def edited(line: bytes, **changes: Any) -> bytes:
    record = json.loads(line)
    record.update(changes)
    return json.dumps(record, separators=(",", ":")).encode()


def first_slice(lines: list[bytes]) -> int:
    return next(i for i, line in enumerate(lines) if b'"sectormon/slice/2"' in line)


# ------------------------------------------------------------------------------- nesting and numbers


def test_a_header_value_nested_thousands_deep_is_one_line_at_line_1(
    sim_lines: list[bytes], tmp_path: Path
) -> None:
    deep = b"[" * 5000 + b"]" * 5000
    lines = [sim_lines[0].replace(b'"wall_t0":null', b'"wall_t0":' + deep), *sim_lines[1:]]
    path = save(tmp_path / "deep.jsonl", lines)
    code, out, err = run("replay", "--json", str(path))
    assert "too deeply" in one_error(code, err, f"{path}:1:")
    assert out == ""


def test_a_header_nested_below_the_recursion_limit_but_past_the_depth_limit_is_refused(
    sim_lines: list[bytes], tmp_path: Path
) -> None:
    deep = b'{"a":' * 200 + b"1" + b"}" * 200
    lines = [sim_lines[0].replace(b'"wall_t0":null', b'"wall_t0":null,"deep":' + deep), *sim_lines[1:]]
    path = save(tmp_path / "deep.jsonl", lines)
    code, _out, err = run("replay", "--json", str(path))
    assert f"nested more than {MAX_DEPTH} levels" in one_error(code, err, f"{path}:1:")


def test_a_slice_nested_thousands_deep_is_an_error_at_its_line_and_skipped_with_skip_bad(
    sim_lines: list[bytes], tmp_path: Path
) -> None:
    i = first_slice(sim_lines)
    lines = list(sim_lines)
    lines[i] = lines[i].replace(b'"ended":[]', b'"ended":' + b"[" * 5000 + b"]" * 5000)
    path = save(tmp_path / "deep.jsonl", lines)
    code, _out, err = run("replay", "--json", str(path))
    one_error(code, err, f"{path}:{i + 1}:")
    code, out, err = run("replay", "--json", "--skip-bad", str(path))
    assert code == 0, err
    assert "skipped 1 line(s)" in err
    assert out.count("\n") > 2


def test_decode_limited_and_check_depth() -> None:
    with pytest.raises(TooDeep):
        decode_limited("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="not a JSON number"):
        decode_limited("[NaN]")
    check_depth([[1]], limit=2)
    with pytest.raises(TooDeep):
        check_depth([[[1]]], limit=2)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12))
@example("²")
@example("２")
def test_a_schema_version_parses_only_as_ascii_digits(version: str) -> None:
    try:
        kind, number = parse_schema(f"sectormon/slice/{version}")
    except BadRecord:
        assert not (version.isascii() and version.isdigit() and len(version) <= 9)
        return
    assert (kind, str(number).zfill(len(version))) == ("slice", version)


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.integers() | st.text(max_size=3), lambda inner: st.lists(inner, max_size=2), max_leaves=20
    ),
    st.integers(0, 3000),
)
def test_decoding_any_nesting_gives_the_value_or_a_value_error(inner: Any, depth: int) -> None:
    text = "[" * depth + json.dumps(inner) + "]" * depth
    try:
        value = decode_limited(text)
    except TooDeep:
        return
    for _ in range(depth):
        value = value[0]
    assert value == inner


@pytest.mark.parametrize("version", ["²", "２", "٣", "2 ", "0x2", "9999999999"])
def test_schema_versions_are_ascii_digits_only(version: str) -> None:
    with pytest.raises(BadRecord, match="ASCII digits"):
        parse_schema(f"sectormon/slice/{version}")


@pytest.mark.parametrize("version", ["²", "２"])
def test_a_unicode_digit_schema_version_is_an_error_at_its_line(
    version: str, sim_lines: list[bytes], tmp_path: Path
) -> None:
    i = first_slice(sim_lines)
    lines = list(sim_lines)
    lines[i] = lines[i].replace(b"sectormon/slice/2", f"sectormon/slice/{version}".encode())
    path = save(tmp_path / "schema.jsonl", lines)
    code, _out, err = run("replay", "--json", str(path))
    assert "ASCII digits" in one_error(code, err, f"{path}:{i + 1}:")


@pytest.mark.parametrize(
    ("field", "value"),
    [("recording_started", 10**400), ("wall_t0", 10**400), ("wall_t0", -1), ("wall_t0", "x")],
)
def test_header_numbers_out_of_range_name_the_field(
    field: str, value: Any, sim_lines: list[bytes], tmp_path: Path
) -> None:
    path = save(tmp_path / "big.jsonl", [edited(sim_lines[0], **{field: value}), *sim_lines[1:]])
    for command in (("replay", "--json"), ("compare", "--json")):
        args = (*command, str(path)) if command[0] == "replay" else (*command, str(path), str(path))
        code, _out, err = run(*args)
        assert f"header field {field!r}" in one_error(code, err, f"{path}:1:")


def test_a_400_digit_number_in_the_recorded_profile_is_one_line(
    sim_lines: list[bytes], tmp_path: Path
) -> None:
    """Found by the generator (case 2587): ``float(10**400)`` in the profile's rebuild."""
    header = json.loads(sim_lines[0])
    event = next(iter(header["profile"]["events"].values()))
    event["nj_per_count"] = 10**400
    path = save(tmp_path / "profile.jsonl", [json.dumps(header).encode(), *sim_lines[1:]])
    code, _out, err = run("replay", "--json", str(path))
    assert "bad profile in header" in one_error(code, err, str(path))


def test_a_400_digit_slice_time_is_an_error_at_its_line(sim_lines: list[bytes], tmp_path: Path) -> None:
    i = first_slice(sim_lines)
    lines = list(sim_lines)
    lines[i] = edited(lines[i], t=10**400)
    path = save(tmp_path / "t.jsonl", lines)
    code, _out, err = run("replay", "--json", str(path))
    assert "'t' must be a finite number" in one_error(code, err, f"{path}:{i + 1}:")


def test_a_slice_longer_than_its_time_is_an_error(sim_lines: list[bytes], tmp_path: Path) -> None:
    slices = [n for n, line in enumerate(sim_lines) if b'"sectormon/slice/2"' in line]
    i = slices[3]  # the fourth slice (a sim recording has regions records between them)
    lines = list(sim_lines)
    lines[i] = edited(lines[i], duration=1000.0)
    path = save(tmp_path / "duration.jsonl", lines)
    code, _out, err = run("replay", "--json", str(path))
    assert "'duration' (1000 s) is longer than its 't'" in one_error(code, err, f"{path}:{i + 1}:")


def _samples(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "schema": "sectormon/samples/2",
        "t": 1.0,
        "lost": 0,
        "counted": 10,
        "multiplexed": False,
        "code": [["main", "prog", None]],
        "data": [],
        "samples": [[1000, 7, 0, 1, None, 0, None, 4096]],
    }
    record.update(changes)
    return record


@pytest.mark.parametrize(
    "changes",
    [
        {"samples": [[1000, 7, 0, 1, None, 0, None, 2**64]]},
        {"samples": [[-1, 7, 0, 1, None, 0, None, 4096]]},
        {"samples": [[1000, 7, 0, 2**64, None, 0, None, 4096]]},
        {"lost": 2**64},
        {"counted": 2**64},
    ],
)
def test_sample_fields_beyond_u64_or_negative_are_refused(changes: dict[str, Any]) -> None:
    samples_from_record(_samples())
    with pytest.raises(BadRecord):
        samples_from_record(_samples(**changes))


# ------------------------------------------------------------------------------------------ gzip


def _corrupting_flip(data: bytes, data_start: Callable[[bytes], bool]) -> int:
    """A byte of the deflate stream whose flipped low bit makes zlib fail (in the data, or at the
    CRC after it) after at least three whole lines were decompressed as they were written
    (``data_start`` tells)."""
    for at in range(len(data) // 2, len(data) - 8):
        damaged = bytearray(data)
        damaged[at] ^= 1
        d = zlib.decompressobj(31)
        prefix = b""
        try:
            for i in range(0, len(damaged), 256):
                prefix += d.decompress(bytes(damaged[i : i + 256]))
        except zlib.error:
            whole = prefix[: prefix.rfind(b"\n") + 1]
            if whole.count(b"\n") >= 3 and data_start(whole):
                return at
    raise AssertionError("no flip damages this stream")


def test_a_flipped_bit_in_a_gzip_is_one_line_naming_the_byte_and_skip_bad_keeps_the_prefix(
    sim_lines: list[bytes], tmp_path: Path
) -> None:
    plain = write(tmp_path / "plain.jsonl", stream(300), real_header()).read_bytes()
    data = gzip.compress(plain, mtime=0)
    at = _corrupting_flip(data, plain.startswith)
    damaged = bytearray(data)
    damaged[at] ^= 1
    path = tmp_path / "flip.jsonl.gz"
    path.write_bytes(bytes(damaged))
    code, _out, err = run("replay", "--json", str(path))
    line = one_error(code, err, f"{path}:")
    assert "compressed data is corrupt near byte" in line
    near = int(line.split("near byte ")[1].split(" ")[0].replace(",", ""))
    assert near <= at < near + 256
    code, out, err = run("replay", "--json", "--skip-bad", str(path))
    assert code == 0, err
    assert "the rest of the file was skipped" in err
    assert out.count("\n") >= 2  # the header and frames from the readable prefix
    for command in (
        ("compare", str(path), str(path)),
        ("merge", "-o", str(tmp_path / "j.jsonl"), str(path), str(path)),
    ):
        code, _out, err = run(*command)
        assert code == 2 and "Traceback" not in err and "near byte" in err, err


def test_is_job_file_survives_a_corrupt_gzip(tmp_path: Path) -> None:
    from sectormon.job.jobfile import is_job_file

    path = tmp_path / "x.jsonl.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 64)
    assert not is_job_file(path)


# ------------------------------------------------------------------------------------- long lines


def test_an_overlong_line_is_an_error_naming_it_and_skip_bad_skips_it_without_holding_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hdr = real_header()
    cap = len(json.dumps(hdr)) + 1000
    monkeypatch.setattr(reader_module, "MAX_LINE", cap)
    monkeypatch.setattr(reader_module, "CHUNK", 1000)  # the long line spans chunks
    items = stream(6, marks={3: Mark(t=0.05, kind="note", label="x" * 3 * cap)})
    path = write(tmp_path / "long.jsonl", items, hdr)
    lines = path.read_bytes().splitlines()
    long_at = next(i for i, line in enumerate(lines) if len(line) > cap) + 1
    code, _out, err = run("replay", "--json", str(path))
    assert f"longer than {cap:,} bytes" in one_error(code, err, f"{path}:{long_at}:")
    with open_recording(path, skip_bad=True) as rec:
        kinds = [getattr(item, "kind", "slice") for item in rec]
    assert "note" not in kinds and kinds.count("slice") == 6 and kinds[-1] == "end"
    assert rec.skipped == 1
    assert any(f":{long_at}: line longer than" in w for w in rec.warnings)


@pytest.mark.slow
def test_a_1gb_line_in_a_small_gzip_ends_at_its_line_under_200mb(
    sim_lines: list[bytes], tmp_path: Path
) -> None:
    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(sim_lines[0] + b"\n" + sim_lines[1] + b"\n")
        f.write(b'{"schema":"sectormon/mark/2","t":0.1,"kind":"note","label":"')
        block = b"a" * (1 << 24)
        for _ in range(64):  # 1 GiB
            f.write(block)
        f.write(b'"}\n')
    assert path.stat().st_size < 8 << 20
    for command in (["replay", "--json"], ["merge", "-o", str(tmp_path / "j.jsonl")]):
        args = [*command, str(path)] + ([str(path)] if command[0] == "merge" else [])
        code, err, peak_kib = _peak_rss(sectormon_command(), *args)
        assert code == 2, err
        assert (
            err.strip()
            == f"sectormon: {path}:3: line longer than 67,108,864 bytes (use --skip-bad to skip it)"
        )
        assert peak_kib < 200 * 1024, f"{command[0]}: peak RSS {peak_kib} KiB"


def _peak_rss(*command: str) -> tuple[int, str, int]:
    """Run ``command``: its exit code, stderr and peak resident memory (KiB), measured by a
    parent of its own (this process's children include other tests' commands)."""
    probe = (
        "import resource, subprocess, sys; "
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
        "sys.exit(done.returncode)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *command], capture_output=True, text=True, timeout=180
    )
    *lines, peak = done.stderr.splitlines()
    return done.returncode, "\n".join(lines) + "\n", int(peak)


# ----------------------------------------------------------------------------------------- pacing


def test_a_paced_replay_does_not_wait_through_a_jump_to_1e9_seconds(tmp_path: Path) -> None:
    items = stream(12)
    far = [s if i < 6 else _moved(s, 9.99e8) for i, s in enumerate(items)]
    path = write(tmp_path / "jump.jsonl", far, real_header())
    slept: list[float] = []
    now = [0.0]

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    with open_recording(path) as rec:
        frames = list(replay_frames(rec, speed=1.0, sleep=sleep, clock=lambda: now[0]))
    assert frames[-1].final
    assert sum(slept) < 2.0, slept  # 12 slices of 20 ms, not 31 years


def _moved(item: Any, dt: float) -> Any:
    import dataclasses

    return dataclasses.replace(item, t=item.t + dt)


def test_the_pacer_waits_within_an_interval_and_skips_a_hole() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    pacer = Pacer(2.0, sleep, lambda: now[0], hole=1.0)
    for t in (0.0, 0.5, 1.0, 1e8, 1e8 + 0.5):
        pacer.wait(t)
    assert slept == [0.25, 0.25, 0.25]


@pytest.mark.slow
def test_headless_openmetrics_replay_of_a_slice_at_1e9_ends(sim_lines: list[bytes], tmp_path: Path) -> None:
    lines = list(sim_lines)
    for i, line in enumerate(lines):
        record = json.loads(line)
        if i > len(lines) // 2 and record["schema"] in ("sectormon/slice/2", "sectormon/mark/2"):
            lines[i] = edited(line, t=9.99e8 + i * 1e-5)
    path = save(tmp_path / "jump.jsonl", lines)
    done = run_sectormon(
        "replay", "--headless", "--openmetrics", "127.0.0.1:0", "--speed", "1000", str(path), timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


# -------------------------------------------------------------------------------- bookmarks, env


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder"])
def test_a_bookmarks_file_that_is_not_a_regular_file_is_a_warning_not_a_hang(
    kind: str, sim_lines: list[bytes], tmp_path: Path
) -> None:
    path = save(tmp_path / "rec.jsonl", sim_lines)
    marks = bookmarks_path(path)
    if kind == "fifo":
        os.mkfifo(marks)
    elif kind == "zero":
        marks.symlink_to("/dev/zero")
    else:
        marks.mkdir()
    book = BookmarkFile(path)
    assert book.marks == []
    assert len(book.warnings) == 1 and "not shown" in book.warnings[0], book.warnings
    if kind == "fifo":
        with pytest.raises(Exception, match="kept for this replay only"):
            book.add(Mark(t=1.0, kind="bookmark", label="x"))


def test_a_bookmarks_file_with_an_endless_line_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    bookmarks_path(path).write_bytes(b"x" * (1 << 20))
    book = BookmarkFile(path)
    assert book.marks == [] and "longer than" in book.warnings[0]


@pytest.mark.parametrize("value", ["1000", "²", "9" * 50])
def test_replay_worker_count_is_bounded(value: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", stream(4), header())
    monkeypatch.setenv(replay_worker.ENV_SWITCH, value)
    with open_recording(path) as rec, pytest.raises(Exception, match=f"at most {replay_worker.MAX_READERS}"):
        replay_worker.readers(rec)
    monkeypatch.setenv(replay_worker.ENV_SWITCH, str(replay_worker.MAX_READERS))
    with open_recording(path) as rec:
        assert replay_worker.readers(rec) in (0, 1, replay_worker.MAX_READERS)


def test_a_recording_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "rec.jsonl"
    os.mkfifo(fifo)
    code, _out, err = run("replay", "--json", str(fifo))
    assert "named pipe" in one_error(code, err, str(fifo))
