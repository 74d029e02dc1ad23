"""The profile rules on their own: the order of the problems, lines from the caller, metric inputs."""

from __future__ import annotations

from dataclasses import replace

from sectormon.data.samples import LatencyBucket
from sectormon.profiles.model import EventDef, GroupDef, MetricDef, Profile, SamplingDef
from sectormon.profiles.problems import KeyPath
from sectormon.profiles.validate import check_profile

CYC = EventDef("CYC", "r11", "", 0x11)
INS = EventDef("INS", "r8", "", 0x8)
CMG = EventDef("CMG", "r309", "", 0x309, scope="cmg")


def profile(**changes: object) -> Profile:
    good = Profile(
        name="p",
        description="",
        counters=2,
        events={"CYC": CYC, "INS": INS, "CMG": CMG},
        groups=(GroupDef("G", ("CYC", "INS")),),
        metrics=(
            MetricDef("ipc", "INS / CYC", "", ""),
            MetricDef("per_ipc", "ipc * 2 + CMG", "", ""),
        ),
    )
    return replace(good, **changes)  # type: ignore[arg-type]


def no_lines(path: KeyPath) -> int | None:
    return None


def test_a_good_profile_has_no_problems_and_its_metrics_inputs_include_earlier_metrics() -> None:
    problems, inputs = check_profile(profile(), no_lines)
    assert problems == []
    assert inputs == {"ipc": frozenset({"CYC", "INS"}), "per_ipc": frozenset({"CYC", "INS", "CMG"})}


def test_problems_come_in_rule_order_whatever_the_profile_order() -> None:
    """A recording's one-line error names the first problem: the rules' order decides which."""
    bad = profile(
        counters=0,
        events={"CYC": CYC, "INS": replace(INS, scope="core"), "min": replace(CMG, code=None)},
        groups=(GroupDef("G", ("CYC", "NOPE")),),
        metrics=(MetricDef("ipc", "INS / LATER", "", ""), MetricDef("LATER", "1", "", "")),
        sampling=SamplingDef("CYC", 0),
        latency_buckets=(LatencyBucket("", 4.0, ""),),
    )
    problems, _ = check_profile(bad, no_lines)
    assert [p.problem for p in problems] == [
        "counters must be a positive integer, not 0",
        "event name 'min' is reserved",
        "event INS: unknown scope 'core'",
        "group G has 2 events but the PMU counts 0 at once",
        "group G: unknown event 'NOPE'",
        "metric ipc: formula uses metric LATER, defined later",
        "sampling: period must be a positive integer, not 0",
        "latency bucket without a name",
    ]
    assert all(p.line is None for p in problems)


def test_lines_come_from_the_callers_key_paths() -> None:
    seen: list[KeyPath] = []

    def line_of(path: KeyPath) -> int:
        seen.append(path)
        return 7

    problems, _ = check_profile(profile(metrics=(MetricDef("ipc", "INS / CYCLES", "", ""),)), line_of)
    assert [(p.line, p.problem, p.fix) for p in problems] == [
        (7, "metric ipc: unknown name 'CYCLES' in formula", "did you mean CYC?")
    ]
    assert seen == [("metrics", "ipc", "formula")]


def test_unknown_counters_do_not_judge_group_sizes() -> None:
    too_big = profile(counters=1)
    assert check_profile(too_big, no_lines, counters_known=False)[0] == []
    assert [p.problem for p in check_profile(too_big, no_lines)[0]] == [
        "group G has 2 events but the PMU counts 1 at once"
    ]
