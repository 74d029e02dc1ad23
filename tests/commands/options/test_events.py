"""-e EVENTS on a run: the profile it makes, its modifiers against --include-kernel, and the
monitor's JSON stream counting exactly the events asked for."""

from __future__ import annotations

import argparse
import json

import pytest

from sectormon.commands.options.events import OPTION, add_events_option, run_events
from sectormon.errors import UsageError
from sectormon.profiles.resolve import load_profile
from tests.e2e.helpers import run_sectormon, workload
from tests.regions.regions_helpers import need_perf


def args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_events_option(parser)
    parser.add_argument("--include-kernel", action="store_true")
    parser.add_argument("--groups")
    return parser.parse_args(argv)


def test_without_e_the_profile_runs_as_it_is() -> None:
    base = load_profile("generic")
    events = run_events(args(), base)
    assert (events.profile, events.required, events.include_kernel) == (base, None, False)


def test_e_makes_the_profile_and_requires_its_events() -> None:
    events = run_events(args("-e", "page-faults:uk"), load_profile("generic"))
    assert list(events.profile.events) == ["PAGE_FAULTS"]
    assert (events.required, events.include_kernel, events.exclude_user) == (OPTION, True, False)


def test_k_counts_kernel_mode_alone() -> None:
    events = run_events(args("-e", "page-faults:k"), load_profile("generic"))
    assert (events.include_kernel, events.exclude_user) == (True, True)


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (("-e", "cycles:u", "--include-kernel"), "user mode only"),
        (("-e", "cycles", "--groups", "HW1"), "give one"),
    ],
)
def test_contradicting_options_are_refused(argv: tuple[str, ...], problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        run_events(args(*argv), load_profile("generic"))


@pytest.mark.e2e
@pytest.mark.syscall
def test_the_monitor_streams_exactly_the_events_asked_for() -> None:
    need_perf()
    run = run_sectormon("--json", "-e", "page-faults,task-clock", "--", *workload("pagefaults.py", 2000, 0.2))
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    header, final = lines[0], lines[-1]
    assert list(header["profile"]["events"]) == ["PAGE_FAULTS", "TASK_CLOCK"]
    assert final["run"]["total"]["counts"]["PAGE_FAULTS"] >= 2000
