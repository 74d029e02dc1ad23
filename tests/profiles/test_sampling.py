"""Profiles' sampling defaults and latency buckets: parsed, validated with FILE:LINE, round-tripped."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sectormon.data.samples import LatencyBucket
from sectormon.profiles.codec import profile_from_dict, profile_to_dict
from sectormon.profiles.model import SamplingDef
from sectormon.profiles.problems import ProfileError
from sectormon.profiles.resolve import load_profile

BASE = """\
name: tiny
counters: 2
events:
  REFILL: {code: 0x3, desc: L1D refills}
  FAULTS: {spec: page-faults}
groups:
  G: {events: [REFILL]}
"""


def load(tmp_path: Path, extra: str) -> object:
    path = tmp_path / "p.yaml"
    path.write_text(BASE + textwrap.dedent(extra))
    return load_profile(str(path))


def problems(tmp_path: Path, extra: str) -> list[str]:
    with pytest.raises(ProfileError) as info:
        load(tmp_path, extra)
    return str(info.value).splitlines()


def test_sampling_and_buckets_are_read(tmp_path: Path) -> None:
    profile = load(
        tmp_path,
        """\
        sampling: {event: REFILL, period: 10007}
        latency_buckets:
          - {name: L1 hit, max_cycles: 21, desc: fast}
          - {name: L2 hit, max_cycles: 148}
          - {name: memory}
        """,
    )
    assert profile.sampling == SamplingDef("REFILL", 10007)  # type: ignore[attr-defined]
    assert profile.latency_buckets == (  # type: ignore[attr-defined]
        LatencyBucket("L1 hit", 21.0, "fast"),
        LatencyBucket("L2 hit", 148.0),
        LatencyBucket("memory"),
    )


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("sampling: {event: REFIL, period: 5}\n", "p.yaml:8: sampling: unknown event 'REFIL' (did you mean"),
        ("sampling: {event: REFILL, period: 0}\n", "p.yaml:8: sampling: period must be a positive integer"),
        ("sampling: {event: REFILL, period: fast}\n", "p.yaml:8: sampling: period must be an integer"),
        ("sampling: {event: REFILL, rate: 5, period: 5}\n", "p.yaml:8: sampling: unknown key 'rate'"),
        (
            "latency_buckets:\n  - {name: a, max_cycles: 20}\n  - {name: b, max_cycles: 10}\n",
            "p.yaml:10: latency bucket 'b': max_cycles 10 must be > 0 and above the previous bucket's",
        ),
        (
            "latency_buckets:\n  - {name: a}\n  - {name: b, max_cycles: 10}\n",
            "p.yaml:9: latency bucket 'a' has no max_cycles but is not the last",
        ),
        (
            "latency_buckets:\n  - {name: a, max_cycles: 5}\n  - {name: a}\n",
            "p.yaml:10: latency bucket 'a' is defined twice",
        ),
        ("latency_buckets: {a: 1}\n", "p.yaml:8: latency_buckets must be a list"),
        ("latency_buckets:\n  - {max_cycles: 5}\n", "p.yaml:9: latency bucket without a name"),
    ],
)
def test_bad_sampling_sections_name_the_line_and_the_fix(tmp_path: Path, extra: str, expected: str) -> None:
    found = problems(tmp_path, extra)
    assert any(line.startswith(str(tmp_path / expected)) for line in found), found


@pytest.mark.parametrize("name", ["a64fx", "generic"])
def test_builtin_profiles_sample_a_cataloged_event_and_round_trip(name: str) -> None:
    profile = load_profile(name)
    assert profile.sampling is not None and profile.sampling.event in profile.events
    assert profile.latency_buckets and profile.latency_buckets[-1].max_cycles is None
    bounds = [b.max_cycles for b in profile.latency_buckets[:-1]]
    assert bounds == sorted(bounds)
    again = profile_from_dict(profile_to_dict(profile))
    assert (again.sampling, again.latency_buckets) == (profile.sampling, profile.latency_buckets)


def test_a64fx_buckets_are_l1_l2_memory() -> None:
    profile = load_profile("a64fx")
    assert [b.name for b in profile.latency_buckets] == ["L1 hit", "L2 hit", "memory"]
    assert profile.sampling == SamplingDef("L1D_CACHE_REFILL", 10007)
    assert profile.events["L1D_CACHE_REFILL"].code == 0x3


def test_a_recorded_profile_without_sampling_still_loads_and_stays_without() -> None:
    data = profile_to_dict(load_profile("generic"))
    del data["sampling"], data["latency_buckets"]
    again = profile_from_dict(data)
    assert again.sampling is None and again.latency_buckets == ()
    assert "sampling" not in profile_to_dict(again)
