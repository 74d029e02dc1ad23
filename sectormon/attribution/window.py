"""Hot spots per frame: samples aggregated over each frame window and over the whole run.

Each frame gets its immutable ``FrameHotspots``: the window's table and the whole run's, with the
counted totals behind their scale factors. Every batch feeds both aggregators, so nothing has to be
merged, and the same batches in the same order give the same tables: a replay shows what the live
run showed.
"""

from __future__ import annotations

from sectormon.attribution.aggregate import HotspotAggregator
from sectormon.data.hotspot_table import HotspotTable
from sectormon.data.hotspots import FrameHotspots, HotspotSettings
from sectormon.data.samples import LatencyBucket, SampleBatch


class _Window:
    """One aggregation window: the samples, the lost ones and the counted total."""

    def __init__(self, buckets: tuple[LatencyBucket, ...]) -> None:
        self.aggregator = HotspotAggregator(buckets)
        self.counted: int | None = 0

    def add(self, batch: SampleBatch) -> None:
        add = self.aggregator.add
        for sample in batch.samples:
            add(sample)
        self.aggregator.add_lost(batch.lost)
        # A window with a batch whose count could not be read has no total (no estimates).
        self.counted = None if self.counted is None or batch.counted is None else self.counted + batch.counted

    def table(self) -> HotspotTable:
        return self.aggregator.table(total=self.counted)


class HotspotWindows:
    """The frame window and the whole run, fed the same batches (see the module docstring)."""

    def __init__(self, settings: HotspotSettings) -> None:
        self.settings = settings
        self._interval = _Window(settings.buckets)
        self._run = _Window(settings.buckets)
        self._multiplexed = False

    def add(self, batch: SampleBatch) -> None:
        self._interval.add(batch)
        self._run.add(batch)
        self._multiplexed = self._multiplexed or batch.multiplexed

    def cut(self, *, final: bool = False) -> FrameHotspots:
        """Close the frame window (the next one starts empty). The final frame's window is the
        whole run, as its other figures are."""
        run = self._run.table()
        interval = run if final else self._interval.table()
        self._interval = _Window(self.settings.buckets)
        return FrameHotspots(self.settings, interval, run, self._multiplexed)
