"""The sampler with inherited root groups: found threads' counts appear once, unseen ones in the root."""

from __future__ import annotations

from collections.abc import Sequence

from sectormon.data.readings import Slice, Unit
from sectormon.profiles.model import EventDef, GroupDef, Profile
from sectormon.rotation.plan import plan_rotation, select_groups
from sectormon.rotation.sampler import Sampler
from tests.rotation.fake_source import FakeGroup, FakeSource
from tests.rows import readings_of


class InheritingGroup(FakeGroup):
    """A root's group also counts every thread of its family while they live, as the kernel's
    inherit does (the threads' own groups, opened when a poll finds them, count them again)."""

    def disable(self) -> None:
        if self.enabled_at is None:
            return
        begin, end = self.enabled_at, self.source.t
        alive = self.source.alive_span(self.unit, begin, end)
        if self.unit.inherit:
            alive += sum(
                self.source.alive_span(unit, begin, end)
                for unit, _start, _end in self.source.lifetimes.values()
                if unit.family == self.unit.family and not unit.inherit
            )
        for name in self.events:
            self.totals[name] = self.totals.get(name, 0.0) + alive * self.source.rates.get(name, 0.0)
        self.time_enabled += alive
        self.enabled_at = None


class InheritingSource(FakeSource):
    def open_group(self, unit: Unit, events: Sequence[EventDef]) -> FakeGroup:
        group = InheritingGroup(self, unit, tuple(e.name for e in events))
        self.groups.append(group)
        return group


def test_found_threads_count_once_and_unseen_ones_in_the_root() -> None:
    root = Unit("thread", 1, process=1, family=1, inherit=True)
    found = Unit("thread", 2, core=3, cmg=0, process=1, family=1)
    unseen = Unit("thread", 3, process=1, family=1)  # lives between two polls
    source = InheritingSource(
        {root.key: (root, 0, 1), found.key: (found, 0.025, 0.045), unseen.key: (unseen, 0.031, 0.034)},
        {"A": 1000.0},
        stop_at=0.08,
    )
    profile = Profile("t", "test", 8, {"A": EventDef("A", "ra")}, (GroupDef("G1", ("A",)),), ())
    slices: list[Slice] = []
    sampler = Sampler(
        source,
        plan_rotation(profile, select_groups(profile, None), {}),
        timeslice=0.01,
        on_slice=slices.append,
    )
    source.start()
    sampler.run()
    counts: dict[str, float] = {}
    for piece in slices:
        for reading in readings_of(piece):
            assert all(value >= 0 for value in reading.counts.values())
            assert 0 <= reading.time_running <= reading.time_enabled
            counts[reading.unit] = counts.get(reading.unit, 0) + reading.counts.get("A", 0)
    assert counts[found.key] == 15  # its own group: from the poll at 0.03 to its exit at 0.045
    assert unseen.key not in counts
    assert sum(counts.values()) == 80 + 20 + 3  # every thread's whole life, each once
