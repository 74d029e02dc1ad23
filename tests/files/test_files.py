"""The shared input rules: regular files only, capped lines, printable text."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.errors import DataError
from sectormon.files.lines import bounded_lines
from sectormon.files.regular import open_input
from sectormon.files.text import is_ascii_digits, printable


def test_a_regular_file_opens_and_reads(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"a\nb\n")
    with open_input(str(path)) as handle:
        assert handle.read() == b"a\nb\n"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_character_device_is_refused_in_one_line(device: str) -> None:
    with pytest.raises(DataError, match="is a character device"):
        open_input(device, "trace")


def test_a_fifo_without_a_writer_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match="is a named pipe"):
        open_input(str(fifo))


def test_a_fifo_is_read_where_a_stream_is_allowed(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with open_input(str(fifo), allow_pipe=True) as handle:
        assert handle.read() == b""  # no writer: end of stream at once, never a hang


def test_a_folder_and_a_long_name_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="is a folder"):
        open_input(str(tmp_path))
    with pytest.raises(DataError, match="name is too long"):
        open_input(str(tmp_path / ("x" * 300)))


def test_a_line_over_the_cap_names_its_line() -> None:
    stream = io.BytesIO(b"ok\n" + b"x" * 100 + b"\n")
    lines = bounded_lines(stream, "t.din", cap=50)
    assert next(lines) == (1, b"ok\n")
    with pytest.raises(DataError, match=r"t\.din:2: line longer than 50 bytes"):
        next(lines)


def test_an_endless_line_stops_at_the_cap() -> None:
    with open("/dev/zero", "rb") as zero, pytest.raises(DataError, match="line longer"):
        list(bounded_lines(zero, "/dev/zero", cap=4096))


def test_control_characters_are_escaped_and_ordinary_text_kept() -> None:
    assert printable("naïve 計算 µs") == "naïve 計算 µs"
    escaped = "a\\x1b]0;title\\x07b\\x0d\\x0asectormon: fake"
    assert printable("a\x1b]0;title\x07b\r\nsectormon: fake") == escaped
    assert printable("\ud800") == "\\ud800"


@given(st.text())
def test_printable_text_has_no_control_characters(text: str) -> None:
    assert printable(text).isprintable()


def test_ascii_digits_only() -> None:
    assert is_ascii_digits("123")
    for text in ("", "²", "２", "1²", "-1", " 1"):
        assert not is_ascii_digits(text)


def test_a_name_the_system_cannot_look_up_is_one_line(tmp_path: Path) -> None:
    from sectormon.files.regular import check_name

    check_name(str(tmp_path / "missing"))  # absent is the caller's to word
    with pytest.raises(DataError, match="name is too long"):
        check_name("x" * 300, "recording")
    with pytest.raises(DataError, match="NUL byte"):
        check_name("a\0b")


@pytest.mark.parametrize("sides", [("LONG", "LONG"), ("LONG,LONG", "other.jsonl")])
def test_compare_of_over_long_names_is_one_line(
    sides: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    from sectormon.cli import main

    long = "x" * 300
    assert main(["compare", *(side.replace("LONG", long) for side in sides)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "name is too long" in err[0], err
