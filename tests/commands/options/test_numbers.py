"""Every numeric option of every command: a documented range, checked by the one helper, and a
value outside it is one line naming the option and the range (exit 2)."""

from __future__ import annotations

import argparse
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.cli import SUBCOMMANDS, build_parser, main
from sectormon.commands.options import numbers
from sectormon.commands.options.numbers import Range, RangeParser
from sectormon.errors import UsageError


def _parsers() -> dict[str, argparse.ArgumentParser]:
    return {"sectormon": build_parser(None), **{f"sectormon {n}": build_parser(n) for n in SUBCOMMANDS}}


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    out = list(parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _actions(sub)
    return out


def test_no_numeric_option_is_parsed_without_a_range() -> None:
    """A bare ``type=int``/``type=float`` accepted 1e-308, nan, 0 or 2^64 and left each command to
    check (or forget) the value itself."""
    bare = [
        f"{prog} {action.option_strings[0]}"
        for prog, parser in _parsers().items()
        for action in _actions(parser)
        if action.type in (int, float)
    ]
    assert bare == []


def test_every_ranged_option_documents_its_range() -> None:
    for prog, parser in _parsers().items():
        for action in _actions(parser):
            if isinstance(action.type, numbers.ClockParser):  # the range depends on the source
                assert action.help, (prog, action.dest)
                for clock, bounds in action.type.by_clock.items():
                    assert f"{clock}: {bounds.describe()}" in action.help, (prog, action.dest)
            elif isinstance(action.type, RangeParser):
                assert action.help, (prog, action.dest)
                assert action.type.bounds.describe() in action.help, (prog, action.dest)


@pytest.mark.parametrize(
    "argv",
    [
        ["--pid", "1", "--interval", "0"],
        ["--pid", "1", "--interval", "100000"],
        ["--pid", "1", "--interval", "soon"],
        ["--pid", "1", "--interval", "-1"],
    ],
)
def test_a_session_time_out_of_range_states_the_one_range_of_its_source(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--interval 0`` said "> 0 and <= 315360000" while ``--interval 100000`` said "0.001 to
    86400": the range argparse checked before the source was known, then the source's."""
    assert main([*argv, "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("give a number of seconds from 0.001 to 86400"), err
    assert "315360000" not in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--pid", "²"], "--pid '²': give a whole number"),
        (["--pid", "２"], "--pid '２': give a whole number"),  # int() reads fullwidth digits: pid 2
        (["--pid", "1,٣"], "--pid '٣': give a whole number"),
        (["--pid", "1_0"], "--pid '1_0': give a whole number"),
        (["--cpus", "２"], "'２' is not a CPU number or range"),
        (["--cpus", "0-１"], "'0-１' is not a CPU number or range"),
        (["--count", "３"], "--count '３': give a whole number"),
        (["--pid", "1", "--interval", "０.５"], "--interval '０.５': give a number of seconds"),
        (["--sample", "page-faults:１０", "--", "true"], "--sample page-faults:１０"),
    ],
)
def test_pids_cpu_lists_and_numbers_are_ascii_digits_only(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--json", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["replay", "x.jsonl", "--json", "--speed", "1e-308"],
            "--speed 1e-308: give a speed from 0.01 to 10000",
        ),
        (["replay", "x.jsonl", "--json", "--speed", "0"], "--speed 0.0: give a speed from 0.01 to 10000"),
        (["replay", "x.jsonl", "--json", "--speed", "nan"], "--speed nan: give a speed"),
        (["replay", "x.jsonl", "--json", "--from", "inf"], "--from inf: give a number of seconds from 0"),
        (["replay", "x.jsonl", "--json", "--to", "-1"], "--to -1.0: give a number of seconds from 0"),
        (["--cpus", "", "--json"], "--cpus: empty CPU list"),
        (
            ["--timeslice", "1e-9", "--json"],
            "--timeslice 1e-09: give a number of simulated seconds from 1e-06",
        ),
        (
            ["--pid", "1", "--timeslice", "1e-9", "--json"],
            "--timeslice 1e-09: give a number of seconds from 0.001",
        ),
        (["--pid", "1", "--interval", "1e9", "--json"], "--interval 1000000000.0: give a number of seconds"),
        (["--recent", "1e-300", "--json"], "--recent 1e-300: give a number of simulated seconds"),
        (["--timeslice", "abc", "--json"], "--timeslice 'abc': give a number of simulated seconds"),
        (["--count", "0", "--json"], "--count 0: give a whole number from 1 to 1000000000 frames"),
        (["--count", "1.5", "--json"], "--count '1.5': give a whole number"),
        (["--duration", "0", "--json"], "--duration 0.0: give a number of seconds > 0"),
        (["--baseline-after", "-1", "--json"], "--baseline-after -1.0: give a number of seconds from 0"),
        (["--pid", "0", "--json"], "--pid 0: give a whole number from 1 to 2147483647"),
        (["--pid", str(2**64), "--json"], f"--pid {2**64}: give a whole number from 1"),
        (
            ["--pid", "12,,13", "--json"],
            "--pid '12,,13': give a whole number from 1 to 2147483647, or several",
        ),
        (["--pid", "12,0", "--json"], "--pid 0: give a whole number from 1 to 2147483647"),
        (["--cpus", "0", "--no-children", "--json"], "--no-children applies to --pid and -- CMD"),
        (["--no-children", "--json"], "--no-children applies to --pid and -- CMD"),
        (["sim", "--json", "--threads", "0"], "--threads 0: give a whole number from 1 to 48"),
        (["sim", "--json", "--warmup", "2"], "--warmup 2.0: give a number of simulated seconds from 0 to 1"),
        (["sim", "--json", "--seed", "-1"], "--seed -1: give a whole number from 0"),
        (["sim", "--json", "--l2-ways", "17"], "--l2-ways 17: give a whole number from 1 to 16 ways"),
        (["sim", "--json", "--interval", "1e-7"], "--interval 1e-07: give a number of simulated seconds"),
        (["fapp", "x", "--width", "39"], "--width 39: give a whole number from 40 to 1000 columns"),
        (["hotspots", "--freq", "0", "--", "true"], "--freq 0: give a whole number from 1"),
        (["hotspots", "--mmap-pages", "0", "--", "true"], "--mmap-pages 0: give a whole number from 1"),
        (["hotspots", "--line-size", "4", "--", "true"], "--line-size 4: give a whole number from 8"),
    ],
)
def test_a_value_out_of_range_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sectormon: ") and len(err.splitlines()) == 1, err
    assert message in err, err


