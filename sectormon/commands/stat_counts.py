"""``sectormon stat``'s figures: a session's frames reduced to :mod:`.stat_report`'s lines.

One run gives its final frame's whole-run window (and each marked region's); ``-r N`` runs give
means with perf's spread: the standard deviation of the mean, ``sqrt(M2 / (n - 1) / n)`` by
Welford's update, relative to the mean in % (perf's ``stddev_stats`` and ``rel_stddev_stats``).
``-I`` intervals are the frames' own interval totals; the last, shorter one is what the whole run
counted beyond the previous frame's whole-run figure, so the rows add up to the final counts
whenever the frames' intervals add up to their run (every count an exact one, nothing scaled).
An event's run time is what perf's is for a task's counter, the time the counted threads ran on
a CPU with the counters open (the frames' ``thread_time``), times the share of it the event's
group was counting; where the source cannot tell (CPUs, the simulator) the window's wall-clock
seconds stand in. Pure: frames in, lines out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sectormon.commands.stat_report import Block, EventLine, MetricLine, event_line, metric_line
from sectormon.data.frames import Frame, RegionStats, ScopeStats, WindowStats
from sectormon.profiles.model import Profile


@dataclass(frozen=True, slots=True)
class Shown:
    """What a run's blocks show: the events in order with their labels, the metrics, and the
    events the host could not count (shown ``<not supported>``)."""

    profile: Profile
    labels: Mapping[str, str]
    dropped: frozenset[str] = frozenset()

    def events(self) -> tuple[str, ...]:
        wanted = {name for group in self.profile.groups for name in group.events}
        return tuple(name for name in self.profile.events if name in wanted)

    def label(self, event: str) -> str:
        return self.labels.get(event, event)

    def unit(self, event: str) -> str:
        return "msec" if self.profile.events[event].unit == "ns" else ""


def counted_seconds(window: WindowStats | Frame, seconds: float) -> float:
    """The counted threads' CPU seconds in ``window`` (``seconds``, its length, when unknown)."""
    return window.thread_time.counted_s if window.thread_time is not None else seconds


def event_lines(shown: Shown, scopes: Sequence[tuple[ScopeStats, float]]) -> tuple[EventLine, ...]:
    """Each event over ``scopes`` (one per run: its figures and the seconds it could have been
    counted), averaged over the runs that counted it."""
    lines = []
    for event in shown.events():
        unit = shown.unit(event)
        label = shown.label(event)
        if event in shown.dropped:
            lines.append(EventLine(label, None, unit, supported=False))
            continue
        counted = [
            (scope.counts[event], coverage, coverage * seconds * 1e9)
            for scope, seconds in scopes
            if event in scope.counts and (coverage := scope.coverage.get(event, 0.0)) > 0
        ]
        lines.append(event_line(label, unit, counted, runs=len(scopes)))
    return tuple(lines)


def metric_lines(shown: Shown, scopes: Sequence[ScopeStats]) -> tuple[MetricLine, ...]:
    """Each metric of the profile, averaged over the runs where it had a value (else n/a)."""
    lines = []
    for metric in shown.profile.metrics:
        values = [
            value
            for scope in scopes
            if (value := scope.metrics.get(metric.name)) is not None and math.isfinite(value)
        ]
        coverage = [scope.coverage.get(metric.name, 0.0) for scope in scopes]
        mean_coverage = sum(coverage) / len(coverage) if coverage else 0.0
        lines.append(metric_line(metric.name, metric.unit, values, mean_coverage, runs=len(scopes)))
    return tuple(lines)


def run_blocks(shown: Shown, title: str, finals: Sequence[Frame]) -> list[Block]:
    """The whole-run block over ``finals`` (one final frame per run), then one block per marked
    region, in the order the regions were first seen."""
    whole = [(final.run.total, counted_seconds(final.run, final.run.seconds)) for final in finals]
    blocks = [Block(title, event_lines(shown, whole), metric_lines(shown, [s for s, _ in whole]))]
    return blocks + region_blocks(shown, [final.run.regions for final in finals])


def region_blocks(shown: Shown, runs: Sequence[Mapping[str, RegionStats]]) -> list[Block]:
    """One block per marked region over ``runs`` (each run's regions by label), in the order the
    regions were first seen."""
    names: dict[str, None] = {}
    for regions in runs:
        names.update(dict.fromkeys(regions))
    blocks = []
    for name in names:
        stats = [regions[name] for regions in runs if name in regions]
        scopes = [(region.total, region.seconds) for region in stats]
        calls = sum(region.calls for region in stats) / len(stats)
        seconds = sum(region.seconds for region in stats) / len(stats)
        blocks.append(
            Block(
                f"region '{stats[0].name}' (calls {calls:.0f})",
                event_lines(shown, scopes),
                metric_lines(shown, [s for s, _ in scopes]),
                seconds=seconds,
            )
        )
    return blocks


class Intervals:
    """The ``-I`` rows of one run, frame by frame: a frame's interval totals, and for the final
    frame the run's counts beyond the last frame's whole-run figures (no rows when the run
    ended with that frame: no time is left)."""

    def __init__(self, shown: Shown) -> None:
        self.shown = shown
        self._last: Frame | None = None

    def lines(self, frame: Frame) -> tuple[EventLine, ...]:
        if not frame.final:
            self._last = frame
            return event_lines(self.shown, [(frame.total, counted_seconds(frame, frame.interval))])
        last = self._last
        run = frame.run.total
        if last is None:  # the run ended within its first interval
            return event_lines(self.shown, [(run, counted_seconds(frame.run, frame.run.seconds))])
        if frame.t <= last.t:
            return ()
        before = last.run.total
        rest = {name: count - before.counts.get(name, 0.0) for name, count in run.counts.items()}
        scope = ScopeStats(counts=rest, rates={}, metrics={}, coverage=dict(run.coverage))
        now, before_s = frame.run.thread_time, last.run.thread_time
        seconds = now.counted_s - before_s.counted_s if now and before_s else frame.t - last.t
        return event_lines(self.shown, [(scope, max(seconds, 0.0))])
