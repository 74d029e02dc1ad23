"""The counter-source protocol the sampler drives (perf and the simulated A64FX implement it).

A source knows its units (threads, CPUs, CMG stand-ins), opens counter groups on them, and owns the
clock: perf waits on the wall clock, the simulator advances simulated time to the deadline. The
sampler therefore runs the same rotation code against both.

Replay and fapp import are sources too in the design, but they yield ready-made :class:`Slice`
records instead of being sampled, so they do not implement this protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sectormon.profiles.model import EventDef
from sectormon.readings import GroupValues, Unit

PROBE_STATES = ("counts", "zero", "unsupported")


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What a short test count of one event on this host showed.

    ``counts``: opened and counted something. ``zero``: opened but never counted (suspicious, not a
    measured zero: an unsupported implementation-defined code may do this). ``unsupported``: the
    open failed; ``reason`` carries the errno name and the explanation.
    """

    event: str
    state: str
    reason: str = ""
    value: int = 0


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
    """The units alive now, and the keys of those that ended since the previous poll."""

    alive: tuple[Unit, ...]
    ended: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=())


class Source(Protocol):
    """A counter source the sampler can rotate groups on."""

    kind: str  # "perf" | "sim"

    def start(self) -> None:
        """Begin: launch the command, start the model. Time 0 of the session is now."""

    def now(self) -> float:
        """Seconds since :meth:`start` on this source's clock."""
        ...

    def wait_until(self, t: float) -> None:
        """Return when the source clock reaches ``t`` (sleep, or simulate up to ``t``)."""

    def poll_units(self) -> UnitsUpdate:
        """Current units; new ones appear, ended ones are reported once."""
        ...

    def cmg_units(self) -> tuple[Unit, ...]:
        """One unit per CMG for CMG-scoped events (empty when CMG counting is unavailable)."""
        ...

    def open_group(self, unit: Unit, events: Sequence[EventDef]) -> CounterGroup:
        """Open ``events`` as one group on ``unit``, disabled."""
        ...

    def probe(self, events: Sequence[EventDef]) -> Mapping[str, ProbeResult]:
        """Test each event once on this host."""
        ...

    def finished(self) -> bool:
        """True once the target has exited (command or pid mode); a CPU-wide session never finishes."""
        ...

    def describe(self) -> dict[str, Any]:
        """JSON-able facts for the header: target, source parameters, sector configuration."""
        ...

    def close(self) -> None: ...
