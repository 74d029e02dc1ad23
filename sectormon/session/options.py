"""Typed options of a live session: what a front end asks for, and what the session runs with."""

from __future__ import annotations

from dataclasses import dataclass

from sectormon.errors import UsageError
from sectormon.sources.base import SampleRequest, Source


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


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """What a front end asks for; ``None`` takes the source's default. Values are already checked
    one by one (positive, finite); :meth:`resolve` checks how they fit together. ``sample`` asks
    for hot spots (``--sample``)."""

    groups: tuple[str, ...] | None = None
    timeslice: float | None = None
    interval: float | None = None
    recent: float | None = None
    count: int | None = None
    duration: float | None = None
    baseline_after: float | None = None
    record: str | None = None
    sample: SampleRequest | None = None

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
        )
