"""Hot spots in a session's frames: sample batches aggregated per frame window, beside the counts.

When a slice is about to close a frame, the session takes one ``SampleBatch`` from its source's
feed, records it before that slice, and feeds it to ``SampledFrameBuilder``, which closes the
hot-spot window with every frame that is due, built or not (a replay that skips frames still ends
their windows). A replay feeds the recorded batches the same way, so its frames carry the same
tables; the counting path never sees a sample.
"""

from __future__ import annotations

import dataclasses

from sectormon.attribution.window import HotspotWindows
from sectormon.data.frames import Frame
from sectormon.data.header import Header
from sectormon.data.hotspots import HotspotSettings
from sectormon.data.readings import Mark, Slice
from sectormon.data.regions import RegionsReading
from sectormon.data.samples import SampleBatch
from sectormon.metrics.batch import RowBatch
from sectormon.metrics.engine import MetricsEngine
from sectormon.session.frame_builder import FrameBuilder


class SampledFrameBuilder(FrameBuilder):
    """A :class:`FrameBuilder` whose frames also carry the hot spots of their window.

    A window ends with every frame that is due, also one a replay skips unseen (``--from``, a
    seek): the next frame's window then holds only its own samples, as it did live.
    """

    def __init__(
        self, engine: MetricsEngine, interval: float, settings: HotspotSettings, *, start: float = 0.0
    ) -> None:
        super().__init__(engine, interval, start=start)
        self.windows = HotspotWindows(settings)

    def feed(self, item: Slice | Mark | SampleBatch | RegionsReading) -> list[Frame]:
        if isinstance(item, SampleBatch):
            self.windows.add(item)
            return []
        if isinstance(item, (Mark, RegionsReading)):  # a regions reading shares its slice's t: no window ends
            return super().feed(item)
        due = self.clock.reaches_next(item.t)
        return self._with_hotspots(super().feed(item), due)

    def feed_batch(self, batch: RowBatch) -> list[Frame]:
        return self._with_hotspots(super().feed_batch(batch), bool(batch.slices) and batch.frame_due)

    def finish(self, t: float | None = None) -> Frame:
        frame = super().finish(t)
        return dataclasses.replace(frame, hotspots=self.windows.cut(final=True))

    def _with_hotspots(self, frames: list[Frame], due: bool) -> list[Frame]:
        if not due:
            return frames
        hotspots = self.windows.cut()
        return [dataclasses.replace(frame, hotspots=hotspots) for frame in frames]


def builder_for(
    header: Header, engine: MetricsEngine, interval: float, *, start: float = 0.0
) -> FrameBuilder:
    """The frame builder a session's header asks for: a :class:`SampledFrameBuilder` when the
    session sampled, else the counting one."""
    settings = header.hotspots
    if settings is None:
        return FrameBuilder(engine, interval, start=start)
    return SampledFrameBuilder(engine, interval, settings, start=start)
