"""The newest frame a session published, as the families of a scrape.

``publish`` runs on the session's thread and only appends to a queue, so a session never waits for
a scrape; a scrape folds the queued frames into the counters and renders the last, so every series
of one scrape comes from one frame. Gauges are the last interval's metrics, counters the sum of every
interval's scaled counts (a counter never steps back); n/a metrics are left out, never exported as
0. A scrape's text is made once per frame and format and shared by every scraper of that frame.

Marked regions are scopes too, with a ``region`` label: a region's gauges are its metrics over the
last interval (absent when it did not run in it: n/a), its event counters and
``sectormon_region_calls_total``/``sectormon_region_seconds_total`` the sums of its intervals'
deltas. A session that marks nothing serves what it served before regions existed.

Longer notes: docs/internals.md.
"""

from __future__ import annotations

import collections
import math
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client.metrics_core import Metric

from sectormon import __version__
from sectormon.data.frames import Frame, ScopeStats
from sectormon.data.header import Header
from sectormon.export.exposition import Family, SeriesBook
from sectormon.export.names import (
    ACTIVE_GROUP,
    COVERAGE,
    EVENTS,
    FRAME_INTERVAL,
    FRAME_TIME,
    FRAMES,
    GROUP_COVERAGE,
    INFO,
    OVERHEAD,
    PROXY,
    PROXY_ERROR,
    REGION_CALLS,
    REGION_SECONDS,
    THREAD_COVERAGE,
    ExportedMetric,
    exported_metrics,
)
from sectormon.export.scopes import DEFAULT_PROCS, ScopeId, ScopeLabels
from sectormon.export.scrape import Scrape

FOLD_BACKLOG = 64
"""Frames queued without a scrape before :meth:`FrameCollector.publish` folds them itself (when no
scrape is folding at that moment), so an endpoint nobody scrapes does not grow."""

ROTATION = "rotate"
"""The rotation mode a header names when it says none: sectormon's own group rotation."""

"""1 for each of a scope's metrics and events estimated from ``--proxy`` stand-ins in the newest
frame (labelled ``metric`` or ``event``, the other empty); absent where the figure was counted.
Served only by a proxy session, so the other sessions' bodies are unchanged. Beside it
``sectormon_proxy_error_ratio`` (same labels): each estimate's error bound, the relative half-width
of its 95 % interval, NaN where it is unknown (a single stand-in)."""


def sector_state(sector_config: Mapping[str, Any]) -> str:
    """``on``/``off`` from a header's sector configuration (the Fujitsu runtime's
    ``FLIB_SCCR_CNTL``, or the simulator's ``enabled``), ``unknown`` when it says neither."""
    value = sector_config.get("FLIB_SCCR_CNTL", sector_config.get("enabled"))
    text = str(value).upper() if value is not None else ""
    return {"TRUE": "on", "FALSE": "off"}.get(text, "unknown")


class ScopeSeries:
    """A scope's series (their lines) in every per-scope family, made when the scope first appears."""

    __slots__ = ("book", "coverage", "events", "gauges", "labels", "proxied")

    def __init__(self, book: SeriesBook, labels: dict[str, str], metrics: tuple[ExportedMetric, ...]) -> None:
        self.book = book
        self.labels = labels
        self.gauges = [book.line(m.name, labels) for m in metrics]
        self.coverage = [book.line(COVERAGE, labels, ("metric", m.metric)) for m in metrics]
        self.events: dict[str, str] = {}
        self.proxied: dict[tuple[str, str], str] = {}

    def proxy(self, figure: str, *, metric: bool, family: str = PROXY) -> str:
        """The series of ``family`` (:data:`PROXY` or :data:`PROXY_ERROR`) for ``figure`` (a
        metric, else an event) estimated by proxy."""
        line = self.proxied.get((family, figure))
        if line is None:
            labels = {**self.labels, "metric": figure if metric else "", "event": "" if metric else figure}
            line = self.proxied[(family, figure)] = self.book.line(family, labels)
        return line

    def event(self, event: str) -> str:
        line = self.events.get(event)
        if line is None:
            line = self.events[event] = self.book.line(f"{EVENTS}_total", self.labels, ("event", event))
        return line


