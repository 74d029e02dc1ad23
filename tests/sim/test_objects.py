"""``--objects FILE``: named data objects for a din trace, parsed strictly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sectormon import cli
from sectormon.errors import DataError
from sectormon.sim.objects import OTHER, parse_objects
from sectormon.sim.stream import FLAG_SLOTS, OBJECT_SHIFT
from sectormon.sim.trace import records


def _write(tmp_path: Path, text: str, name: str = "objects.txt") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_parse_and_lookup(tmp_path: Path) -> None:
    objects = parse_objects(_write(tmp_path, "# arrays\n\ntable 0x1000 4K\nvec 3000 256\n"))
    assert objects.names == (OTHER, "table", "vec")
    assert objects.lookup(0x1000) == 1 and objects.lookup(0x1FFF) == 1
    assert objects.lookup(0x2000) == 0  # between the two
    assert objects.lookup(0x3000) == 2 and objects.lookup(0x30FF) == 2 and objects.lookup(0x3100) == 0
    assert objects.lookup(0) == 0


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("a 1000\n", 1, "expected 3 fields, got 2"),
        ("a 1000 4K\nb 1000 4K extra\n", 2, "expected 3 fields, got 4"),
        ("a 10g0 4K\n", 1, "start '10g0' is not hexadecimal"),
        ("a 0x 4K\n", 1, "start '0x' is not hexadecimal"),
        ("a 1000 4Q\n", 1, "size '4Q' is not a size"),
        ("a 1000 -4\n", 1, "size '-4' is not a size"),
        ("a 1000 0\n", 1, "size 0"),
        ("a 1000 4K\na 9000 4K\n", 2, "object 'a' is named twice"),
        ("a 1000 4K\n\nb 1800 16\n", 3, "object 'b' overlaps 'a' (line 1)"),
        ("b 1800 16\na 1000 4K\n", 1, "object 'b' overlaps 'a' (line 2)"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, text: str, line: int, problem: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(DataError) as info:
        parse_objects(path)
    assert info.value.line == line
    assert problem in str(info.value) and str(info.value).startswith(f"{path}:{line}: ")


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"cannot read the objects file \(No such file"):
        parse_objects(str(tmp_path / "nope.txt"))
    with pytest.raises(DataError, match="no objects in the file"):
        parse_objects(_write(tmp_path, "# nothing\n"))


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 5000), min_size=1, max_size=6),
    gaps=st.lists(st.integers(0, 3000), min_size=6, max_size=6),
    probes=st.lists(st.integers(0, 60_000), min_size=1, max_size=40),
    reverse=st.booleans(),
)
def test_lookup_matches_a_linear_scan(
    tmp_path_factory: pytest.TempPathFactory,
    sizes: list[int],
    gaps: list[int],
    probes: list[int],
    reverse: bool,
) -> None:
    spans = []
    start = 0
    for size, gap in zip(sizes, gaps, strict=False):
        start += gap
        spans.append((f"o{len(spans)}", start, start + size))
        start += size
    listed = list(reversed(spans)) if reverse else spans  # ids follow the file's order, not addresses
    text = "".join(f"{name} {lo:x} {hi - lo}\n" for name, lo, hi in listed)
    objects = parse_objects(_write(tmp_path_factory.mktemp("objects"), text))
    for address in probes:
        inside = [name for name, lo, hi in spans if lo <= address < hi]
        assert objects.names[objects.lookup(address)] == (inside[0] if inside else OTHER)


def test_trace_records_carry_the_object(tmp_path: Path) -> None:
    trace = _write(tmp_path, "0 1000\n0 1008\n1 2000\n0 3000\n", "t.din")
    objects = parse_objects(_write(tmp_path, "a 1000 256\nb 2000 256\n"))
    recs = list(records(trace, True, True, objects))
    assert [(line, n, fl >> OBJECT_SHIFT) for line, n, fl in recs] == [
        (0x10, 2, 1),
        (0x20, 1, 2),
        (0x30, 1, 0),
    ]
    assert [fl % FLAG_SLOTS for _, _, fl in recs] == [0, 1, 0]


def test_summary_describes_the_objects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [f"0 {0x100000 + 8 * i:x}" for i in range(4000)] + [
        f"0 {0x900000 + 256 * i:x}" for i in range(500)
    ]
    trace = _write(tmp_path, "\n".join(lines) + "\n", "t.din")
    objects = _write(tmp_path, "seq 100000 32000\nstrided 900000 128K\n")
    assert cli.main(["sim", "--summary", "--trace", trace, "--objects", objects]) == 0
    described = json.loads(capsys.readouterr().out)["kernel"]["data_objects"]
    assert [o["name"] for o in described["objects"]] == ["seq", "strided"]
    assert described["objects"][1] == {"name": "strided", "start": "0x900000", "size_bytes": 128 << 10}


def test_objects_without_a_trace_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = _write(tmp_path, "a 1000 4K\n")
    assert cli.main(["sim", "--summary", "--objects", objects]) == 2
    assert "--objects names the data objects of a --trace" in capsys.readouterr().err


def test_bad_objects_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _write(tmp_path, "0 1000\n", "t.din")
    objects = _write(tmp_path, "a 1000 4K\nb zz 4K\n")
    assert cli.main(["sim", "--summary", "--trace", trace, "--objects", objects]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{objects}:2: start 'zz' is not hexadecimal" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--assign on a --trace needs --objects FILE"),
        (["--objects", "OBJ"], "has no object 'zz'; use a or [other]"),
    ],
)
def test_assign_on_a_trace_names_file_objects(
    tmp_path: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _write(tmp_path, "0 1000\n", "t.din")
    objects = _write(tmp_path, "a 1000 4K\n")
    args = [objects if a == "OBJ" else a for a in extra]
    assert cli.main(["sim", "--summary", "--trace", trace, *args, "--assign", "zz=1"]) == 2
    assert message in capsys.readouterr().err


def test_assign_on_a_trace_sets_the_objects_sector(tmp_path: Path) -> None:
    trace = _write(tmp_path, "0 1000\n0 2000 3\n0 9000\n", "t.din")
    objects = parse_objects(_write(tmp_path, "a 1000 256\nb 2000 256\n"))
    assign = (None, 2, None)  # [other] and b keep the trace's own field; a goes to sector 2
    sectors = [(fl >> 1) & 3 for _, _, fl in records(trace, True, False, objects, assign)]
    assert sectors == [2, 3, 0]
