"""The cpupa CSV reader: real files, synthetic edge cases, and fuzzing (only DataError, naming the line)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sectormon.cli import main
from sectormon.errors import DataError
from sectormon.fapp.csvread import parse_cpupa
from sectormon.fapp.measurement import read_export, read_measurement

HEADER = "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR," + (
    "0x0011,0x0008,-"
)


def row(
    thread: int, cntvct: int = 1000, cycles: int = 22000, a: int = 5, b: int = 7, region: str = "k"
) -> str:
    return f"FAPP-cpupa,Thread,0,0,{thread},{region},0,1,{cntvct},{cycles},{a},{b},0"


def small_csv(threads: int = 3) -> str:
    return "\n".join([HEADER, *(row(t, a=10 + t) for t in range(threads))]) + "\n"


def test_reads_real_pa1(fapp_dir: Path) -> None:
    s = read_export(fapp_dir / "axhelm2.29503716.0" / "pa1.csv")
    assert s.name == "pa1"
    assert s.codes == (0x80C0, 0x80C1, 0x17, 0x18, 0x325, 0x326, 0x121, 0x8000)
    assert s.threads() == tuple(range(12))
    first = s.rows[0]
    assert (first.cntvct, first.pmccntr) == (1331200192, 29286200238)
    assert first.counts[0x121] == 26110116492
    assert first.line == 2


def test_unused_columns_are_dropped(fapp_dir: Path) -> None:
    s = read_export(fapp_dir / "axhelm2.29503716.0" / "pa12.csv")
    assert s.codes == (0x8008, 0x198, 0x199, 0x139, 0x10, 0x12)


def test_measurement_reads_all_sets_and_info(fapp_dir: Path) -> None:
    m = read_measurement(fapp_dir / "dtrn3.29503716.1")
    assert list(m.sets) == [f"pa{i}" for i in range(1, 18)]
    assert m.cntfrq_hz == 100_000_000
    assert m.vector_length_bits == 512
    assert m.threads == tuple(range(12))
    assert m.warnings == ()
    assert m.value("pa6", 0x180, 3) is not None
    assert m.value("pa6", 0x4, 3) is None


def test_other_record_types_are_skipped_and_fapp_info_gives_cntfrq(tmp_path: Path) -> None:
    text = "\n".join(
        [
            "FAPP-info,Profiler version,4.2",
            "FAPP-info,Timer clock frequency,50000000",
            "FAPP-info,Vector length,256",
            "FAPP-core,whatever,1,2,3",
            HEADER,
            row(0),
            "FAPP-cpupa,Process,0,0,0,k,0,1,1000,22000,5,7,0",
            row(1),
        ]
    )
    (tmp_path / "sc1.csv").write_text(text)
    m = read_measurement(tmp_path)
    assert list(m.sets) == ["sc1"]
    assert m.cntfrq_hz == 50_000_000
    assert m.vector_length_bits == 256
    assert m.threads == (0, 1)
    assert m.warnings == ()


def test_default_cntfrq_warns(tmp_path: Path) -> None:
    (tmp_path / "pa1.csv").write_text(small_csv())
    m = read_measurement(tmp_path)
    assert m.cntfrq_hz == 100_000_000
    assert any("CNTFRQ" in w for w in m.warnings)


def test_info_json_wins(tmp_path: Path) -> None:
    (tmp_path / "pa1.csv").write_text("FAPP-info,Timer clock frequency,50000000\n" + small_csv())
    (tmp_path / "info.json").write_text(json.dumps({"cntfrq_hz": 25_000_000}))
    assert read_measurement(tmp_path).cntfrq_hz == 25_000_000


def test_pa_files_sorted_numerically(tmp_path: Path) -> None:
    for n in (10, 2, 1):
        (tmp_path / f"pa{n}.csv").write_text(small_csv())
    (tmp_path / "notes.csv").write_text("not a set")  # ignored when pa*.csv exist
    assert list(read_measurement(tmp_path).sets) == ["pa1", "pa2", "pa10"]


def test_a_single_csv_file(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text(small_csv(2))
    m = read_measurement(path)
    assert list(m.sets) == ["export"]


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("", 1, "no LABEL-FAPP-cpupa header"),
        (HEADER + "\n", 1, "no FAPP-cpupa rows"),
        (row(0) + "\n" + HEADER + "\n", 1, "data row before"),
        (HEADER + "\n" + row(0) + ",9\n", 2, "14 columns"),
        (HEADER + "\n" + row(0, a=12).replace(",12,", ",1x2,") + "\n", 2, "not an integer"),
        (HEADER + "\n" + row(0, b=-3) + "\n", 2, "negative"),
        (HEADER + "\n" + row(0, b=2**64) + "\n", 2, "64 bits"),
        (HEADER + "\n" + row(0) + "\n" + row(0) + "\n", 3, "already on line 2"),
        (HEADER.replace("CNTVCT,", "") + "\n", 1, "lacks column(s) CNTVCT"),
        (HEADER.replace("0x0008", "0x0011") + "\n", 1, "appears twice"),
        (HEADER.replace("0x0008", "L1D") + "\n", 1, "unknown header column"),
        (HEADER + "\n" + row(0) + "\n" + HEADER.replace("0x0008", "0x0009") + "\n", 3, "second cpupa header"),
        (HEADER + '\n"unterminated,quote\n', 2, "malformed CSV"),
    ],
)
def test_errors_name_file_and_line(text: str, line: int, problem: str) -> None:
    with pytest.raises(DataError) as info:
        parse_cpupa(text.encode(), "x/pa1.csv", "pa1")
    assert info.value.line == line
    assert str(info.value).startswith(f"x/pa1.csv:{line}: ")
    assert problem in str(info.value)


def test_bad_utf8_names_the_line() -> None:
    data = (HEADER + "\n").encode() + b"FAPP-cpupa,Thread,\xff\n"
    with pytest.raises(DataError, match=r"pa1.csv:2: not UTF-8"):
        parse_cpupa(data, "pa1.csv", "pa1")


def test_directory_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no cpupa export files"):
        read_measurement(tmp_path)
    with pytest.raises(DataError, match="no such file or directory"):
        read_measurement(tmp_path / "missing")
    (tmp_path / "pa1.csv").write_text(small_csv())
    (tmp_path / "info.json").write_text("{\n  bad")
    with pytest.raises(DataError, match=r"info.json:2: bad JSON"):
        read_measurement(tmp_path)


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    """Spreadsheet programs save CSV with a byte-order mark; the header was then not found."""
    (tmp_path / "pa1.csv").write_bytes(b"\xef\xbb\xbf" + small_csv(2).encode())
    (tmp_path / "info.json").write_bytes(b"\xef\xbb\xbf" + b'{"cntfrq_hz": 100000000}')
    m = read_measurement(tmp_path)
    assert m.threads == (0, 1) and m.warnings == () and m.sets["pa1"].rows[0].line == 2


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ('{\n  "cntfrq_hz": NaN\n}', 2, "NaN is not a JSON number"),
        ('{"note": "NaN here",\n "vector_length_bits": Infinity}', 2, "Infinity is not a JSON number"),
        ('{"cntfrq_hz":\n\n-Infinity}', 3, "-Infinity is not a JSON number"),
        ('{"cntfrq_hz": 1e999}', 1, "1e999 is out of range for a number"),
        ('{"note": "x",\n "extra": -1e999}', 2, "-1e999 is out of range for a number"),
        ('{"cntfrq_hz":\n ' + "1" * 400 + "}", 2, "(400 digits) does not fit in 64 bits"),
        ('{"cores_per_node": ' + "9" * 5000 + "}", 1, "(5000 digits) does not fit in 64 bits"),
        ('{"region_name": "a\\ud800b"}', None, "the string region_name holds a lone surrogate"),
        ('{"a": ' + "[" * 40 + "]" * 40 + "}", None, "nested deeper than 32 levels"),
        ('{"vector_length_bits": 100}', None, "vector_length_bits must be a multiple of 128"),
        ('{"vector_length_bits": 1e308}', None, "vector_length_bits must be a multiple of 128"),
        ("[" * 100_000, None, "nested too deeply"),
    ],
)
def test_info_json_that_is_not_json_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int | None, problem: str
) -> None:
    """info.json with NaN passed as a number and ended in a ValueError traceback at the JSON output;
    a 400-digit integer overflowed a float, 1e999 and a lone surrogate went into an import's header
    and failed its write (issue 28 fault suite)."""
    (tmp_path / "pa1.csv").write_text(small_csv())
    (tmp_path / "info.json").write_text(text)
    assert main(["fapp", str(tmp_path), "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    where = f"{tmp_path / 'info.json'}" + (f":{line}" if line is not None else "")
    assert len(err) == 1 and err[0].startswith(f"sectormon: {where}: ") and problem in err[0], err


def test_several_regions_need_a_choice(tmp_path: Path) -> None:
    text = "\n".join([HEADER, row(0, region="a"), row(1, region="a"), row(0, region="b")])
    (tmp_path / "pa1.csv").write_text(text)
    with pytest.raises(DataError, match=r"several measured regions \(a, b\) \(choose one with --region"):
        read_measurement(tmp_path)
    assert read_measurement(tmp_path, region="b").threads == (0,)
    with pytest.raises(DataError, match="no region 'c'"):
        read_measurement(tmp_path, region="c")


def test_missing_thread_in_one_set_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "pa1.csv").write_text(small_csv(3))
    (tmp_path / "pa2.csv").write_text(small_csv(2))
    m = read_measurement(tmp_path)
    assert m.threads == (0, 1, 2)
    assert any("pa2: no row for thread(s) 2" in w for w in m.warnings)
    assert m.value("pa2", 0x11, 2) is None


# ------------------------------------------------------------------------------------------- fuzzing

LINE_RE = re.compile(r"^pa1\.csv:(\d+): ")


def _check_parse(data: bytes) -> None:
    n_lines = max(1, data.count(b"\n") + 1)
    try:
        s = parse_cpupa(data, "pa1.csv", "pa1")
    except DataError as exc:
        match = LINE_RE.match(str(exc))
        assert match, str(exc)
        assert exc.line is not None and 1 <= exc.line <= n_lines
        assert "\n" not in str(exc)
        return
    for r in s.rows:
        assert r.cntvct >= 0 and r.pmccntr >= 0
        assert all(0 <= v < 2**64 for v in r.counts.values())
        assert set(r.counts) == set(s.codes)


@pytest.fixture(scope="module")
def real_csv(fapp_dir: Path) -> bytes:
    return (fapp_dir / "nbody.29503716.0" / "pa2.csv").read_bytes()


_FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FUZZ
@given(cut=st.integers(min_value=0, max_value=5000))
def test_fuzz_truncated(real_csv: bytes, cut: int) -> None:
    _check_parse(real_csv[: cut % (len(real_csv) + 1)])


@_FUZZ
@given(
    edits=st.lists(
        st.tuples(st.integers(min_value=0, max_value=10_000), st.binary(min_size=0, max_size=3)),
        min_size=1,
        max_size=6,
    )
)
def test_fuzz_corrupted(real_csv: bytes, edits: list[tuple[int, bytes]]) -> None:
    data = bytearray(real_csv)
    for pos, new in edits:
        at = pos % (len(data) + 1)
        data[at : at + 1] = new
    _check_parse(bytes(data))


@_FUZZ
@given(
    order=st.permutations(list(range(13))), drop=st.sets(st.integers(min_value=0, max_value=12), max_size=4)
)
def test_fuzz_reordered(real_csv: bytes, order: list[int], drop: set[int]) -> None:
    lines = real_csv.decode().splitlines()
    assert len(lines) == 13
    shuffled = [lines[i] for i in order if i not in drop]
    _check_parse("\n".join(shuffled).encode())


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from('FAPP-cpupaLABEL,Thread0x19-"\n\r \x00é'), max_size=300))
def test_fuzz_arbitrary_text(text: str) -> None:
    _check_parse(text.encode("utf-8"))
