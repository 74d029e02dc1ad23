"""Typed options of a live session: what a front end asks for, and what the session runs with."""

from __future__ import annotations

from dataclasses import dataclass

from sectormon.errors import UsageError
from sectormon.metrics.proxy import check_per_cmg
from sectormon.rotation.plan import AUTO, Rotation
from sectormon.session.control_channel import ControlFds
from sectormon.sources.base import SampleRequest, Source

DEFAULT_MAX_OVERHEAD = 2.0
"""--max-overhead's default: the sampler's budget in % of one core."""

UNTIL_ENABLED = -1.0
"""``--delay -1``: counting starts disabled and waits for an ``enable`` on ``--control``."""


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """How a session samples and when it stops (times on the source's clock)."""

    interval: float = 1.0
    timeslice: float = 0.02
    recent_seconds: float = 10.0
    count: int | None = None
    duration: float | None = None
    baseline_after: float | None = None
    record: str | None = None
    rotation: Rotation | None = None  # None: sync at ``timeslice``; open_session decides
    max_overhead: float | None = None  # fraction of one core (None: no budget)
    may_switch: bool = False  # over budget, sync may switch to kernel rotation (--rotation auto)
    proxy: int | None = None  # stand-ins per CMG (--proxy; None: every unit counts every group)
    control: ControlFds | None = None  # --control's open descriptors
    delay: float | None = None  # --delay in seconds (UNTIL_ENABLED: until 'enable'; None: none)

    @property
    def controlled(self) -> bool:
        """Whether counting is switched on and off from outside (``--control``, ``--delay``)."""
        return self.control is not None or self.delay is not None


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """What a front end asks for; ``None`` takes the source's default. Values are already checked
    one by one (positive, finite); :meth:`resolve` checks how they fit together. ``sample`` asks
    for hot spots (``--sample``). ``rotation`` is ``auto``, ``sync`` or ``kernel``;
    ``max_overhead`` the budget in % of one core (``None``: the default); ``proxy`` the stand-ins
    per CMG (``--proxy``, :mod:`sectormon.metrics.proxy`); ``region_level`` fapp's region level
    for a launched program's markers (``--region-level``); ``control`` and ``delay`` perf stat's
    ``--control`` and ``--delay`` (:data:`UNTIL_ENABLED`: ``-1``)."""

    groups: tuple[str, ...] | None = None
    timeslice: float | None = None
    interval: float | None = None
    recent: float | None = None
    count: int | None = None
    duration: float | None = None
    baseline_after: float | None = None
    record: str | None = None
    sample: SampleRequest | None = None
    rotation: str = AUTO
    max_overhead: float | None = None
    proxy: int | None = None
    region_level: int = 0
    control: ControlFds | None = None
    delay: float | None = None

    def resolve(self, source: Source) -> SessionOptions:
        timeslice = source.default_timeslice if self.timeslice is None else self.timeslice
        interval = source.default_interval if self.interval is None else self.interval
        if interval < timeslice:
            raise UsageError(f"--interval ({interval} s) must be at least one --timeslice ({timeslice} s)")
        if self.recent is not None and self.recent < interval:
            raise UsageError(f"--recent ({self.recent} s) must be at least one --interval ({interval} s)")
        return SessionOptions(
            interval=interval,
            timeslice=timeslice,
            recent_seconds=source.default_recent(interval) if self.recent is None else self.recent,
            count=self.count,
            duration=self.duration,
            baseline_after=self.baseline_after,
            record=self.record,
            max_overhead=self._budget(source),
            proxy=check_per_cmg(self.proxy),
            control=self.control,
            delay=self._delay(source),
        )

    def _delay(self, source: Source) -> float | None:
        """``--delay`` checked against the source and ``--control``."""
        if (self.control is not None or self.delay is not None) and not source.capabilities.wall_clock:
            option = "--control" if self.control is not None else "--delay"
            raise UsageError(f"{option} is for live perf sessions; the simulator's clock is its own: drop it")
        if self.delay == UNTIL_ENABLED and self.control is None:
            raise UsageError(
                "--delay -1 starts with counting off until an 'enable' arrives: add --control fifo:CTL[,ACK]"
            )
        return self.delay

    def _budget(self, source: Source) -> float | None:
        """The overhead budget as a fraction of a core; none on a source with a clock of its own
        (the simulator), whose sampler shares its CPU with the model (its cost says nothing of a
        node's, and a simulated session must run the same way every time)."""
        if not source.capabilities.wall_clock:
            if self.max_overhead is not None:
                raise UsageError(
                    "--max-overhead is for live sessions: the simulator's sampler cost is not a node's; "
                    "leave it out"
                )
            return None
        return (DEFAULT_MAX_OVERHEAD if self.max_overhead is None else self.max_overhead) / 100.0
