"""Fuzzing profile YAML: every damaged profile loads, or fails with one ``file:line`` line per
problem (a :class:`ProfileError`), in well under 5 s; never a traceback, a hang or a crash.

A seeded mutator over the shipped profiles: lines deleted, bytes flipped, values replaced by 0,
null, [], "x", .nan, .inf, 1e308, 2^64, -1, an undefined alias, a self-referencing one, a 5001-digit
integer, deep nesting, a Python tag, markup, escape sequences, a lone surrogate and a 300-character
word, keys renamed to such names, and hostile documents added (alias bombs, ...). Over 1,000
cases in the default run, in this process; a few dozen through ``sectormon events --profile``;
ten times as many with ``pytest -m slow``.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from sectormon.errors import SectormonError
from sectormon.profiles.build import parse_profile
from sectormon.profiles.problems import ProfileError
from tests.e2e.helpers import run_sectormon
from tests.yaml_cases import HOSTILE

VALUES = (
    "0",
    "null",
    "[]",
    '"x"',
    ".nan",
    ".inf",
    "1e308",
    str(2**64),
    "-1",
    "*nope",
    "&a [*a]",
    "9" * 5001,
    "[" * 100 + "]" * 100,
    "!!python/object/apply:os.system [ls]",
    # Text a loader keeps and the TUI and stderr show: markup, escape sequences, a long name.
    '"[/]"',
    '"[link=file:///etc/passwd]x[/link]"',
    '"\\e]0;pwned\\a\\nsectormon: fake"',
    '"\\ud800"',
    "x" * 300,
)
NAMES = ('"[/]"', '"[b]x[/b]"', '"\\e[2J\\r\\nsectormon: fake"', "y" * 300, '"\\u202e\\u0000"')
"""Hostile names a renamed key gets (a group, metric or theme field named so)."""
KEY_VALUE = re.compile(rb"^(\s*-?\s*[A-Za-z_][\w-]*:\s)(.+)$")
CASE_SECONDS = 5.0


def shipped(name: str) -> bytes:
    return resources.files("sectormon.profiles").joinpath(f"{name}.yaml").read_bytes()


def mutants(text: bytes, rng: random.Random, n: int) -> Iterator[tuple[str, bytes]]:
    lines = text.split(b"\n")
    valued = [i for i, line in enumerate(lines) if KEY_VALUE.match(line)]
    for _ in range(n):
        damaged = list(lines)
        choice = rng.random()
        if choice < 0.45:
            i = rng.choice(valued)
            match = KEY_VALUE.match(lines[i])
            assert match is not None
            value = rng.choice(VALUES)
            damaged[i] = match.group(1) + value.encode()
            yield f"line {i + 1} value = {value[:20]}", b"\n".join(damaged)
        elif choice < 0.65:
            i = rng.randrange(len(lines))
            del damaged[i]
            yield f"line {i + 1} deleted", b"\n".join(damaged)
        elif choice < 0.8:
            i = rng.choice(valued)
            match = KEY_VALUE.match(lines[i])
            assert match is not None
            indent = match.group(1)[: len(match.group(1)) - len(match.group(1).lstrip(b" -"))]
            name = rng.choice(NAMES)
            damaged[i] = indent + name.encode() + b": " + match.group(2)
            yield f"line {i + 1} key = {name[:20]}", b"\n".join(damaged)
        elif choice < 0.9:
            data = bytearray(text)
            for _ in range(rng.randint(1, 6)):
                data[rng.randrange(len(data))] = rng.choice([*b":-[]{}&*!'\"\n\t #", rng.randrange(256)])
            yield "bytes flipped", bytes(data)
        else:
            name, doc, _, _ = rng.choice(HOSTILE)
            yield f"{name} added", text + b"\nextra:\n  " + doc.replace("\n", "\n  ").encode()


def check(what: str, text: bytes, path: str) -> None:
    start = time.perf_counter()
    try:
        parse_profile(text.decode("utf-8", "replace"), path)
    except ProfileError as exc:
        rendered = str(exc).splitlines()
        assert len(rendered) == len(exc.problems), what
        assert all(line.startswith(f"{path}:") for line in rendered), (what, rendered)
    except SectormonError as exc:
        assert "\n" not in str(exc), (what, str(exc))
    assert time.perf_counter() - start < CASE_SECONDS, what


def fuzz(seed: int, n: int) -> int:
    rng = random.Random(seed)
    count = 0
    # Mostly the small generic profile: the A64FX one takes three times as long to load.
    for name, share in (("generic", n - n // 4), ("a64fx", n // 4)):
        for what, text in mutants(shipped(name), rng, share):
            check(f"{name}: {what}", text, f"{name}.yaml")
            count += 1
    return count


@pytest.mark.timeout(120)
def test_damaged_profiles_load_or_name_their_lines() -> None:
    assert fuzz(seed=14, n=1000) >= 1000


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("seed", range(10))
def test_damaged_profiles_at_length(long_fuzz: None, seed: int) -> None:
    fuzz(seed=100 + seed, n=1000)


def _through_the_command(tmp_path: Path, seed: int, n: int) -> None:
    rng = random.Random(seed)
    for k, (what, text) in enumerate(mutants(shipped("a64fx"), rng, n)):
        path = tmp_path / f"p{k}.yaml"
        path.write_bytes(text)
        start = time.perf_counter()
        done = run_sectormon("events", "--profile", str(path), timeout=30)
        assert time.perf_counter() - start < CASE_SECONDS, what
        assert done.returncode in (0, 2) and "Traceback" not in done.stderr, (what, done.stderr)
        if done.returncode == 2:
            assert all(
                line.startswith(f"sectormon: {path}") or line.startswith(f"{path}")
                for line in done.stderr.splitlines()
            ), (what, done.stderr)


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_damaged_profiles_through_the_command(tmp_path: Path) -> None:
    _through_the_command(tmp_path, seed=5, n=30)


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_damaged_profiles_through_the_command_at_length(long_fuzz: None, tmp_path: Path) -> None:
    _through_the_command(tmp_path, seed=6, n=300)
