"""-e EVENTS as an ad-hoc profile on the profile in use: names, scopes, groups, metrics."""

from __future__ import annotations

import pytest

from sectormon.errors import UsageError
from sectormon.profiles.adhoc import adhoc_profile
from sectormon.profiles.codec import profile_from_dict, profile_to_dict
from sectormon.profiles.event_list import parse_event_list
from sectormon.profiles.resolve import load_profile


def adhoc(text: str, base: str = "a64fx"):  # type: ignore[no-untyped-def]
    return adhoc_profile(load_profile(base), parse_event_list(text))


def test_a_raw_code_the_profile_knows_takes_its_name_and_scope() -> None:
    made = adhoc("r0250,r0308")
    assert list(made.profile.events) == ["L1_PIPE0_VAL_IU_TAG_ADRS_SCE", "L2_MISS_WAIT"]
    assert made.profile.events["L2_MISS_WAIT"].scope == "cmg"
    assert made.labels["L2_MISS_WAIT"] == "L2_MISS_WAIT"


def test_an_unknown_raw_code_is_a_per_pe_event_shown_as_typed() -> None:
    made = adhoc("r0bad:u")
    event = made.profile.events["r0bad"]
    assert (event.spec, event.code, event.scope) == ("r0bad", 0xBAD, "pe")
    assert made.labels["r0bad"] == "r0bad:u"
    assert made.levels == "u"


def test_a_generic_name_the_profile_knows_is_its_event_shown_as_perf_names_it() -> None:
    made = adhoc("page-faults,task-clock", base="generic")
    assert list(made.profile.events) == ["PAGE_FAULTS", "TASK_CLOCK"]
    assert made.labels == {"PAGE_FAULTS": "page-faults", "TASK_CLOCK": "task-clock"}
    # The profile's metrics whose inputs are all counted come along, with their units.
    assert [m.name for m in made.profile.metrics] == ["cpu_utilization", "page_fault_rate"]


def test_a_generic_name_on_a_profile_without_it_counts_nanoseconds_for_the_clocks() -> None:
    made = adhoc("task-clock,L1-dcache-load-misses")
    assert made.profile.events["task_clock"].unit == "ns"
    assert made.profile.events["L1_dcache_load_misses"].unit == "count"


def test_the_metrics_follow_only_when_every_input_is_counted() -> None:
    assert [m.name for m in adhoc("L1D_CACHE,L1D_CACHE_REFILL").profile.metrics] == ["L1D_miss_rate"]
    assert adhoc("L1D_CACHE").profile.metrics == ()


def test_loose_events_fill_groups_of_the_counter_count_and_braces_stay_groups() -> None:
    codes = ",".join(f"r{0x1000 + n:x}" for n in range(10))
    made = adhoc("{r0011,r0008}," + codes)
    sizes = [(g.name, len(g.events)) for g in made.profile.groups]
    assert sizes == [("G1", 2), ("E1", 8), ("E2", 2)]
    assert made.profile.groups[0].events == ("CPU_CYCLES", "INST_RETIRED")


def test_a_group_larger_than_the_pmu_is_refused() -> None:
    codes = ",".join(f"r{0x1000 + n:x}" for n in range(9))
    with pytest.raises(UsageError, match=r"has 9 events .* 8 counters"):
        adhoc("{" + codes + "}")


def test_modifiers_are_one_setting_per_run() -> None:
    with pytest.raises(UsageError, match=r"different levels \(:k, :u\)"):
        adhoc("cycles:u,instructions:k")


@pytest.mark.parametrize(("text", "levels"), [("cycles:uk", "uk"), ("{cycles}:k", "k"), ("cycles", "")])
def test_the_levels_asked_for(text: str, levels: str) -> None:
    assert adhoc(text).levels == levels


def test_the_profile_reads_back_from_a_recording() -> None:
    made = adhoc("page-faults,r0bad,{cycles,instructions}", base="generic").profile
    assert profile_from_dict(profile_to_dict(made)) == made


def test_a_base_event_keeps_the_modifiers_typed_in_its_label() -> None:
    assert adhoc("r0250:u").labels == {"L1_PIPE0_VAL_IU_TAG_ADRS_SCE": "L1_PIPE0_VAL_IU_TAG_ADRS_SCE:u"}
