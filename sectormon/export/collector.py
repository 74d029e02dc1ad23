"""A prometheus_client collector that renders the newest frame a session published.

The design notes of this module are in docs/internals.md.
"""

from __future__ import annotations

import collections
import math
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
    StateSetMetricFamily,
)

from sectormon import __version__
from sectormon.export.names import PREFIX, exported_metrics
from sectormon.frames import Frame, ScopeStats

SCOPE_LABELS = ("host", "profile", "source", "sector", "scope", "cmg", "core")
PROC_LABELS = ("pid", "comm", "rank")
"""Added to every scope's labels while processes are exported (empty outside the ``proc`` scope:
Prometheus treats an empty label as no label)."""

DEFAULT_PROCS = 48
"""Processes exported by default: an A64FX node runs at most one MPI rank per core (48)."""

FOLD_BACKLOG = 64
"""Frames queued without a scrape before :meth:`FrameCollector.publish` folds them itself (when no
scrape is folding at that moment), so an endpoint nobody scrapes does not grow."""

ROTATION = "rotate"
"""The rotation mode a header names when it says none: sectormon's own group rotation."""


@dataclass(frozen=True, slots=True)
class ScopeId:
    """Where a scope sits: its kind and the CMG, core, thread or process it stands for ("" where
    none; a process also by its command and MPI rank)."""

    scope: str
    cmg: str = ""
    core: str = ""
    thread: str = ""
    pid: str = ""
    comm: str = ""
    rank: str = ""


def sector_state(sector_config: Mapping[str, Any]) -> str:
    """``on``/``off`` from a header's sector configuration (the Fujitsu runtime's
    ``FLIB_SCCR_CNTL``, or the simulator's ``enabled``), ``unknown`` when it says neither."""
    value = sector_config.get("FLIB_SCCR_CNTL", sector_config.get("enabled"))
    text = str(value).upper() if value is not None else ""
    return {"TRUE": "on", "FALSE": "off"}.get(text, "unknown")


def _cmg_of_core(topology: Mapping[str, Any]) -> dict[str, str]:
    cmgs = topology.get("cmgs")
    out: dict[str, str] = {}
    if isinstance(cmgs, Mapping):
        for cmg, cpus in cmgs.items():
            if isinstance(cpus, list):
                for cpu in cpus:
                    out[str(cpu)] = str(cmg)
    return out


