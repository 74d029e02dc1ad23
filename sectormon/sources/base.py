"""The counter-source protocol the sampler drives (perf and the simulated A64FX implement it).

A source knows its units (threads, CPUs, CMG stand-ins), opens counter groups on them, and owns the
clock: perf waits on the wall clock, the simulator advances simulated time to the deadline. The
sampler therefore runs the same rotation code against both. Where the two differ, the callers ask
the source's :class:`Capabilities` (and :meth:`Source.end_note` for how a target ended) instead of
its name, so a third source only states what it can do. :class:`SourceBase` gives the documented
defaults of what only some sources can do (launch a command, switch sectors).

Longer notes: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sectormon.data.binding import ThreadBinding
from sectormon.data.hotspots import DEFAULT_TOP, HotspotSettings
from sectormon.data.readings import ProcessInfo, Unit
from sectormon.data.regions import RegionSnapshot
from sectormon.data.samples import SampleBatch
from sectormon.errors import SectormonError, UsageError
from sectormon.host.cpu_time import TargetCpu
from sectormon.perf.group import GroupValues
from sectormon.perf.probe import ProbeResult
from sectormon.profiles.model import EventDef, Profile


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a source can do, which sessions and the sampler ask instead of branching on its name.

    Every one defaults to the least a source may offer (the simulator's case): a source turns on
    what it has.
    """

    multiplexes: bool = False
    """The kernel can keep every group open at once and rotate them on the PMU itself (kernel
    rotation, and ``--rotation auto``'s switch to it when over the overhead budget)."""

    wall_clock: bool = False
    """Its seconds are wall-clock seconds: :meth:`Source.wait_until` sleeps, and the CPU the
    sampler uses is overhead on the node (an overhead budget applies). Otherwise the source's model
    runs inside ``wait_until`` and its clock is its own."""

    follows_threads: bool = False
    """Its units are threads found and lost as the target's processes run; otherwise the set of
    units is fixed (CPUs, simulated threads) and every unit is there for the whole session."""

    task_time: bool = False
    """It counts each thread's task time (the kernel's ``task-clock``), by which a proxy's
    stand-ins' counts are scaled."""

    launches: bool = False
    """It launches the program it counts, with an environment :meth:`Source.add_environment`
    adds to before :meth:`Source.start`: what a marked program's regions need (the marker
    library finds sectormon through it, :mod:`sectormon.rotation.markers`)."""


class CounterGroup(Protocol):
    """An open group of counters on one unit (leader + members), created disabled."""

    events: tuple[str, ...]

    def enable(self) -> None: ...

    def disable(self) -> None: ...

    def reset(self) -> None: ...

    def read(self) -> GroupValues: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class UnitsUpdate:
    """The units alive now, the keys of those that ended since the previous poll, the
    processes first seen by this poll (their threads' units carry ``Unit.process``) and the
    thread units whose binding this poll read first or found changed."""

    alive: tuple[Unit, ...]
    ended: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=())
    processes: tuple[ProcessInfo, ...] = ()
    bindings: tuple[tuple[str, ThreadBinding], ...] = ()


@dataclass(frozen=True, slots=True)
class SampleRequest:
    """``--sample EVENT[:PERIOD]``: sample ``event`` (a profile event or, on perf, an event spec)
    every ``period`` events (None: the source's default for that event); frames show ``top`` rows."""

    event: str
    period: int | None = None
    top: int = DEFAULT_TOP


class SampleFeed(Protocol):
    """A source's samples for a session's hot spots, taken once per frame window.

    The feed gathers and attributes samples off the sampler's path (perf: a thread of its own
    drains the ring buffers; the simulator: its model records them as it runs), so a take only
    hands over what was gathered.
    """

    settings: HotspotSettings

    def take(self, t: float, *, final: bool = False) -> SampleBatch:
        """The samples since the last take, with the lost ones and the event's counted total over
        the same time; ``final`` drains everything (the session ends)."""
        ...

    def warnings(self) -> list[str]:
        """What went wrong since the last call (said once each)."""
        ...

    def close(self) -> None: ...


