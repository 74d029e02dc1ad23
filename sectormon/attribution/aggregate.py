"""Count attributed samples per function, source line, data object and cache line.

Samples are fed one at a time (live, or again from a recording) and ``HotspotAggregator.table``
snapshots the tallies into an immutable table whenever asked. Each location's estimate is the HP
Caliper scale factor (counted total over sampled periods) times its sampled periods, so the
estimates add up to the counted total: they rank locations, they are not exact counts.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Sequence
from types import MappingProxyType

from sectormon.data.hotspot_table import HotspotRow, HotspotTable
from sectormon.data.samples import AttributedSample, CodeLocation, DataLocation, LatencyBucket


class _Tally:
    __slots__ = ("buckets", "detail", "periods", "samples")

    def __init__(self, detail: str | None, buckets: int) -> None:
        self.samples = 0
        self.periods = 0
        self.detail = detail
        self.buckets = [0] * buckets


class HotspotAggregator:
    """Running counts; ``buckets`` classify each sample's weight (latency in cycles), in order.

    Cache lines are counted only with ``lines`` (each line is a table entry: a million samples
    over fresh memory are a million lines).
    """

    def __init__(
        self, buckets: Sequence[LatencyBucket] = (), *, line_size: int = 64, lines: bool = False
    ) -> None:
        if line_size < 1 or line_size & (line_size - 1):
            raise ValueError(f"cache line size must be a power of two, not {line_size}")
        self.buckets = tuple(buckets)
        self.line_size = line_size
        self.count_lines = lines
        self._bounds = [b.max_cycles for b in self.buckets if b.max_cycles is not None]
        self._open_ended = bool(self.buckets) and self.buckets[-1].max_cycles is None
        self.samples = 0
        self.periods = 0
        self.lost = 0
        self.with_address = 0
        self.with_weight = 0
        self._functions: dict[Hashable, _Tally] = {}
        self._statements: dict[Hashable, _Tally] = {}
        self._objects: dict[Hashable, _Tally] = {}
        self._lines: dict[Hashable, _Tally] = {}
        # The symbolizer hands out the same location object again and again: find its tallies by
        # identity first (the object is kept, so its id stays its own), by value when it is new.
        self._by_code: dict[int, tuple[CodeLocation, tuple[_Tally, ...]]] = {}
        self._by_data: dict[int, tuple[DataLocation, _Tally]] = {}

    def bucket_of(self, weight: float) -> int | None:
        """Index of the bucket a latency falls in (None: beyond the last bounded bucket and no
        open-ended bucket follows)."""
        i = bisect.bisect_left(self._bounds, weight)
        if i < len(self._bounds) or self._open_ended:
            return i
        return None

    def add(self, sample: AttributedSample) -> None:
        period = sample.period
        self.samples += 1
        self.periods += period
        bucket = None
        if sample.weight and self.buckets:
            self.with_weight += 1
            bucket = self.bucket_of(sample.weight)
        code = sample.code
        known = self._by_code.get(id(code))
        if known is None or known[0] is not code:
            known = self._code_tallies(code)
        for tally in known[1]:
            tally.samples += 1
            tally.periods += period
            if bucket is not None:
                tally.buckets[bucket] += 1
        data = sample.data
        if data is None:
            return
        self.with_address += 1
        found = self._by_data.get(id(data))
        if found is None or found[0] is not data:
            found = self._data_tally(data)
        tally = found[1]
        tally.samples += 1
        tally.periods += period
        if bucket is not None:
            tally.buckets[bucket] += 1
        addr = sample.addr
        if addr is not None and self.count_lines:
            key = (addr - addr % self.line_size, data.module)
            line = self._lines.get(key)
            if line is None:
                line = self._lines[key] = _Tally(data.name, len(self.buckets))
            line.samples += 1
            line.periods += period
            if bucket is not None:
                line.buckets[bucket] += 1

    def _tally(self, table: dict[Hashable, _Tally], key: Hashable, detail: str | None) -> _Tally:
        tally = table.get(key)
        if tally is None:
            tally = table[key] = _Tally(detail, len(self.buckets))
        return tally

    def _code_tallies(self, code: CodeLocation) -> tuple[CodeLocation, tuple[_Tally, ...]]:
        tallies = [self._tally(self._functions, (code.function, code.module), code.source)]
        if code.source is not None:
            key = (code.source, code.function, code.module)
            tallies.append(self._tally(self._statements, key, code.function))
        entry = self._by_code[id(code)] = (code, tuple(tallies))
        return entry

    def _data_tally(self, data: DataLocation) -> tuple[DataLocation, _Tally]:
        tally = self._tally(self._objects, (data.name, data.module), data.kind)
        entry = self._by_data[id(data)] = (data, tally)
        return entry

    def add_lost(self, lost: int) -> None:
        """Samples the kernel dropped (ring buffer full): they lower the sampled share of the
        total, which the scale factor makes up for."""
        self.lost += lost

    def table(self, *, total: int | None, top: int | None = None) -> HotspotTable:
        """A snapshot; ``total`` is the event's counted total (None: not counted, no estimates)."""
        scale = total / self.periods if total is not None and self.periods else None
        with_latency = bool(self.buckets) and self.with_weight > 0

        def rows(
            table: dict[Hashable, _Tally], name: Callable[[Hashable], tuple[str, str]]
        ) -> tuple[HotspotRow, ...]:
            ordered = sorted(table.items(), key=lambda item: (-item[1].periods, str(item[0])))
            if top is not None:
                ordered = ordered[:top]
            out = []
            for key, tally in ordered:
                label, module = name(key)
                out.append(
                    HotspotRow(
                        name=label,
                        module=module,
                        detail=tally.detail,
                        samples=tally.samples,
                        periods=tally.periods,
                        estimate=scale * tally.periods if scale is not None else None,
                        share=tally.periods / self.periods if self.periods else 0.0,
                        buckets=tuple(tally.buckets) if with_latency else None,
                    )
                )
            return tuple(out)

        def pair(key: Hashable) -> tuple[str, str]:
            assert isinstance(key, tuple)
            return str(key[0]), str(key[-1])

        def line(key: Hashable) -> tuple[str, str]:
            assert isinstance(key, tuple)
            return f"{key[0]:#x}", str(key[1])

        return HotspotTable(
            samples=self.samples,
            lost=self.lost,
            sampled_events=self.periods,
            total=total,
            scale=scale,
            with_address=self.with_address,
            with_weight=self.with_weight,
            bucket_names=tuple(b.name for b in self.buckets) if with_latency else (),
            line_size=self.line_size,
            functions=rows(self._functions, pair),
            statements=rows(self._statements, pair),
            objects=rows(self._objects, pair),
            lines=rows(self._lines, line),
            counts=MappingProxyType(
                {
                    "functions": len(self._functions),
                    "source_lines": len(self._statements),
                    "objects": len(self._objects),
                    "cache_lines": len(self._lines),
                }
            ),
        )
