"""Sampled attribution: where the events come from, in code and in data.

Three separate steps, as in a sampling profiler (perf's session/symbol/hist split):

- :mod:`~sectormon.attribution.samples`: the raw samples and address-space events that come in,
  and the attributed samples that go out (plain data a recording can keep).
- :mod:`~sectormon.attribution.symbolize` (with :mod:`.space` and :mod:`.elf`): resolve IPs to
  functions and ``file:line``, data addresses to variables, heap, stack or mappings.
- :mod:`~sectormon.attribution.aggregate`: count per function, source line, data object and cache
  line, with the HP Caliper scale factor and latency buckets, into an immutable
  :class:`~sectormon.attribution.table.HotspotTable`; :mod:`~sectormon.attribution.window` does so
  per frame window for live and replayed sessions.

The package itself exports the plain data and the aggregation only: frames, recordings and the
engine pass samples around without loading pyelftools, which ``symbolize`` imports.
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
