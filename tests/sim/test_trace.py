"""Dinero din traces: parsing, grouping into records, and one-line errors naming file and line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon.errors import DataError
from sectormon.sim.stream import FL_IFETCH, FL_PFE, FL_SCE, FL_WRITE
from sectormon.sim.trace import parse_line, records, validate


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "trace.din"
    path.write_text(text)
    return str(path)


def test_parse_forms() -> None:
    assert parse_line("0 7fff5a10", "t", 1) == (0, 0x7FFF5A10, None)
    assert parse_line("1 0x10", "t", 1) == (1, 0x10, None)
    assert parse_line("  2 ABCDEF  ", "t", 1) == (2, 0xABCDEF, None)
    assert parse_line("0 100 3", "t", 1) == (0, 0x100, 3)
    assert parse_line("", "t", 1) is None
    assert parse_line("# comment", "t", 1) is None


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("5 1000", "unknown din label '5'"),
        ("3 1000", "unknown din label '3'"),
        ("0 xyz", "not hexadecimal"),
        ("0 0x", "not hexadecimal"),
        ("0", "got 1 fields"),
        ("0 10 2 9", "got 4 fields"),
        ("0 10 4", "sector '4' is not 0, 1, 2 or 3"),
        ("0 -10", "not hexadecimal"),
        ("0 1_0", "not hexadecimal"),
        ("0 +10", "not hexadecimal"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path: Path, line: str, problem: str) -> None:
    path = _write(tmp_path, f"0 100\n# ok\n\n{line}\n1 200\n")
    with pytest.raises(DataError) as info:
        validate(path)
    assert info.value.line == 4
    assert str(info.value).startswith(f"{path}:4: ")
    assert problem in str(info.value)
    assert "(" in str(info.value)  # a fix is offered


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"cannot read the trace \(No such file"):
        validate(str(tmp_path / "nope.din"))
    with pytest.raises(DataError, match="no data accesses"):
        validate(_write(tmp_path, "2 400\n# only instructions\n"))
    binary = tmp_path / "bin.din"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(DataError, match=r"bin\.din:1: not a text line"):
        validate(str(binary))


def test_validate_counts(tmp_path: Path) -> None:
    info = validate(_write(tmp_path, "0 100\n1 200 1\n2 300\n0 400 2\n"))
    assert (info.reads, info.writes, info.ifetches, info.tagged) == (2, 1, 1, 2)


def test_records_group_consecutive_accesses_to_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "0 100\n0 108\n1 1f0\n2 0\n0 200\n0 100 1\n0 108 1\n")
    recs = list(records(path, tag_override=True, pfe=True))
    tagged1 = (1 << 1) | FL_SCE | FL_PFE
    assert recs == [
        (1, 3, FL_WRITE),  # lines 0x100-0x1ff: read, read, write grouped, the write marks it dirty
        (-2, 0, FL_IFETCH),  # one instruction fetch
        (2, 1, 0),
        (1, 2, tagged1),  # same line again but another sector tag: a new record
    ]


def test_sector_field_ignored_without_tag_override(tmp_path: Path) -> None:
    path = _write(tmp_path, "0 100 3\n0 400 2\n")
    assert list(records(path, tag_override=False, pfe=True)) == [(1, 1, 0), (4, 1, 0)]


@settings(max_examples=100, deadline=None)
@given(
    label=st.sampled_from(["0", "1", "2"]),
    address=st.integers(0, (1 << 64) - 1),
    prefix=st.sampled_from(["", "0x", "0X"]),
    upper=st.booleans(),
    sector=st.one_of(st.none(), st.integers(0, 3)),
)
def test_any_valid_line_parses(
    label: str, address: int, prefix: str, upper: bool, sector: int | None
) -> None:
    digits = f"{address:X}" if upper else f"{address:x}"
    text = f"{label} {prefix}{digits}" + ("" if sector is None else f" {sector}")
    assert parse_line(text, "t", 7) == (int(label), address, sector)


@settings(max_examples=100, deadline=None)
@given(
    junk=st.text(alphabet="0123456789abcdefxyz -#\t", min_size=1, max_size=20), line=st.integers(1, 10_000)
)
def test_junk_parses_or_fails_with_its_line_number(junk: str, line: int) -> None:
    try:
        parse_line(junk, "f.din", line)
    except DataError as exc:
        assert exc.line == line
        assert str(exc).startswith(f"f.din:{line}: ")
