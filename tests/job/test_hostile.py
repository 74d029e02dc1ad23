"""Damaged job files and damaged nodes (issues 28 and 34): every header field a reader uses is
checked (one line naming the field, exit 2), a cut node is merged up to its last whole line with
a warning, and warnings about a node name the node and the file it was merged from, never the
temporary file it is extracted to.

Everything runs the CLI in this process, on two simulator recordings.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sectormon import cli
from sectormon.io import reader as reader_module


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("nodes")
    paths = []
    for host in ("nodeA", "nodeB"):
        path = tmp / f"sim{host[-1]}.jsonl"
        os.environ["SECTORMON_HOST"] = host
        try:
            code, _out, err = run("sim", "--json", "--count", "3", "--record", str(path))
        finally:
            del os.environ["SECTORMON_HOST"]
        assert code == 0, err
        paths.append(path)
    return paths[0], paths[1]


@pytest.fixture(scope="module")
def job_lines(nodes: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    path = tmp_path_factory.mktemp("job") / "job.jsonl"
    code, _out, err = run("merge", "-o", str(path), *map(str, nodes))
    assert code == 0, err
    return path.read_bytes().splitlines()


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda header: header.__setitem__(key, value)


def _node(value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda header: header["nodes"].__setitem__(0, value)


def _offset(value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda header: header["nodes"][0].__setitem__("offset", value)


HEADER_DAMAGE: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "interval empty string": (_set("interval", ""), "'interval'"),
    "interval a list": (_set("interval", [1]), "'interval'"),
    "interval 0": (_set("interval", 0), "'interval'"),
    "interval 400 digits": (_set("interval", 10**400), "'interval'"),
    "interval missing": (lambda h: h.pop("interval"), "'interval'"),
    "node a number": (_node(5), "'nodes[0]'"),
    "node a string": (_node("node"), "'nodes[0]'"),
    "node a bool": (_node(True), "'nodes[0]'"),
    "node a list": (_node([]), "'nodes[0]'"),
    "offset a string": (_offset("1"), "'nodes[0].offset'"),
    "offset 1e308": (_offset(1e308), "'nodes[0].offset'"),
    "offset 1e300": (_offset(1e300), "'nodes[0].offset'"),
    "offset -1e6": (_offset(-1e6), "'nodes[0].offset'"),
    "offset missing": (lambda h: h["nodes"][0].pop("offset"), "'nodes[0].offset'"),
    "warnings an int": (_set("warnings", 3), "'warnings'"),
    "nodes a dict": (_set("nodes", {}), "2 to 4096 nodes"),
    "one node": (lambda h: h["nodes"].pop(), "2 to 4096 nodes"),
}


@pytest.mark.parametrize("case", sorted(HEADER_DAMAGE))
def test_a_damaged_job_header_is_one_line_naming_the_field(
    case: str, job_lines: list[bytes], tmp_path: Path
) -> None:
    damage, named = HEADER_DAMAGE[case]
    header = copy.deepcopy(json.loads(job_lines[0]))
    damage(header)
    path = tmp_path / "job.jsonl"
    path.write_bytes(b"\n".join([json.dumps(header).encode(), *job_lines[1:]]) + b"\n")
    for args in (("replay", "--json", str(path)), ("compare", "--json", str(path), str(path))):
        code, out, err = run(*args)
        assert code == 2, err
        assert err.count("\n") == 1 and err.startswith(f"sectormon: {path}:1: "), err
        assert named in err, err
        assert out == ""


@pytest.mark.parametrize("garbage", [b"xx}", b'"node":"0"}', b'"node":-1}', b'"node":99}'])
def test_garbage_in_a_node_marker_is_one_line_at_its_line(
    garbage: bytes, job_lines: list[bytes], tmp_path: Path
) -> None:
    lines = list(job_lines)
    lines[1] = lines[1][: lines[1].index(b'"node"')] + garbage
    path = tmp_path / "job.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    code, _out, err = run("replay", "--json", str(path))
    assert code == 2 and err.startswith(f"sectormon: {path}:2: bad node marker"), err
    assert err.count("\n") == 1


def test_a_job_header_nested_thousands_deep_is_not_a_job(job_lines: list[bytes], tmp_path: Path) -> None:
    path = tmp_path / "job.jsonl"
    deep = b"[" * 5000 + b"]" * 5000
    path.write_bytes(
        b"\n".join(
            [job_lines[0].replace(b'"warnings":', b'"deep":' + deep + b',"warnings":'), *job_lines[1:]]
        )
    )
    code, _out, err = run("replay", "--json", str(path))
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err


def test_a_cut_recording_is_merged_up_to_its_last_whole_line_and_the_job_replays(
    nodes: tuple[Path, Path], tmp_path: Path
) -> None:
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(nodes[0].read_bytes()[:30000])
    whole_lines = cut.read_bytes().count(b"\n")
    job = tmp_path / "j.jsonl"
    code, _out, err = run("merge", "-o", str(job), str(cut), str(nodes[1]))
    assert code == 0, err
    assert f"node nodeA: {cut}:{whole_lines + 1}: last line is incomplete" in err, err
    code, out, err = run("replay", "--json", str(job))
    assert code == 0, err
    assert "Traceback" not in err and out.count("\n") > 2
    # What replay says about the cut node names it and its own file, not a temporary file.
    assert "sectormon-job-" not in err and "node0.jsonl" not in err
    assert f"cut.jsonl (node 0 of {job}):{whole_lines}: no end mark" in err, err
    # The node's part of the job ends with a whole line, as its replay read it.
    lines = job.read_bytes().splitlines()
    marker = next(
        i for i, line in enumerate(lines) if line.startswith(b'{"schema":"sectormon/job-node/1","node":1')
    )
    json.loads(lines[marker - 1])


def test_warnings_of_a_job_name_the_node_and_its_original_file(
    nodes: tuple[Path, Path], tmp_path: Path
) -> None:
    lines = nodes[1].read_bytes().splitlines()
    lines.insert(3, b'{"schema":"sectormon/mark/2","t":0.0,"kind":"warning","label":"disk slow","data":{}}')
    damaged = tmp_path / "simB-warned.jsonl"
    damaged.write_bytes(b"\n".join(lines) + b"\n")
    job = tmp_path / "j.jsonl.gz"
    code, _out, err = run("merge", "-o", str(job), str(nodes[0]), str(damaged))
    assert code == 0, err
    code, _out, err = run("replay", "--json", str(job))
    assert code == 0, err
    assert f"node nodeB: simB-warned.jsonl (node 1 of {job}):4: the live session warned" in err, err
    assert "sectormon-job-" not in err


def test_merge_does_not_copy_an_overlong_line(
    nodes: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader_module, "MAX_LINE", 100_000)
    lines = nodes[1].read_bytes().splitlines()
    lines.insert(3, b'{"schema":"sectormon/mark/2","t":0.0,"kind":"note","label":"' + b"x" * 200_000 + b'"}')
    long = tmp_path / "long.jsonl"
    long.write_bytes(b"\n".join(lines) + b"\n")
    job = tmp_path / "j.jsonl"
    code, _out, err = run("merge", "-o", str(job), str(nodes[0]), str(long))
    assert (
        code == 2
        and err.strip() == f"sectormon: {long}:4: line longer than 100,000 bytes (use --skip-bad to skip it)"
    )
    assert not job.exists()
    code, _out, err = run("merge", "--skip-bad", "-o", str(job), str(nodes[0]), str(long))
    assert code == 0, err
    assert job.stat().st_size < 2 * (nodes[0].stat().st_size + nodes[1].stat().st_size)
