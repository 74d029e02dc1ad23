"""The sampler asks its source whose clock it runs on: what a source with a clock of its own spends
inside ``wait_until`` (the simulator runs its model there) is not the sampler's overhead, while a
wall-clock source only sleeps there."""

from __future__ import annotations

import time

import pytest

from sectormon.data.readings import Slice, Unit
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.rotation.plan import plan_rotation, select_groups
from sectormon.rotation.sampler import Sampler
from sectormon.sources.base import Capabilities
from tests.rotation.fake_source import FakeSource

BURN = 0.005  # CPU seconds each wait takes
SLICES = 20


class _BusyWaits(FakeSource):
    """Spends :data:`BURN` CPU seconds in every ``wait_until``, as a model running to the deadline."""

    def wait_until(self, t: float) -> None:
        end = time.thread_time() + BURN
        while time.thread_time() < end:
            pass
        super().wait_until(t)


def _overhead(wall_clock: bool) -> float:
    """The sampler's overhead at the last of :data:`SLICES` slices."""
    unit = Unit("thread", 1, core=0, cmg=0)
    source = _BusyWaits({unit.key: (unit, 0.0, 10.0)}, {"A": 1000.0}, stop_at=SLICES * 0.01)
    source.capabilities = Capabilities(wall_clock=wall_clock)
    profile = Profile("t", "test", 8, {"A": EventDef("A", "ra")}, (GroupDef("G", ("A",)),), ())
    slices: list[Slice] = []
    sampler = Sampler(
        source,
        plan_rotation(profile, select_groups(profile, None), {}),
        timeslice=0.01,
        on_slice=slices.append,
    )
    source.start()
    sampler.run()
    assert len(slices) == SLICES
    return slices[-1].overhead_s


def test_a_wall_clock_source_s_wait_counts_as_the_sampler_s() -> None:
    assert _overhead(wall_clock=True) >= 0.9 * SLICES * BURN


def test_a_source_with_its_own_clock_keeps_what_its_wait_costs() -> None:
    # Rescaled to the source's clock (0.2 s of it in at least 0.1 s of wall clock): at most twice
    # the sampler's own CPU, far below what the waits burned.
    assert _overhead(wall_clock=False) == pytest.approx(0.0, abs=0.5 * SLICES * BURN)
