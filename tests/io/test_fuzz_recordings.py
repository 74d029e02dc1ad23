"""The recordings fault generator (slow tier): real recordings mutated every way the fault suite
of issues 28 and 34 did, through ``replay --json``, ``compare`` and ``merge`` in this process.

Every case must end with exit 0, 1 or 2 (2: exactly one error line on stderr), never a traceback
(any exception escaping the CLI fails the run) and never a hang (each case is timed; the whole run
is under a pytest timeout). Cases are seeded by their index: a failure prints ``case N`` and
``make_case(N)`` rebuilds it, so it can be pinned as a test of its own.

Mutation classes: bit flips, truncation, lines deleted/repeated/swapped, deep nesting, huge and
negative numbers, a wrong type in any field (header, options, slice, reading, mark), Unicode digits
in schema versions, gzip corruption (flips and cuts in the compressed stream), and job files
(header fields, node markers, node lines).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sectormon import cli
from sectormon.data.readings import Mark
from tests.io.recording_synth import header, stream
from tests.session.test_replay import real_header, write

pytestmark = pytest.mark.slow

CASES = 10_000
CASE_SECONDS = 10.0

DEEP = "[" * 3000 + "]" * 3000
VALUES: tuple[Any, ...] = (
    0, -1, None, [], {}, "x", True, 1e308, -1e308, 2**64, 10**400, -(10**400), "²", "２", 1e9, 1e-300,
    "x" * 5000, [[[[1]]]],
)  # fmt: skip
SCHEMAS = ("sectormon/slice/²", "sectormon/slice/２", "sectormon/mark/٢", "sectormon/recording/3", "x", 2)


@dataclass
class Case:
    index: int
    what: str
    command: str  # replay, compare, merge, job
    files: dict[str, bytes]  # name -> content


def _base_items() -> list[Any]:
    marks = {
        2: Mark(t=0.03, kind="note", label="hello"),
        4: Mark(t=0.07, kind="baseline"),
        6: Mark(t=0.11, kind="warning", label="a unit left"),
    }
    return stream(8, marks=marks)


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[bytes]]:
    """Two small real recordings (two hosts, the generic profile) and a job merged from them."""
    tmp = tmp_path_factory.mktemp("bases")
    out: dict[str, list[bytes]] = {}
    for host in ("alpha", "beta"):
        hdr = real_header()
        hdr["host"] = host
        path = write(tmp / f"{host}.jsonl", _base_items(), hdr)
        out[host] = path.read_bytes().splitlines()
    code, _out, err = run(
        ["merge", "-o", str(tmp / "job.jsonl"), str(tmp / "alpha.jsonl"), str(tmp / "beta.jsonl")]
    )
    assert code == 0, err
    out["job"] = (tmp / "job.jsonl").read_bytes().splitlines()
    assert header()  # the synthetic header is the one real_header extends
    return out


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(args)
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------------------------------ mutators


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a decoded record (keys and list indexes), the first 3
    elements of long lists only."""
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            out.extend(_paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for i, child in enumerate(value[:3]):
            out.extend(_paths(child, (*prefix, i)))
    return out


def _replace(record: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        record = record[key]
    if value is _DELETE:
        del record[path[-1]]
    else:
        record[path[-1]] = value


_DELETE = object()


def _encode(record: Any, rng: random.Random) -> bytes:
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=rng.random() < 0.5)
    return text.replace('"__DEEP__"', DEEP).encode()


def field_mutation(lines: list[bytes], rng: random.Random) -> tuple[str, list[bytes]]:
    i = rng.randrange(len(lines))
    record = json.loads(lines[i])
    paths = _paths(record)
    path = rng.choice(paths)
    choice = rng.random()
    if choice < 0.1:
        value: Any = _DELETE
    elif choice < 0.2:
        value = "__DEEP__"
    else:
        value = rng.choice(VALUES)
    _replace(record, path, value)
    shown = "deep" if value == "__DEEP__" else "deleted" if value is _DELETE else repr(value)[:20]
    out = list(lines)
    out[i] = _encode(record, rng)
    return f"line {i + 1} {'/'.join(map(str, path))} = {shown}", out


def schema_mutation(lines: list[bytes], rng: random.Random) -> tuple[str, list[bytes]]:
    i = rng.randrange(len(lines))
    record = json.loads(lines[i])
    record["schema"] = rng.choice(SCHEMAS)
    out = list(lines)
    out[i] = _encode(record, rng)
    return f"line {i + 1} schema {record['schema']!r}", out


def line_mutation(lines: list[bytes], rng: random.Random) -> tuple[str, list[bytes]]:
    out = list(lines)
    i = rng.randrange(len(out))
    kind = rng.choice(["delete", "repeat", "swap", "garbage", "cut", "blank", "long"])
    if kind == "delete":
        del out[i]
    elif kind == "repeat":
        out.insert(i, out[i])
    elif kind == "swap":
        j = rng.randrange(len(out))
        out[i], out[j] = out[j], out[i]
    elif kind == "garbage":
        out.insert(i, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))))
    elif kind == "cut":
        out = out[: i + 1]
        out[i] = out[i][: rng.randrange(len(out[i]) + 1)]
    elif kind == "blank":
        out.insert(i, b"   ")
    else:
        out.insert(
            i, b'{"schema":"sectormon/mark/2","t":0.01,"kind":"note","label":"' + b"y" * 300_000 + b'"}'
        )
    return f"{kind} line {i + 1}", out