class FrameCollector:
    """Renders a session's newest frame as OpenMetrics families (a prometheus_client collector)."""

    def __init__(
        self,
        header: Mapping[str, Any],
        *,
        source: str | None = None,
        threads: bool = False,
        procs: int = DEFAULT_PROCS,
    ) -> None:
        """``source``: the ``source`` label (default: the header's source kind; a replay passes
        ``replay``). ``threads``: also export per-thread scopes (cardinality: one series set per
        thread). ``procs``: export at most this many processes (see :func:`exported_procs`)."""
        profile = header.get("profile") or {}
        source_info = header.get("source") or {}
        self._metrics = exported_metrics(profile.get("metrics") or ())
        self._threads = threads
        self._procs = procs
        self._cmg_of_core = _cmg_of_core(header.get("topology") or {})
        self._groups = tuple(header.get("groups") or ())
        options = header.get("options") or {}
        self._rotation = str(options.get("rotation", ROTATION))
        self._constant = {
            "host": str(header.get("host", "")),
            "profile": str(profile.get("name", "")),
            "source": source or str(source_info.get("kind", "")),
            "sector": sector_state(header.get("sector_config") or {}),
        }
        self._info = {
            "version": str(header.get("sectormon", __version__)),
            "cpu": str(header.get("cpu", "")),
            "kernel": str(header.get("kernel", "")),
            "rotation": self._rotation,
            **self._constant,
        }
        self._queue: collections.deque[Frame] = collections.deque()
        self._fold_lock = threading.Lock()
        self._shown: Frame | None = None
        self._frames = 0
        self._counts: dict[ScopeId, dict[str, float]] = {}
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
            for scope_id, stats in self._scopes(frame):
                sums = self._counts.setdefault(scope_id, {})
                for event, count in stats.counts.items():
                    if math.isfinite(count):
                        sums[event] = sums.get(event, 0.0) + count
            self._shown = frame
            self._frames += 1

    def _scopes(self, frame: Frame) -> Iterator[tuple[ScopeId, ScopeStats]]:
        yield ScopeId("total"), frame.total
        for cmg, stats in frame.cmgs.items():
            yield ScopeId("cmg", cmg=cmg), stats
        for core, stats in frame.cores.items():
            yield ScopeId("core", cmg=self._cmg_of_core.get(core, ""), core=core), stats
        if self._threads:
            for tid, stats in frame.threads.items():
                yield ScopeId("thread", thread=tid), stats
        for pid in exported_procs(frame, self._procs):
            info = frame.processes.get(pid)
            command = info.command if info is not None else ""
            rank = "" if info is None or info.rank is None else str(info.rank)
            yield ScopeId("proc", pid=pid, comm=command, rank=rank), frame.procs[pid]

    def _labels(self, scope_id: ScopeId, with_procs: bool) -> list[str]:
        c = self._constant
        values = [
            c["host"],
            c["profile"],
            c["source"],
            c["sector"],
            scope_id.scope,
            scope_id.cmg,
            scope_id.core,
        ]
        if self._threads:
            values.append(scope_id.thread)
        if with_procs:
            values += (scope_id.pid, scope_id.comm, scope_id.rank)
        return values

    # -- prometheus_client Collector ---------------------------------------------------------------

    def describe(self) -> list[Metric]:
        """Nothing to check at registration (the families follow the frames)."""
        return []

    def collect(self) -> Iterator[Metric]:
        with self._fold_lock:
            self._fold()
            frame = self._shown
            frames = self._frames
            counts = {scope_id: dict(sums) for scope_id, sums in self._counts.items()}
            self.scrapes += 1
        yield InfoMetricFamily(PREFIX, "sectormon's version and what this endpoint serves", value=self._info)
        yield CounterMetricFamily(f"{PREFIX}_frames", "Frames the session has made so far", value=frames)
        if frame is None:
            return  # start-up: no interval has ended yet
        yield from self._frame_families(frame, counts)

    def _frame_families(
        self, frame: Frame, counts: Mapping[ScopeId, Mapping[str, float]]
    ) -> Iterator[Metric]:
        with_procs = any(scope_id.scope == "proc" for scope_id in counts)
        label_names = [
            *SCOPE_LABELS,
            *(["thread"] if self._threads else []),
            *(PROC_LABELS if with_procs else ()),
        ]
        constant = list(self._constant)
        top = [self._constant[k] for k in constant]
        yield _single_gauge(
            f"{PREFIX}_frame_time",
            "Stream time at the end of the frame these series come from (the JSON frame's t)",
            "seconds",
            constant,
            top,
            frame.t,
        )
        yield _single_gauge(
            f"{PREFIX}_frame_interval",
            "Length of the frame's interval",
            "seconds",
            constant,
            top,
            frame.interval,
        )
        yield _single_gauge(
            f"{PREFIX}_overhead",
            "sectormon's own sampling CPU time over the interval, as a fraction of one core",
            "ratio",
            constant,
            top,
            frame.overhead,
        )
        active = StateSetMetricFamily(
            f"{PREFIX}_active_group",
            f"The group running at the end of the interval ({self._rotation} mode)",
            labels=constant,
        )
        active.add_metric(top, {g: g == frame.active_group for g in (self._groups or frame.groups)})
        yield active
        group_share = GaugeMetricFamily(
            f"{PREFIX}_group_coverage",
            "Fraction of the interval each group was counted",
            labels=[*constant, "group"],
            unit="ratio",
        )
        for group, share in frame.groups.items():
            group_share.add_metric([*top, group], share)
        yield group_share
        if frame.thread_coverage is not None:
            yield _single_gauge(
                f"{PREFIX}_thread_coverage",
                "Share of the target's CPU time (the kernel's account) its counted threads ran",
                "ratio",
                constant,
                top,
                frame.thread_coverage,
            )

        scopes = [(self._labels(scope_id, with_procs), stats) for scope_id, stats in self._scopes(frame)]
        coverage = GaugeMetricFamily(
            f"{PREFIX}_coverage",
            "Fraction of the interval a metric's inputs were counted (the minimum over them)",
            labels=[*label_names, "metric"],
            unit="ratio",
        )
        for exported in self._metrics:
            family = GaugeMetricFamily(exported.family, exported.help, labels=label_names, unit=exported.unit)
            for labels, stats in scopes:
                value = stats.metrics.get(exported.metric)
                if value is None or not math.isfinite(value):
                    continue  # n/a: absent, never 0
                family.add_metric(labels, value * exported.scale)
                covered = stats.coverage.get(exported.metric)
                if covered is not None:
                    coverage.add_metric([*labels, exported.metric], covered)
            yield family
        yield coverage
        events = CounterMetricFamily(
            f"{PREFIX}_events",
            "Scaled count of each event, summed over the intervals so far (units as in the profile)",
            labels=[*label_names, "event"],
        )
        for scope_id, sums in counts.items():
            labels = self._labels(scope_id, with_procs)
            for event, total in sums.items():
                events.add_metric([*labels, event], total)
        yield events


def exported_procs(frame: Frame, limit: int) -> list[str]:
    """The processes of ``frame`` a scrape exports, at most ``limit``: those with an MPI rank by
    rank, then the others by pid. The order depends on the processes alone, not on their counts,
    so a process keeps its series from scrape to scrape."""
    if limit <= 0 or not frame.procs:
        return []

    def order(pid: str) -> tuple[int, int, int]:
        info = frame.processes.get(pid)
        rank = info.rank if info is not None else None
        return (0, rank, int(pid)) if rank is not None else (1, 0, int(pid))

    return sorted(frame.procs, key=order)[:limit]


def _single_gauge(
    name: str, help_text: str, unit: str, label_names: list[str], labels: list[str], value: float
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, help_text, labels=label_names, unit=unit)
    family.add_metric(labels, value)
    return family
