"""Fuzzing damaged recordings through ``replay --json`` and ``compare --json``: every case ends in
well under 5 s of CPU time with exit 0 (its warnings one line each, the right one where the damage is known)
or exit 2 with one line naming the file and line; never a traceback, never a hang.

A seeded mutator, so a failure names its case and replays the same way:

- every header, slice and mark field (and options, profile keys, a reading's fields and counts)
  replaced by each of 0, null, [], "x", NaN, Infinity, 1e308, 2^64 and -1;
- byte flips anywhere; lines deleted (a middle slice: a gap warning at the slice after it; the end
  mark: "no end mark"; the header: one line); the file cut mid-line (a warning).

The default run is in-process (the CLI's own ``main``, so what is printed and the exit code are the
command's): over 1,000 cases in seconds. ``test_damage_through_the_command`` runs a few dozen through
the installed command (reader processes included); ``pytest -m slow`` runs ten times as many.

A case's time is the CPU time it used (the command's and its readers'), not the wall-clock time: on
a loaded machine a command that starts in half a second waits seconds for a CPU. A case that
hangs without using the CPU ends at the subprocess timeout or the test's.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import random
import re
import resource
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sectormon import cli
from sectormon.data.readings import Mark, Slice
from sectormon.session import replay_worker
from tests.e2e.helpers import run_sectormon
from tests.io.recording_synth import stream
from tests.session.test_replay import real_header, write

NAN = float("nan")
INF = float("inf")
VALUES: tuple[Any, ...] = (0, None, [], "x", NAN, INF, 1e308, 2**64, -1)
CASE_SECONDS = 5.0  # of CPU time


def children_cpu_seconds() -> float:
    """CPU time of the ended child processes of this one (and of the children they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# Fields where 1e308, 2^64 and -1 are always wrong (no time, index, count or ns value reaches them).
STRICT_FIELDS = {
    ("t",),
    ("duration",),
    ("overhead_s",),
    ("index",),
    ("recording_started",),
    *(("options", key) for key in ("interval", "timeslice", "recent_seconds", "duration", "baseline_after")),
    *(("readings", 0, i) for i in (0, 3, 4, 5, 6, 7)),
    ("readings", 0, 7, 0),
}


def base_items() -> list[Slice | Mark]:
    """40 slices of two threads with a mark of every kind in between."""
    marks = {
        5: Mark(t=0.1, kind="baseline"),
        12: Mark(t=0.24, kind="bookmark", label="here"),
        18: Mark(t=0.36, kind="config", label="on", data={"preset": "on"}),
        25: Mark(t=0.5, kind="warning", label="a thread was not counted"),
        31: Mark(t=0.62, kind="baseline-clear"),
    }
    return stream(40, marks=marks)


@pytest.fixture(scope="module")
def base_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    hdr = real_header()
    hdr["options"]["interval"] = 0.1
    path = write(tmp_path_factory.mktemp("base") / "base.jsonl", base_items(), hdr)
    return path.read_bytes().splitlines()


def dump(rec: dict[str, Any]) -> str:
    """A record as a writer that allowed NaN and Infinity would write it."""
    return json.dumps(rec, separators=(",", ":"), allow_nan=True)


def replace(rec: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(rec)
    target: Any = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


def field_paths(rec: dict[str, Any]) -> Iterator[tuple[Any, ...]]:
    """Every field of a record worth damaging: top-level keys, options and profile keys, the
    first reading's eight fields and first count, the first layout's first name, mark data."""
    for key in rec:
        yield (key,)
    for nested in ("options", "profile", "data", "unavailable"):
        if isinstance(rec.get(nested), dict):
            for key in rec[nested]:
                yield (nested, key)
    if isinstance(rec.get("readings"), list) and rec["readings"]:
        for i in range(8):
            yield ("readings", 0, i)
        yield ("readings", 0, 7, 0)
        yield ("events", 0, 0)


@dataclass(frozen=True)
class Case:
    """One damaged recording: its lines, what was done, and what a reader must say."""

    what: str
    lines: list[bytes]
    line: int | None = None  # the damaged line (1-based): an error must name it (or the next slice)
    must_fail: bool = False  # exit 2 is the only right outcome
    warning: str | None = None  # exit 0 must give this warning (a regular expression)
    cut: bool = False  # the file ends without its last newline


def _kind(line: bytes) -> str:
    match = re.match(rb'\{"schema":"sectormon/(\w+)/', line)
    return match.group(1).decode() if match else ""


def field_cases(lines: list[bytes]) -> Iterator[Case]:
    """Every field of the header, of a slice and of each mark kind, times every value."""
    picks = [0, *(i for i, line in enumerate(lines) if _kind(line) == "mark")]
    picks.append(next(i for i, line in enumerate(lines) if _kind(line) == "slice" and i > 10))
    for i in picks:
        rec = json.loads(lines[i])
        for path in field_paths(rec):
            for value in VALUES:
                damaged = list(lines)
                damaged[i] = dump(replace(rec, path, value)).encode()
                not_json = (isinstance(value, float) and value in (NAN, INF)) or value != value
                must_fail = not_json or (path in STRICT_FIELDS and value in (1e308, 2**64, -1))
                yield Case(f"line {i + 1} {'.'.join(map(str, path))} = {value!r}", damaged, i + 1, must_fail)


def random_cases(lines: list[bytes], rng: random.Random, n: int) -> Iterator[Case]:
    """Byte flips, deleted lines and cut files, at random places."""
    slice_lines = [i for i, line in enumerate(lines) if _kind(line) == "slice"]
    for _ in range(n):
        choice = rng.random()
        damaged = list(lines)
        if choice < 0.45:
            i = rng.randrange(len(lines))
            text = bytearray(lines[i])
            for _ in range(rng.randint(1, 4)):
                text[rng.randrange(len(text))] = rng.choice([*b'{}[],:"0x \\\n', rng.randrange(256)])
            damaged[i] = bytes(text)
            yield Case(f"bytes of line {i + 1} flipped", damaged, i + 1)
        elif choice < 0.75:
            i = rng.choice(slice_lines[1:-1])
            del damaged[i]
            after = next(j for j in range(i, len(damaged)) if _kind(damaged[j]) == "slice")
            warning = rf":{after + 1}: 1 slice\(s\) missing before this line"
            yield Case(f"slice line {i + 1} deleted", damaged, warning=warning)
        elif choice < 0.85:
            i = rng.randrange(1, len(lines))
            kind = _kind(lines[i])
            del damaged[i]
            end = kind == "mark" and b'"kind":"end"' in lines[i]
            if kind == "slice" and i in (slice_lines[0], slice_lines[-1]):
                yield Case(f"edge slice line {i + 1} deleted", damaged)
            elif kind == "slice":
                yield Case(
                    f"slice line {i + 1} deleted", damaged, warning=r"slice\(s\) missing before this line"
                )
            else:
                yield Case(f"line {i + 1} deleted", damaged, warning="no end mark" if end else None)
        elif choice < 0.95:
            i = rng.randrange(3, len(lines))  # after a slice or two: compare needs one
            damaged = damaged[: i + 1]
            damaged[i] = damaged[i][: rng.randrange(1, len(damaged[i]))]
            yield Case(f"cut inside line {i + 1}", damaged, warning="last line is incomplete", cut=True)
        else:
            del damaged[0]
            yield Case("header deleted", damaged, 1, must_fail=True)


def run(args: list[str]) -> tuple[int, str, str]:
    """``sectormon ARGS`` in this process: exit code, stdout, stderr (any other exception is the
    traceback the command would print, and fails the test)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(args)
    return code, out.getvalue(), err.getvalue()


def check(case: Case, path: Path, code: int, out: str, err: str, seconds: float, *, compare: bool) -> None:
    where = f"{case.what}: exit {code}, stderr {err!r}"
    assert seconds < CASE_SECONDS, f"{case.what}: took {seconds:.1f} s of CPU time"
    assert "Traceback" not in err, where
    errors = [line for line in err.splitlines() if not line.startswith("sectormon: warning: ")]
    if code == 2:
        assert len(errors) == 1 and err.endswith(errors[0] + "\n"), where
        assert errors[0].startswith(f"sectormon: {path}"), where
        named = re.match(rf"sectormon: {re.escape(str(path))}:(\d+): ", errors[0])
        # A recorded profile's fault names the file; so does compare's "no common metric".
        whole_file = errors[0].startswith(f"sectormon: {path}: bad profile in header: ") or (
            compare and named is None
        )
        if case.line is not None and not whole_file:
            assert named is not None, where
            assert int(named.group(1)) >= case.line, where
        assert case.warning is None, where
        return
    assert code == 0 and not errors, where
    assert not case.must_fail, where
    for line in out.splitlines():
        json.loads(line, parse_constant=lambda c: pytest.fail(f"{case.what}: {c} in the output"))
    if case.warning is not None:
        said = "\n".join(json.loads(out)["warnings"]) if compare else err
        assert re.search(case.warning, said), where


def write_case(path: Path, case: Case) -> None:
    path.write_bytes(b"\n".join(case.lines) + (b"" if case.cut else b"\n"))


def fuzz(lines: list[bytes], tmp_path: Path, seed: int, n_random: int, compare_every: int) -> int:
    rng = random.Random(seed)
    cases = [*field_cases(lines), *random_cases(lines, rng, n_random)]
    for k, case in enumerate(cases):
        path = tmp_path / "damaged.jsonl"
        write_case(path, case)
        commands = [["replay", str(path), "--json"]]
        if k % compare_every == 0:
            commands.append(["compare", str(path), str(path), "--json"])
        for args in commands:
            start = time.process_time()
            code, out, err = run(args)
            check(case, path, code, out, err, time.process_time() - start, compare=args[0] == "compare")
    return len(cases)


@pytest.mark.timeout(240)
def test_damaged_recordings_in_process(
    base_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "0")
    assert fuzz(base_lines, tmp_path, seed=18, n_random=400, compare_every=4) >= 1000


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("seed", range(10))
def test_damaged_recordings_in_process_at_length(
    long_fuzz: None, base_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.setenv(replay_worker.ENV_SWITCH, "0")
    fuzz(base_lines, tmp_path, seed=1000 + seed, n_random=1000, compare_every=2)


def command_cases(lines: list[bytes], seed: int, n: int) -> list[Case]:
    rng = random.Random(seed)
    fields = list(field_cases(lines))
    return [*rng.sample(fields, n // 2), *random_cases(lines, rng, n - n // 2)]


def _through_the_command(base_lines: list[bytes], tmp_path: Path, seed: int, n: int) -> None:
    for k, case in enumerate(command_cases(base_lines, seed, n)):
        path = tmp_path / f"damaged{k}.jsonl"
        write_case(path, case)
        args = ["replay", str(path), "--json"] if k % 2 else ["compare", str(path), str(path), "--json"]
        env = dict(os.environ, SECTORMON_REPLAY_WORKER="2" if k % 3 == 0 else "0")
        start = children_cpu_seconds()
        done = run_sectormon(*args, timeout=30, env=env)
        seconds = children_cpu_seconds() - start
        check(case, path, done.returncode, done.stdout, done.stderr, seconds, compare=args[0] == "compare")


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_damage_through_the_command(base_lines: list[bytes], tmp_path: Path) -> None:
    _through_the_command(base_lines, tmp_path, seed=7, n=36)


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_damage_through_the_command_at_length(
    long_fuzz: None, base_lines: list[bytes], tmp_path: Path
) -> None:
    _through_the_command(base_lines, tmp_path, seed=8, n=360)
