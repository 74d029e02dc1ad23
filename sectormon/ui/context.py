"""What every panel needs besides the frame: the layout, units, window choice and core filter.

Built once from the header (and rebuilt when the user changes the window or the filter), passed to
each widget's ``show`` with the frame. Pure data, no Textual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from sectormon.data.frames import Baseline, Frame, MetricDelta, ScopeStats, scope_order
from sectormon.data.header import Header
from sectormon.ui.format import LOW_COVERAGE, coverage_threshold
from sectormon.ui.header_info import ProfileView, cmg_of_cores, profile_view
from sectormon.ui.layout import Panels, resolve_panels
from sectormon.ui.region_baseline import RegionBase

WINDOW_NAMES = ("interval", "recent", "run")
WINDOW_TITLES = {"interval": "last interval", "recent": "rolling window", "run": "whole run"}


def window_title(window: str, frame: Frame | None) -> str:
    """What the shown window covers: the final frame's top level is the whole run, not an interval."""
    if window == "interval" and frame is not None and frame.final:
        return "whole run (final frame)"
    return WINDOW_TITLES.get(window, window)


THREAD_COVERAGE_SHOWN_BELOW = 0.99
UNCOUNTED_NOTICED_S = 0.02
"""Uncounted CPU seconds below which a low thread coverage is not shown: /proc's CPU times have a
10 ms resolution, so a short interval of a fully counted target can read a few percent low."""


def thread_coverage_note(frame: Frame | None, window: str) -> str | None:
    """``threads counted 87% of the target's CPU`` when work went uncounted in the shown window
    (the run's figure for the whole run, else the frame's own), else ``None``."""
    if frame is None:
        return None
    figure = frame.run.thread_time if window == "run" else frame.thread_time
    coverage = figure.coverage if figure is not None else None
    if figure is None or coverage is None or coverage >= THREAD_COVERAGE_SHOWN_BELOW:
        return None
    if figure.countable_s - figure.counted_s < UNCOUNTED_NOTICED_S:
        return None
    return f"threads counted {coverage:.0%} of the target's CPU"


@dataclass(frozen=True, slots=True)
class Scopes:
    """The scopes of one window of a frame."""

    total: ScopeStats
    cmgs: Mapping[str, ScopeStats]
    cores: Mapping[str, ScopeStats]
    nodes: Mapping[str, ScopeStats] = field(default_factory=dict)  # a job's nodes (their totals)


@dataclass(frozen=True, slots=True)
class RenderContext:
    """Session facts and view choices shared by the panels."""

    header: Header
    profile: ProfileView
    panels: Panels
    units: Mapping[str, str]
    cmg_map: Mapping[str, str] = field(default_factory=dict)
    window: str = "interval"
    core_filter: frozenset[str] | None = None
    filter_text: str = ""
    show_deltas: bool = True
    low_coverage: float = LOW_COVERAGE
    """Coverage under which values are dimmed, set per frame by :meth:`for_frame`."""
    regions_base: RegionBase | None = None
    """The regions at the shown frame's baseline (the Regions view's deltas), set per frame."""

    @classmethod
    def from_header(cls, header: Header) -> RenderContext:
        profile = profile_view(header)
        return cls(
            header=header,
            profile=profile,
            panels=resolve_panels(profile),
            units={name: info.unit for name, info in profile.metrics.items()},
            cmg_map=cmg_of_cores(header.topology),
        )

    def for_frame(self, frame: Frame | None) -> RenderContext:
        """This context with the low-confidence threshold of the frame's rotation."""
        threshold = coverage_threshold(frame.groups) if frame is not None else LOW_COVERAGE
        return self if threshold == self.low_coverage else replace(self, low_coverage=threshold)

    def with_regions_base(self, base: RegionBase | None) -> RenderContext:
        return self if base is self.regions_base else replace(self, regions_base=base)

    def with_window(self, window: str) -> RenderContext:
        return replace(self, window=window)

    def with_filter(self, text: str, cores: frozenset[str] | None) -> RenderContext:
        return replace(self, filter_text=text, core_filter=cores)

    def scopes(self, frame: Frame) -> Scopes:
        """The chosen window; with a baseline the deltas are of the rolling window, so is the table."""
        if self.window == "recent" or (frame.baseline is not None and self.show_deltas):
            return Scopes(frame.recent.total, frame.recent.cmgs, frame.recent.cores, frame.recent.nodes)
        if self.window == "run":
            return Scopes(frame.run.total, frame.run.cmgs, frame.run.cores, frame.run.nodes)
        return Scopes(frame.total, frame.cmgs, frame.cores, frame.nodes)

    def baseline(self, frame: Frame) -> Baseline | None:
        return frame.baseline if self.show_deltas else None

    def core_visible(self, core: str) -> bool:
        return self.core_filter is None or core in self.core_filter

    def total_and_cores(self, frame: Frame) -> list[tuple[str, ScopeStats | None]]:
        """``total`` then every visible core in display order: the rows of the per-core bar views."""
        scopes = self.scopes(frame)
        rows: list[tuple[str, ScopeStats | None]] = [("total", scopes.total)]
        rows += [
            (core, scopes.cores[core])
            for core in sorted(scopes.cores, key=scope_order)
            if self.core_visible(core)
        ]
        return rows


def deltas_for(baseline: Baseline | None, kind: str, key: str) -> Mapping[str, MetricDelta] | None:
    """The baseline deltas of one scope (``total``, a CMG or a core), ``None`` without a baseline."""
    if baseline is None or kind == "proc":  # processes keep no baseline
        return None
    if kind == "total":
        return baseline.total
    table = baseline.cmgs if kind == "cmg" else baseline.cores
    return table.get(key, {})