class Source(Protocol):
    """A counter source the sampler can rotate groups on."""

    kind: str  # the source's name in the header ("perf", "sim"): data, never branched on
    capabilities: Capabilities
    default_timeslice: float  # seconds of this source's clock
    default_interval: float

    def default_recent(self, interval: float) -> float:
        """The rolling window when none is asked for."""
        ...

    def start(self) -> None:
        """Begin: launch the command, start the model. Time 0 of the session is now."""

    def add_environment(self, env: Mapping[str, str]) -> None:
        """Variables for the program it launches (only with ``capabilities.launches``)."""

    def now(self) -> float:
        """Seconds since :meth:`start` on this source's clock."""
        ...

    def wait_until(self, t: float) -> None:
        """Return when the source clock reaches ``t`` (sleep, or simulate up to ``t``), or
        earlier once :meth:`wake` is called."""

    def wake(self) -> None:
        """Cut the sampler's wait short (from any thread): a wait in progress, or the next one,
        returns now, so something waiting for the sampler thread (a control command) is done
        within the wait's time, not a whole timeslice later. The sampler finds out itself why it
        woke up."""

    def poll_units(self) -> UnitsUpdate:
        """Current units; new ones appear, ended ones are reported once."""
        ...

    def cmg_units(self) -> tuple[Unit, ...]:
        """One unit per CMG for CMG-scoped events (empty when CMG counting is unavailable)."""
        ...

    @property
    def cmg_unavailable_reason(self) -> str | None:
        """Why CMG-wide counting is impossible here, or ``None`` when it works."""
        ...

    def open_group(self, unit: Unit, events: Sequence[EventDef]) -> CounterGroup:
        """Open ``events`` as one group on ``unit``, disabled."""
        ...

    def probe(self, events: Sequence[EventDef]) -> Mapping[str, ProbeResult]:
        """Test each event once on this host."""
        ...

    def needs_counter(self, event: EventDef) -> bool:
        """Whether ``event`` takes one of the PMU's counters (else it is counted all the time)."""
        ...

    def finished(self) -> bool:
        """True once the target has exited (command or pid mode); a CPU-wide session never finishes."""
        ...

    @property
    def exit_code(self) -> int | None:
        """A launched command's exit code once it ended by itself (negative: a signal), else None."""
        ...

    def end_note(self) -> str | None:
        """How the target ended, in words, when it ended by itself with a status other than 0
        (a crash must not look like a normal end); ``None`` otherwise."""
        ...

    def describe(self) -> dict[str, Any]:
        """JSON-able facts for the header: target, source parameters, sector configuration."""
        ...

    def cpu_description(self) -> str:
        """The CPU in words, as ``sectormon check`` names it."""
        ...

    def topology_json(self) -> dict[str, Any]:
        """The topology for the header."""
        ...

    def sector_presets(self) -> tuple[str, ...]:
        """Sector configurations this source can switch to while running (else empty)."""
        ...

    def sector_config_for(self, name: str) -> dict[str, Any] | None:
        """The ``sector_config`` preset ``name`` gives, or ``None`` when unknown."""
        ...

    def apply_sector_preset(self, name: str) -> None:
        """Switch to preset ``name`` (called on the sampler thread, between slices)."""

    def open_sampling(self, request: SampleRequest, profile: Profile) -> SampleFeed:
        """Start sampling ``request`` on the started source (before its target runs)."""
        ...

    def read_regions(self) -> RegionSnapshot | None:
        """The regions the source's own workload marks (the simulator's kernels), when they changed
        since the previous call, else ``None``; a launched program's marked regions come through
        the sampler's :class:`~sectormon.rotation.markers.MarkerService` instead."""
        ...

    def target_cpu(self) -> TargetCpu | None:
        """The CPU seconds the target has used so far by the kernel's account (its threads, ended
        ones and reaped children included) and the system part of it of counted processes that
        ended, the reference of thread coverage; ``None`` when the source cannot tell (a
        CPU-wide session)."""
        ...

    def units_cpu_seconds(self, units: Sequence[Unit]) -> Mapping[str, float]:
        """The CPU seconds each thread of ``units`` has run so far, by unit key, for choosing
        proxy stand-ins that run; empty when the source cannot tell or every unit is always
        there (CPUs, simulated cores)."""
        ...

    def close(self) -> None: ...


class SourceBase:
    """Defaults for :class:`Source`: none of the :class:`Capabilities`, no command, no CMG
    restriction, no live sector switching, no sampling, no kernel figure of the target's CPU time,
    no wait cut short by :meth:`wake`, no regions of its own."""

    capabilities = Capabilities()
    default_recent_seconds = 10.0

    def default_recent(self, interval: float) -> float:
        return self.default_recent_seconds

    def needs_counter(self, event: EventDef) -> bool:
        return True

    def wake(self) -> None:
        """Nothing: a source whose wait cannot be cut short is woken by its next deadline."""

    @property
    def cmg_unavailable_reason(self) -> str | None:
        return None

    @property
    def exit_code(self) -> int | None:
        return None

    def end_note(self) -> str | None:
        return None

    def sector_presets(self) -> tuple[str, ...]:
        return ()

    def sector_config_for(self, name: str) -> dict[str, Any] | None:
        return None

    def apply_sector_preset(self, name: str) -> None:
        raise SectormonError(f"this source cannot switch the sector configuration (asked for {name!r})")

    def add_environment(self, env: Mapping[str, str]) -> None:
        raise SectormonError("this source launches no program to give an environment to")

    def read_regions(self) -> RegionSnapshot | None:
        return None

    def open_sampling(self, request: SampleRequest, profile: Profile) -> SampleFeed:
        raise UsageError(f"--sample {request.event}: this source cannot sample (perf and sim can)")

    def target_cpu(self) -> TargetCpu | None:
        return None

    def units_cpu_seconds(self, units: Sequence[Unit]) -> Mapping[str, float]:
        return {}