@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 1e6), st.floats(0, 1e6))
def test_check_accepts_exactly_the_range(value: float, a: float, b: float) -> None:
    low, high = min(a, b), max(a, b)
    for low_open in (False, True):
        bounds = Range(low, high, low_open=low_open)
        inside = math.isfinite(value) and (value > low if low_open else value >= low) and value <= high
        if inside:
            bounds.check("--x", value)
        else:
            with pytest.raises(UsageError, match=r"^--x "):
                bounds.check("--x", value)


@given(st.text(max_size=30))
def test_the_parser_never_raises_anything_but_a_usage_error(text: str) -> None:
    for bounds in (numbers.SPEED, numbers.COUNT, numbers.DURATION, numbers.PID):
        try:
            value = bounds.parser("--x")(text)
        except UsageError as exc:
            assert str(exc).startswith("--x ") and "\n" not in str(exc)
        else:
            assert bounds.contains(value)


@given(st.lists(st.integers(1, 2**31 - 1), min_size=1, max_size=5), st.text(max_size=20))
def test_a_pid_list_is_its_pids_and_anything_else_a_usage_error(pids: list[int], text: str) -> None:
    parse = numbers.ListParser(numbers.PID, "--pid")
    assert parse(",".join(map(str, pids))) == tuple(pids)
    try:
        parsed = parse(text)
    except UsageError as exc:
        assert str(exc).startswith("--pid ") and "\n" not in str(exc)
    else:
        assert parsed and all(numbers.PID.contains(pid) for pid in parsed)
