"""Hostile YAML in a profile: one ``file:line`` problem each, at once, never a hang, a
RecursionError, a crash of the C composer or a ValueError from int()."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from sectormon.profiles.build import parse_profile
from sectormon.profiles.problems import ProfileError
from sectormon.profiles.resolve import BUILTIN_DIR, builtin_profiles, load_profile
from sectormon.profiles.safe_yaml import MAX_BYTES, load_top_level_key
from tests.e2e.helpers import run_sectormon
from tests.yaml_cases import HOSTILE


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("name", "text", "line", "words"), HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_yaml_is_one_problem_with_its_line(
    tmp_path: Path, name: str, text: str, line: int, words: str
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: hostile\n" + text, encoding="utf-8")
    start = time.perf_counter()
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    assert time.perf_counter() - start < 2
    first = next(p for p in info.value.problems if words in p.problem)
    assert first.line == line, info.value.problems
    assert all("\n" not in p.render(str(path)) for p in info.value.problems)


def test_a_profile_that_is_not_utf8_or_too_large_is_one_line(tmp_path: Path) -> None:
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ProfileError, match=r"latin1\.yaml: cannot read profile: line 1: not UTF-8"):
        load_profile(str(latin1))
    huge = tmp_path / "huge.yaml"
    huge.write_bytes(b"# " + b"x" * MAX_BYTES + b"\n")
    with pytest.raises(ProfileError, match=r"huge\.yaml: cannot read profile: larger than 1024 KiB"):
        load_profile(str(huge))


def test_the_shipped_profiles_are_within_the_bounds() -> None:
    assert load_profile("a64fx").events and load_profile("generic").events


@pytest.mark.e2e
def test_hostile_profiles_through_the_command(tmp_path: Path) -> None:
    for i, (name, text, line, words) in enumerate(HOSTILE):
        path = tmp_path / f"p{i}.yaml"
        path.write_text("name: hostile\n" + text, encoding="utf-8")
        done = run_sectormon("events", "--profile", str(path), timeout=30)
        assert done.returncode == 2, (name, done.stderr)
        assert "Traceback" not in done.stderr and f"{path}:{line}: " in done.stderr and words in done.stderr


def test_a_control_character_is_one_problem_with_its_line(tmp_path: Path) -> None:
    """Found by the fuzzer: YAML's reader names a position over two lines; it is a line here."""
    path = tmp_path / "p.yaml"
    path.write_bytes(b"name: x\ndescription: a\x08b\n")
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    assert str(info.value) == (
        f"{path}:2: YAML syntax error: unacceptable character #x0008: control characters are not allowed "
        "(fix the YAML syntax at this line)"
    )


def test_a_damaged_recorded_profile_is_one_line() -> None:
    """Found by the fuzzer: a recording's profile with several faults printed one line each."""
    from sectormon.profiles.codec import profile_from_dict, profile_to_dict

    data = profile_to_dict(load_profile("generic"))
    data["counters"] = 1
    with pytest.raises(ProfileError) as info:
        profile_from_dict(data, source="run.jsonl")
    message = str(info.value)
    assert "\n" not in message and message.startswith("run.jsonl: bad profile in header: group ")
    assert "more)" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: x\nmatch: {a64fx: true}\nevents: {A: 1}\n", {"a64fx": True}),
        ("match: {}\n", {}),
        ("name: x\nevents: {A: 1}\n", None),  # no such key
        ("- a\n- b\n", None),  # not a mapping
        ("", None),
    ],
)
def test_one_top_level_key_is_read_alone(text: str, expected: object) -> None:
    assert load_top_level_key(text, "match") == expected


def test_a_top_level_key_is_read_before_a_fault_after_it() -> None:
    """Only the keys up to the one asked for are composed: a fault further on is not reached (the
    file is parsed whole, and refused, when it is loaded)."""
    text = "match: {model: X}\nevents: [unclosed\n"
    assert load_top_level_key(text, "match") == {"model": "X"}
    with pytest.raises(yaml.YAMLError):
        load_top_level_key(text, "events")


def test_the_shipped_profiles_match_is_the_one_their_parse_gives() -> None:
    for name in builtin_profiles():
        text = (BUILTIN_DIR / f"{name}.yaml").read_text(encoding="utf-8")
        assert load_top_level_key(text, "match") == parse_profile(text, name)[1]
