"""Sampled attribution: where the events come from, in code and in data.

The design notes of this module are in docs/internals.md.
"""

from __future__ import annotations

from sectormon.attribution.aggregate import HotspotAggregator, LatencyBucket
from sectormon.attribution.samples import (
    AttributedSample,
    CodeLocation,
    DataLocation,
    Event,
    MapEvent,
    ProcessEvent,
    Sample,
    SampleBatch,
)
from sectormon.attribution.table import HotspotRow, HotspotTable

__all__ = [
    "AttributedSample",
    "CodeLocation",
    "DataLocation",
    "Event",
    "HotspotAggregator",
    "HotspotRow",
    "HotspotTable",
    "LatencyBucket",
    "MapEvent",
    "ProcessEvent",
    "Sample",
    "SampleBatch",
]