def byte_mutation(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    damaged = bytearray(data)
    if rng.random() < 0.3:
        at = rng.randrange(len(damaged))
        return f"truncated at {at}", bytes(damaged[:at])
    flips = [rng.randrange(len(damaged)) for _ in range(rng.randrange(1, 4))]
    for at in flips:
        damaged[at] ^= 1 << rng.randrange(8)
    return f"bits flipped at {flips}", bytes(damaged)


def make_case(index: int, bases: dict[str, list[bytes]]) -> Case:
    """Case ``index``: its own seeded generator picks the command, the mutation and its place."""
    rng = random.Random(index)
    command = rng.choices(["replay", "compare", "merge", "job"], weights=[6, 2, 1, 2])[0]
    source = "job" if command == "job" else rng.choice(["alpha", "beta"])
    lines = bases[source]
    mutator: Callable[[list[bytes], random.Random], tuple[str, list[bytes]]] = rng.choice(
        [field_mutation, field_mutation, schema_mutation, line_mutation]
    )
    compressed = rng.random() < 0.3
    as_bytes = rng.random() < 0.25
    if as_bytes:
        data = b"\n".join(lines) + b"\n"
        if compressed:
            data = gzip.compress(data, mtime=0)
        what, data = byte_mutation(data, rng)
    else:
        what, damaged = mutator(lines, rng)
        data = b"\n".join(damaged) + b"\n"
        if compressed:
            data = gzip.compress(data, mtime=0)
            if rng.random() < 0.3:
                extra, data = byte_mutation(data, rng)
                what += f", gzip {extra}"
    name = f"{source}.jsonl" + (".gz" if compressed else "")
    files = {name: data}
    if command in ("compare", "merge"):
        other = "beta" if source == "alpha" else "alpha"
        files[f"{other}.jsonl"] = b"\n".join(bases[other]) + b"\n"
    kind = "bytes " if as_bytes else ""
    return Case(index, f"case {index}: {command} {name}: {kind}{what}", command, files)


# --------------------------------------------------------------------------------------------- run


def run_case(case: Case, tmp: Path, skip_bad: bool) -> tuple[int, str]:
    paths = []
    for name, data in case.files.items():
        path = tmp / name
        path.write_bytes(data)
        paths.append(str(path))
    flags = ["--skip-bad"] if skip_bad else []
    if case.command in ("replay", "job"):
        code, _out, err = run(["replay", "--json", *flags, paths[0]])
    elif case.command == "compare":
        code, _out, err = run(["compare", "--json", *flags, *paths])
    else:
        job = tmp / "out.jsonl"
        code, _out, err = run(["merge", *flags, "-o", str(job), *paths])
        if code == 0:
            code, _out, err = run(["replay", "--json", *flags, str(job)])
        job.unlink(missing_ok=True)
    for path in paths:
        Path(path).unlink()
    return code, err


def check(case: Case, code: int, err: str, seconds: float) -> None:
    where = f"{case.what}: exit {code}, stderr {err[-600:]!r}"
    assert seconds < CASE_SECONDS, f"{case.what}: took {seconds:.1f} s"
    assert code in (0, 1, 2), where
    assert "Traceback" not in err, where
    errors = [line for line in err.splitlines() if not line.startswith("sectormon: warning: ")]
    if code == 0:
        assert not errors, where
    else:
        assert len(errors) == 1 and errors[0].startswith("sectormon: "), where


@pytest.mark.timeout(3600)
def test_ten_thousand_hostile_recordings_end_in_one_line_or_a_replay(
    bases: dict[str, list[bytes]], tmp_path: Path
) -> None:
    started = time.monotonic()
    ran = 0
    codes = {0: 0, 1: 0, 2: 0}
    for index in range(CASES):
        case = make_case(index, bases)
        t0 = time.monotonic()
        try:
            code, err = run_case(case, tmp_path, skip_bad=index % 4 == 3)
        except BaseException as exc:
            raise AssertionError(f"{case.what}: {type(exc).__name__}: {exc}") from exc
        check(case, code, err, time.monotonic() - t0)
        codes[code] = codes.get(code, 0) + 1
        ran += 1
    elapsed = time.monotonic() - started
    print(f"recordings fuzz: {ran} cases in {elapsed:.0f} s, exit codes {codes}")
    assert ran >= CASES
