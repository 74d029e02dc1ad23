"""The hot-spot table: an immutable snapshot of the aggregated samples, and its JSON form.

Plain frozen data, so the same table can go into a JSON report, a frame, a TUI view or a
recording. Every figure keeps its unit in its name: ``samples`` are samples, ``periods`` and
``estimate`` are events of the sampled event, ``share`` is a fraction of the sampled events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

SCHEMA = "sectormon/hotspots/1"


@dataclass(frozen=True, slots=True)
class HotspotRow:
    """One location: a function, source line, data object or cache line.

    ``detail`` is the function's ``file:line`` (functions), the function (source lines), the
    object's kind (objects) or the object (cache lines). ``periods`` is the sum of the samples'
    periods (sampled x period); ``estimate`` = scale x periods (None without a counted total);
    ``share`` = periods / all samples' periods. ``buckets`` counts the row's samples per latency
    bucket (None when no sample carried a latency).
    """

    name: str
    module: str
    detail: str | None
    samples: int
    periods: int
    estimate: float | None
    share: float
    buckets: tuple[int, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "module": self.module,
            "detail": self.detail,
            "samples": self.samples,
            "sampled_events": self.periods,
            "estimate": self.estimate,
            "share": self.share,
            "latency_buckets": list(self.buckets) if self.buckets is not None else None,
        }


@dataclass(frozen=True, slots=True)
class HotspotTable:
    """Totals and the rows of each view, hottest first (see :mod:`sectormon.attribution.aggregate`).

    ``sampled_events`` is the sum of all samples' periods; ``scale`` = ``total`` / that. Rows past
    a ``top`` limit are left out; ``counts`` says how many locations each view had.
    """

    samples: int
    lost: int
    sampled_events: int
    total: int | None
    scale: float | None
    with_address: int
    with_weight: int
    bucket_names: tuple[str, ...]
    line_size: int
    functions: tuple[HotspotRow, ...]
    statements: tuple[HotspotRow, ...]
    objects: tuple[HotspotRow, ...]
    lines: tuple[HotspotRow, ...]
    counts: Mapping[str, int] = field(default_factory=dict)

    def head(self, rows: int) -> HotspotTable:
        """The same table with at most ``rows`` rows per view (the hottest; ``counts`` unchanged)."""
        return replace(
            self,
            functions=self.functions[:rows],
            statements=self.statements[:rows],
            objects=self.objects[:rows],
            lines=self.lines[:rows],
        )

    def to_json(self, *, lines: bool = False) -> dict[str, Any]:
        """The table as JSON; ``lines`` adds the per-cache-line view."""
        out: dict[str, Any] = {
            "samples": self.samples,
            "lost_samples": self.lost,
            "sampled_events": self.sampled_events,
            "counted_total": self.total,
            "scale": self.scale,
            "samples_with_data_address": self.with_address,
            "samples_with_latency": self.with_weight,
            "latency_buckets": list(self.bucket_names) or None,
            "functions": [r.to_json() for r in self.functions],
            "source_lines": [r.to_json() for r in self.statements],
            "objects": [r.to_json() for r in self.objects],
            "locations": dict(self.counts),
        }
        if lines:
            out["cache_line_bytes"] = self.line_size
            out["cache_lines"] = [r.to_json() for r in self.lines]
        return out