class FrameCollector:
    """Renders a session's newest frame as OpenMetrics families: :meth:`scrape` for the endpoint,
    :meth:`collect` for prometheus_client's registry (the same families)."""

    def __init__(
        self,
        header: Header,
        *,
        source: str | None = None,
        threads: bool = False,
        procs: int = DEFAULT_PROCS,
    ) -> None:
        """``source``: the ``source`` label (default: the header's source kind; a replay passes
        ``replay``). ``threads``: also export per-thread scopes (cardinality: one series set per
        thread). ``procs``: export at most this many processes (see
        :func:`sectormon.export.scopes.exported_procs`)."""
        profile = header.profile
        self._metrics = exported_metrics(profile.get("metrics") or ())
        self._groups = header.group_names
        self._proxy = header.proxy is not None
        self._rotation = str(header.options.fields.get("rotation", ROTATION))
        self._constant = {
            "host": header.host.name or "",
            "profile": str(profile.get("name", "")),
            "source": source or str(header.source.fields.get("kind", "")),
            "sector": sector_state(header.sector_config),
        }
        self._scope_labels = ScopeLabels(self._constant, header.topology, threads=threads, procs=procs)
        info = {
            "version": header.version or __version__,
            "cpu": header.cpu or "",
            "kernel": header.host.kernel or "",
            "rotation": self._rotation,
            **self._constant,
        }
        self._book = SeriesBook()
        self._info = self._book.line(f"{INFO}_info", info)
        self._frames_series = self._book.line(f"{FRAMES}_total", {})
        self._top: dict[str, str] = {}  # frame-wide series by sample name and label
        self._scope_series: dict[ScopeId, ScopeSeries] = {}
        self._counted_procs = False  # a proc scope is among the counters: every series has its labels
        self._counted_regions = False  # a region scope is among the counters: likewise
        self._series_with = (False, False)  # (procs, regions): what the lines of _scope_series were made for
        self._queue: collections.deque[Frame] = collections.deque()
        self._fold_lock = threading.Lock()
        self._scrape_lock = threading.Lock()
        self._shown: Frame | None = None
        self._frames = 0
        self._counts: dict[ScopeId, dict[str, float]] = {}
        self._region_calls: dict[str, float] = {}  # by region label, summed over the intervals
        self._region_seconds: dict[str, float] = {}
        self._scrape: Scrape | None = None
        self.scrapes = 0

    @property
    def host(self) -> str:
        return self._constant["host"]

    def publish(self, frame: Frame) -> None:
        """Hand over a frame (the session's thread): queued, never waiting for a scrape."""
        if frame.final:
            return
        self._queue.append(frame)
        if len(self._queue) > FOLD_BACKLOG and self._fold_lock.acquire(blocking=False):
            try:
                self._fold()
            finally:
                self._fold_lock.release()

    def _fold(self) -> None:
        """Add the queued frames' interval counts to the counters (holding ``_fold_lock``)."""
        queue = self._queue
        while queue:
            frame = queue.popleft()
            shown = self._shown
            if shown is not None and frame.t < shown.t:
                self._counts.clear()  # a replay sought back: the counters start again (a reset)
                self._region_calls.clear()
                self._region_seconds.clear()
                self._counted_procs = self._counted_regions = False
            for scope_id, stats in self._scope_labels.scopes(frame):
                self._count(scope_id, stats)
            if frame.regions:
                self._counted_regions = True
                for scope_id, stats in self._scope_labels.region_scopes(frame, frame.regions):
                    self._count(scope_id, stats)
                for label, region in frame.regions.items():
                    self._region_calls[label] = self._region_calls.get(label, 0.0) + region.calls
                    self._region_seconds[label] = self._region_seconds.get(label, 0.0) + region.seconds
            self._shown = frame
            self._frames += 1

    def _count(self, scope_id: ScopeId, stats: ScopeStats) -> None:
        """Add one scope's interval counts to its counters."""
        if scope_id.scope == "proc":
            self._counted_procs = True
        sums = self._counts.setdefault(scope_id, {})
        for event, count in stats.counts.items():
            if math.isfinite(count):
                sums[event] = sums.get(event, 0.0) + count

    def scrape(self) -> Scrape:
        """The newest frame's families, made once per frame however many scrapers ask."""
        with self._scrape_lock:
            with self._fold_lock:
                self._fold()
                self.scrapes += 1
                serial = self._frames
                made = self._scrape
                if made is not None and made.serial == serial:
                    return made
                families = self._families()
            made = Scrape(serial, families)
            self._scrape = made
            return made

    # -- prometheus_client Collector ---------------------------------------------------------------

    def describe(self) -> list[Metric]:
        """Nothing to check at registration (the families follow the frames)."""
        return []

    def collect(self) -> Iterator[Metric]:
        """The families of :meth:`scrape` as prometheus_client metrics, for its own encoders."""
        for family in self.scrape().families:
            metric = Metric(family.name, family.help, family.kind, family.unit)
            for line, value in family.samples:
                metric.add_sample(family.sample_name, self._book.labels(line), value)
            yield metric

    # -- the families ------------------------------------------------------------------------------

    def _families(self) -> list[Family]:
        """Every family of the newest frame (holding ``_fold_lock``: the counts are read here)."""
        info = Family(INFO, "info", "sectormon's version and what this endpoint serves")
        info.samples.append((self._info, 1.0))
        frames = Family(FRAMES, "counter", "Frames the session has made so far")
        frames.samples.append((self._frames_series, float(self._frames)))
        frame = self._shown
        if frame is None:
            return [info, frames]  # start-up: no interval has ended yet
        return [info, frames, *self._frame_families(frame), *self._scope_families(frame)]

    def _top_series(self, sample_name: str, extra: tuple[str, str] | None = None) -> str:
        key = f"{sample_name}\0{extra}"
        line = self._top.get(key)
        if line is None:
            line = self._top[key] = self._book.line(sample_name, self._constant, extra)
        return line

    def _frame_families(self, frame: Frame) -> list[Family]:
        """The frame-wide families: its time, length, overhead, active group and group coverage."""
        out = []
        for name, help_text, unit, value in (
            (
                FRAME_TIME,
                "Stream time at the end of the frame these series come from (the JSON frame's t)",
                "seconds",
                frame.t,
            ),
            (FRAME_INTERVAL, "Length of the frame's interval", "seconds", frame.interval),
            (
                OVERHEAD,
                "sectormon's own sampling CPU time over the interval, as a fraction of one core",
                "ratio",
                frame.overhead,
            ),
        ):
            family = Family(name, "gauge", help_text, unit)
            family.samples.append((self._top_series(name), float(value)))
            out.append(family)
        active_name = ACTIVE_GROUP
        active = Family(
            active_name, "stateset", f"The group running at the end of the interval ({self._rotation} mode)"
        )
        for group in sorted(set(self._groups or frame.groups)):  # a state set lists its states sorted
            series = self._top_series(active_name, (active_name, group))
            active.samples.append((series, 1.0 if group == frame.active_group else 0.0))
        out.append(active)
        share_name = GROUP_COVERAGE
        shares = Family(share_name, "gauge", "Fraction of the interval each group was counted", "ratio")
        for group, share in frame.groups.items():
            shares.samples.append((self._top_series(share_name, ("group", group)), float(share)))
        out.append(shares)
        thread_coverage = frame.thread_coverage
        if thread_coverage is not None:
            name = THREAD_COVERAGE
            counted = Family(
                name,
                "gauge",
                "Share of the target's CPU time (the kernel's account) its counted threads ran",
                "ratio",
            )
            counted.samples.append((self._top_series(name), float(thread_coverage)))
            out.append(counted)
        return out

    def _scope_families(self, frame: Frame) -> list[Family]:
        """A gauge family per profile metric, the metrics' coverage and the event counters."""
        counted = (self._counted_procs, self._counted_regions)
        if self._series_with != counted:  # the label names changed: new lines
            self._series_with = counted
            self._scope_series.clear()
        labels = self._scope_labels
        rows = [
            (stats.metrics, stats.coverage, self._series_of(scope_id))
            for scope_id, stats in (*labels.scopes(frame), *labels.region_scopes(frame, frame.regions))
        ]
        coverage = Family(
            COVERAGE,
            "gauge",
            "Fraction of the interval a metric's inputs were counted (the minimum over them)",
            "ratio",
        )
        out = []
        for index, exported in enumerate(self._metrics):
            metric, scale = exported.metric, exported.scale
            known = [  # n/a (None, or not finite) is absent, never 0
                (scope, value, covered)
                for values, covered, scope in rows
                if (value := values.get(metric)) is not None and -math.inf < value < math.inf
            ]
            family = Family(exported.name, "gauge", exported.help, exported.unit)
            family.samples = [(scope.gauges[index], value * scale) for scope, value, _ in known]
            coverage.samples += [
                (scope.coverage[index], float(share))
                for scope, _, covered in known
                if (share := covered.get(metric)) is not None
            ]
            out.append(family)
        out.append(coverage)
        if self._proxy:
            out += self._proxy_families(frame)
        events = Family(
            EVENTS,
            "counter",
            "Scaled count of each event, summed over the intervals so far (units as in the profile)",
        )
        for scope_id, sums in self._counts.items():
            scope = self._series_of(scope_id)
            made = scope.events
            events.samples += [(made.get(name) or scope.event(name), total) for name, total in sums.items()]
        out.append(events)
        if self._region_calls:
            out += self._region_families()
        return out

    def _region_families(self) -> tuple[Family, Family]:
        """Each marked region's entries and time inside it, summed over the intervals."""
        calls = Family(REGION_CALLS, "counter", "Entries into each marked region so far (all its threads')")
        seconds = Family(
            REGION_SECONDS,
            "counter",
            "Time inside each marked region so far: per interval, the longest any of its threads spent "
            "inside, summed over the intervals",
            "seconds",
        )
        for label, count in self._region_calls.items():
            calls.samples.append((self._top_series(f"{REGION_CALLS}_total", ("region", label)), count))
        for label, spent in self._region_seconds.items():
            seconds.samples.append((self._top_series(f"{REGION_SECONDS}_total", ("region", label)), spent))
        return calls, seconds

    def _proxy_families(self, frame: Frame) -> tuple[Family, Family]:
        """Which exported metrics and counted events of each scope are proxy estimates, and
        each one's error bound (NaN: unknown)."""
        family = Family(
            PROXY,
            "gauge",
            "1 where the scope's metric or event is estimated from --proxy stand-in units (scaled to "
            "the scope), absent where it was counted",
        )
        errors = Family(
            PROXY_ERROR,
            "gauge",
            "Error bound of a --proxy estimate: the relative half-width of its 95 % interval, from "
            "the spread of the stand-ins' rates (NaN: unknown, as with one stand-in)",
        )
        exported = {m.metric for m in self._metrics}
        for scope_id, stats in self._scope_labels.scopes(frame):
            flagged = stats.proxy
            if not flagged:
                continue
            scope = self._series_of(scope_id)
            bounds = stats.proxy_error
            for name in sorted(flagged):
                if (name in exported and stats.metrics.get(name) is not None) or name in stats.counts:
                    metric = name in exported
                    family.samples.append((scope.proxy(name, metric=metric), 1.0))
                    bound = bounds.get(name)
                    errors.samples.append(
                        (
                            scope.proxy(name, metric=metric, family=PROXY_ERROR),
                            math.nan if bound is None else bound,
                        )
                    )
        return family, errors

    def _series_of(self, scope_id: ScopeId) -> ScopeSeries:
        series = self._scope_series.get(scope_id)
        if series is None:
            with_procs, with_regions = self._series_with
            labels = self._scope_labels.labels(scope_id, with_procs=with_procs, with_regions=with_regions)
            series = self._scope_series[scope_id] = ScopeSeries(self._book, labels, self._metrics)
        return series
