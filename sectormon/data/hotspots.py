"""What a sampling session records about its hot spots: its settings (the header's ``hotspots``
record) and a frame's tables, the records the sampler, io, the engine and the UI pass around.

Records only; the windows that build a frame's tables are :mod:`sectormon.attribution.window`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sectormon.data.hotspot_table import HotspotTable
from sectormon.data.samples import LatencyBucket

DEFAULT_TOP = 10
HEADER_KEY = "hotspots"
"""The key of a sampling session's :class:`HotspotSettings` in its header (stream and recording)."""


@dataclass(frozen=True, slots=True)
class HotspotSettings:
    """What a session samples and how its frames show it (the header's ``hotspots`` record).

    ``event`` is the name shown (a profile event or a perf spec), ``spec`` what was opened (a perf
    spec, or ``sim:0xCODE`` for the simulator's model); one of ``period`` (one sample every N
    events) and ``freq`` (about HZ a second, each sample with its own period) is set. ``top`` is
    how many rows per view a frame's JSON carries; ``buckets`` classify each sample's latency;
    ``carries`` says in words what a sample holds on this source (IP, data address, latency).
    """

    event: str
    spec: str
    source: str
    period: int = 0
    freq: int = 0
    top: int = DEFAULT_TOP
    buckets: tuple[LatencyBucket, ...] = ()
    carries: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "event": {"name": self.event, "spec": self.spec},
            "source": self.source,
            "period": self.period or None,
            "freq_hz": self.freq or None,
            "top": self.top,
            "latency_buckets": [{"name": b.name, "max_cycles": b.max_cycles} for b in self.buckets],
            "carries": self.carries,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HotspotSettings:
        """The inverse of :meth:`to_json`; ``ValueError`` naming the field that is wrong."""
        event = data.get("event")
        if not isinstance(event, Mapping) or not all(isinstance(event.get(k), str) for k in ("name", "spec")):
            raise ValueError("hotspots 'event' must be an object with 'name' and 'spec' strings")
        period = _count(data.get("period"), "period")
        freq = _count(data.get("freq_hz"), "freq_hz")
        if (period > 0) == (freq > 0):
            raise ValueError("hotspots: exactly one of 'period' and 'freq_hz' must be a whole number >= 1")
        top = _count(data.get("top", DEFAULT_TOP), "top")
        if top < 1:
            raise ValueError("hotspots 'top' must be a whole number >= 1")
        raw = data.get("latency_buckets", [])
        if not isinstance(raw, list):
            raise ValueError("hotspots 'latency_buckets' must be a list")
        buckets = []
        for i, bucket in enumerate(raw):
            bound = bucket.get("max_cycles") if isinstance(bucket, Mapping) else None
            if (
                not isinstance(bucket, Mapping)
                or not isinstance(bucket.get("name"), str)
                or not (bound is None or _finite(bound))
            ):
                raise ValueError(
                    f"hotspots 'latency_buckets'[{i}] must be {{name, max_cycles: number or null}}"
                )
            buckets.append(LatencyBucket(bucket["name"], None if bound is None else float(bound)))
        source = data.get("source")
        carries = data.get("carries", "")
        if not isinstance(source, str) or not isinstance(carries, str):
            raise ValueError("hotspots 'source' and 'carries' must be strings")
        return cls(
            event=event["name"],
            spec=event["spec"],
            source=source,
            period=period,
            freq=freq,
            top=top,
            buckets=tuple(buckets),
            carries=carries,
        )


def _count(value: object, key: str) -> int:
    if value is None:
        return 0
    if type(value) is not int or value < 0:
        raise ValueError(f"hotspots {key!r} must be a whole number >= 0 or null, got {value!r}")
    return value


def _finite(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class FrameHotspots:
    """A frame's hot spots: the frame window's table and the whole run's, hottest first.

    The tables hold every location; the JSON form keeps the ``top`` rows of each view (``locations``
    says how many there were). ``multiplexed``: a counted total was scaled for multiplexing.
    """

    settings: HotspotSettings
    interval: HotspotTable
    run: HotspotTable
    multiplexed: bool = False

    def to_json(self) -> dict[str, Any]:
        settings = self.settings
        return {
            "event": {"name": settings.event, "spec": settings.spec},
            "source": settings.source,
            "period": settings.period or None,
            "freq_hz": settings.freq or None,
            "counted_total_multiplexed": self.multiplexed,
            "interval": self.interval.head(settings.top).to_json(),
            "run": self.run.head(settings.top).to_json(),
        }
