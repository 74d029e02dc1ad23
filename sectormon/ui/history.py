"""A bounded history of selected metrics, for the sparklines (displaying history, not computing).

Values are the total scope of each displayed frame, kept in fixed-size deques so a long replay
uses constant memory. ``None`` (n/a) is kept as a gap marker and left out of the sparkline.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from sectormon.data.frames import Frame
from sectormon.ui.format import metric_value

DEFAULT_LENGTH = 120


class History:
    """Last ``length`` values of each tracked metric."""

    def __init__(self, metrics: Iterable[str], length: int = DEFAULT_LENGTH) -> None:
        self.length = length
        self._series: dict[str, deque[float | None]] = {m: deque(maxlen=length) for m in metrics}

    @property
    def metrics(self) -> list[str]:
        return list(self._series)

    def add(self, frame: Frame) -> None:
        for name, series in self._series.items():
            series.append(metric_value(frame.total, name))

    def values(self, metric: str) -> list[float]:
        """The known values, oldest first (n/a points left out)."""
        return [v for v in self._series.get(metric, ()) if v is not None]

    def latest(self, metric: str) -> float | None:
        series = self._series.get(metric)
        return series[-1] if series else None

    def __len__(self) -> int:
        return max((len(s) for s in self._series.values()), default=0)

    def clear(self) -> None:
        for series in self._series.values():
            series.clear()
