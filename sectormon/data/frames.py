"""Frames: one tick's results, what every sink renders (TUI, JSON stream, compare).

A frame is immutable and JSON-able. Its scope dictionaries are keyed by strings: cores by CPU
number (``"12"``, or ``"unbound"`` for threads not pinned to one CPU), CMGs by id (``"0"``),
threads by tid.

A metric whose inputs are missing, unsupported or whose denominator is zero is ``None`` (rendered
``n/a``), never 0. Every event and metric carries its coverage (0..1, the fraction of the window it
was counted; for a metric the minimum over its inputs) and metrics whose inputs were counted in
different groups are listed in ``split``; under ``--proxy`` the events and metrics a scope
estimated from stand-in units are listed in ``proxy`` (absent from the JSON when none), and
``proxy_error`` gives each one's error bound: the relative half-width of its 95 % interval
(``None``, JSON null: unknown, as with a single stand-in; :mod:`sectormon.metrics.proxy_scale`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sectormon.data.binding import ThreadBinding
from sectormon.files.text import is_ascii_digits

if TYPE_CHECKING:
    from sectormon.data.hotspots import FrameHotspots

FRAME_SCHEMA = "sectormon/frame/1"
HEADER_SCHEMA = "sectormon/header/1"


_NO_PROXY: frozenset[str] = frozenset()
_NO_ERROR: Mapping[str, float | None] = {}


def scope_order(key: str) -> tuple[int, int, str]:
    """The order of a frame's scope keys: numbers (CPUs, CMGs, tids) numerically, anything else
    (``unbound``) after them."""
    if key.lstrip("-").isdigit():
        return (0, int(key), "")
    return (1, 0, key)


class ScopeStats:
    """Counts, rates, metrics and confidence of one scope (a core, a CMG, a thread or the total).

    Immutable: the fields are read-only and set by the constructor. ``ScopeStats(counts, rates,
    metrics, coverage, split, seconds)`` takes mappings; the engine makes :class:`RowScopeStats`
    instead, which hold a scope's values as rows against key tuples shared by all scopes of a
    frame and build the four dicts the first time one of them is read (a cache: what a reader
    sees never changes). A frame has many scopes and most sinks read few of them (the TUI its
    visible rows, compare the last frame), while building every dict up front was a large share
    of a frame's cost (``bench_engine`` in docs/perf-tuning.md).
    """

    __slots__ = (
        "_counts",
        "_coverage",
        "_metrics",
        "_proxy",
        "_proxy_error",
        "_rates",
        "_rows",
        "_seconds",
        "_split",
    )

    def __init__(
        self,
        counts: Mapping[str, float],
        rates: Mapping[str, float],
        metrics: Mapping[str, float | None],
        coverage: Mapping[str, float],
        split: frozenset[str] = frozenset(),
        seconds: float = 0.0,
        proxy: frozenset[str] = frozenset(),
        proxy_error: Mapping[str, float | None] | None = None,
    ) -> None:
        self._counts = counts
        self._rates = rates
        self._metrics = metrics
        self._coverage = coverage
        self._split = split
        self._seconds = seconds
        self._proxy = proxy
        self._proxy_error: Mapping[str, float | None] = proxy_error if proxy_error is not None else _NO_ERROR
        self._rows: _Rows | None = None

    def _build(self) -> None:
        """The four dicts from the rows (two threads may both build them: the same dicts)."""
        rows = self._rows
        if rows is None:
            return
        self._counts, self._rates, self._metrics, self._coverage = _dicts(rows)
        self._rows = None

    @property
    def counts(self) -> Mapping[str, float]:
        """Scaled count per event the scope counted."""
        if self._rows is not None:
            self._build()
        return self._counts

    @property
    def rates(self) -> Mapping[str, float]:
        """Count per second of the window, per event (empty for a window of no time)."""
        if self._rows is not None:
            self._build()
        return self._rates

    @property
    def metrics(self) -> Mapping[str, float | None]:
        """Metric values; ``None`` (n/a) where an input is missing or a denominator is zero."""
        if self._rows is not None:
            self._build()
        return self._metrics

    @property
    def coverage(self) -> Mapping[str, float]:
        """Per event and metric, the fraction of the window it was counted (0..1)."""
        if self._rows is not None:
            self._build()
        return self._coverage

    @property
    def split(self) -> frozenset[str]:
        """Metrics whose inputs were counted in different groups."""
        return self._split

    @property
    def seconds(self) -> float:
        """The window's length for this scope."""
        return self._seconds

    @property
    def proxy(self) -> frozenset[str]:
        """Events and metrics estimated from the stand-in units of a ``--proxy`` session."""
        return self._proxy

    @property
    def proxy_error(self) -> Mapping[str, float | None]:
        """The error bound of each figure in :attr:`proxy`: the relative half-width of its 95 %
        interval (:func:`sectormon.metrics.proxy.half_width`); ``None`` or absent: unknown (one
        stand-in, or a frame written before bounds were)."""
        return self._proxy_error

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScopeStats):
            return NotImplemented
        return (
            self.counts,
            self.rates,
            self.metrics,
            self.coverage,
            self._split,
            self._seconds,
            self._proxy,
            self._proxy_error,
        ) == (
            other.counts,
            other.rates,
            other.metrics,
            other.coverage,
            other._split,
            other._seconds,
            other._proxy,
            other._proxy_error,
        )

    __hash__ = None  # type: ignore[assignment]  # equal by content, like the dicts it holds

    def __repr__(self) -> str:
        return (
            f"ScopeStats(counts={self.counts!r}, rates={self.rates!r}, metrics={self.metrics!r}, "
            f"coverage={self.coverage!r}, split={self._split!r}, seconds={self._seconds!r}"
            + (f", proxy={self._proxy!r})" if self._proxy else ")")
        )

    def to_json(self) -> dict[str, Any]:
        rows = self._rows
        # Unbuilt, the JSON gets dicts of its own that are not kept (a stream builds each once).
        counts, rates, metrics, coverage = (
            _dicts(rows)
            if rows is not None
            else (dict(self._counts), dict(self._rates), dict(self._metrics), dict(self._coverage))
        )
        data: dict[str, Any] = {
            "counts": counts,
            "rates": rates,
            "metrics": metrics,
            "coverage": coverage,
            "split": sorted(self._split),
            "seconds": self._seconds,
        }
        if self._proxy:
            data["proxy"] = sorted(self._proxy)
        if self._proxy_error:
            data["proxy_error"] = {name: self._proxy_error[name] for name in sorted(self._proxy_error)}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScopeStats:
        return cls(
            counts=dict(data.get("counts", {})),
            rates=dict(data.get("rates", {})),
            metrics=dict(data.get("metrics", {})),
            coverage=dict(data.get("coverage", {})),
            split=frozenset(data.get("split", ())),
            seconds=float(data.get("seconds", 0.0)),
            proxy=frozenset(data.get("proxy", ())),
            proxy_error=_bounds(data.get("proxy_error")),
        )


def _bounds(data: Any) -> dict[str, float | None]:
    """A frame's ``proxy_error`` as read back: numbers kept, anything else unknown (``None``)."""
    if not isinstance(data, Mapping):
        return {}
    return {
        str(name): float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        for name, value in data.items()
    }


# (event keys, counts, rates or None for none, metric keys, metric values, coverage keys, coverage)
_Rows = tuple[
    Sequence[str],
    Sequence[float],
    "Sequence[float] | None",
    Sequence[str],
    Sequence["float | None"],
    Sequence[str],
    Sequence[float],
]


class RowScopeStats(ScopeStats):
    """A :class:`ScopeStats` whose dicts are ``dict(zip(keys, values))``, built when first read.

    ``rates`` share ``count_keys`` (``None``: no rates). ``coverage_keys`` are the event keys
    followed by the metric keys. ``proxied``: the events and metrics estimated from stand-in
    units, each with its error bound (:attr:`ScopeStats.proxy_error`); ``None``: none. The
    sequences must not change afterwards.
    """

    __slots__ = ()

    def __init__(
        self,
        count_keys: Sequence[str],
        counts: Sequence[float],
        rates: Sequence[float] | None,
        metric_keys: Sequence[str],
        metrics: Sequence[float | None],
        coverage_keys: Sequence[str],
        coverage: Sequence[float],
        split: frozenset[str],
        seconds: float,
        proxied: Mapping[str, float | None] | None = None,
    ) -> None:
        # The four dict slots stay unset until ScopeStats._build: only the properties read them.
        self._rows = (count_keys, counts, rates, metric_keys, metrics, coverage_keys, coverage)
        self._split = split
        self._seconds = seconds
        if proxied:
            self._proxy = frozenset(proxied)
            self._proxy_error = proxied
        else:
            self._proxy = _NO_PROXY
            self._proxy_error = _NO_ERROR


def _dicts(
    rows: _Rows,
) -> tuple[dict[str, float], dict[str, float], dict[str, float | None], dict[str, float]]:
    """Counts, rates, metrics and coverage of a scope kept as rows (see :class:`RowScopeStats`)."""
    count_keys, counts, rates, metric_keys, metrics, coverage_keys, coverage = rows
    return (
        dict(zip(count_keys, counts, strict=True)),
        dict(zip(count_keys, rates, strict=True)) if rates is not None else {},
        dict(zip(metric_keys, metrics, strict=True)),
        # Events first, then metrics: a metric named like an event overwrites it, in place.
        dict(zip(coverage_keys, coverage, strict=True)),
    )


EMPTY_SCOPE = ScopeStats(counts={}, rates={}, metrics={}, coverage={})


@dataclass(frozen=True, slots=True)
class ThreadTime:
    """The target's CPU time that was counted against what the kernel says it used, in seconds
    over the same span, and the part of the kernel's figure put down to the exit teardown of
    counted processes, which no counter can see (see :mod:`sectormon.metrics.thread_time`)."""

    counted_s: float
    kernel_s: float
    teardown_s: float = 0.0

    @property
    def countable_s(self) -> float:
        """The kernel's figure without the teardown: the CPU time counters could have counted."""
        return self.kernel_s - self.teardown_s

    @property
    def coverage(self) -> float | None:
        """``counted / countable`` up to 1.0 (the kernel's figure has a 10 ms resolution, so a
        fully counted target can come out a little above); ``None`` when the target used no CPU."""
        if self.countable_s <= 0:
            return None
        return min(1.0, self.counted_s / self.countable_s)

    def to_json(self) -> dict[str, float]:
        return {"counted_s": self.counted_s, "kernel_s": self.kernel_s, "teardown_s": self.teardown_s}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ThreadTime:
        return cls(float(data["counted_s"]), float(data["kernel_s"]), float(data.get("teardown_s", 0.0)))


@dataclass(frozen=True, slots=True)
class ProcessScope:
    """What names a process of the ``procs`` scope: pid, command, parent pid, MPI rank."""

    pid: int
    command: str
    parent: int | None = None
    rank: int | None = None

    def label(self) -> str:
        """``rank 3 (4242 app)`` or ``4242 app``."""
        named = f"{self.pid} {self.command}"
        return named if self.rank is None else f"rank {self.rank} ({named})"

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "command": self.command, "parent": self.parent, "rank": self.rank}


def _thread_time_json(data: dict[str, Any], thread_time: ThreadTime | None) -> None:
    """Add ``thread_coverage`` and ``thread_time`` when the source could tell (else nothing, so a
    frame of a source without the kernel's figure is the frame sectormon always wrote)."""
    if thread_time is not None:
        data["thread_coverage"] = thread_time.coverage
        data["thread_time"] = thread_time.to_json()


@dataclass(frozen=True, slots=True)
class RegionStats:
    """One marked region (:mod:`sectormon.data.regions`) as frames show it: over all its threads
    (``total``) and per thread (by tid), core, CMG, MPI rank and process (by pid).

    ``calls`` counts its entries in every thread, ``open`` says an entry had not stopped when it
    was read (its counts so far are in), ``seconds`` is the longest time any of its threads spent
    inside it (their counts' rates are per that time). Each scope's counts are scaled by their own
    groups' times and its coverage says how much of the region each event and metric saw.
    ``nodes``: a merged job's region per node (by host; empty, and absent from the JSON, otherwise).
    """

    name: str
    number: int
    calls: int
    thread_count: int
    open: bool
    seconds: float
    total: ScopeStats
    threads: Mapping[str, ScopeStats] = field(default_factory=dict)
    cores: Mapping[str, ScopeStats] = field(default_factory=dict)
    cmgs: Mapping[str, ScopeStats] = field(default_factory=dict)
    ranks: Mapping[str, ScopeStats] = field(default_factory=dict)
    procs: Mapping[str, ScopeStats] = field(default_factory=dict)
    nodes: Mapping[str, ScopeStats] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "number": self.number,
            "calls": self.calls,
            "thread_count": self.thread_count,
            "open": self.open,
            "seconds": self.seconds,
            "total": self.total.to_json(),
        }
        for key in ("threads", "cores", "cmgs", "ranks", "procs"):
            scopes: Mapping[str, ScopeStats] = getattr(self, key)
            data[key] = {k: v.to_json() for k, v in scopes.items()}
        if self.nodes:
            data["nodes"] = {k: v.to_json() for k, v in self.nodes.items()}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RegionStats:
        def scopes(key: str) -> dict[str, ScopeStats]:
            return {k: ScopeStats.from_json(v) for k, v in data.get(key, {}).items()}

        return cls(
            name=str(data["name"]),
            number=int(data.get("number", 0)),
            calls=int(data.get("calls", 0)),
            thread_count=int(data.get("thread_count", 0)),
            open=bool(data.get("open", False)),
            seconds=float(data.get("seconds", 0.0)),
            total=ScopeStats.from_json(data["total"]),
            threads=scopes("threads"),
            cores=scopes("cores"),
            cmgs=scopes("cmgs"),
            ranks=scopes("ranks"),
            procs=scopes("procs"),
            nodes=scopes("nodes"),
        )


def _regions_json(data: dict[str, Any], regions: Mapping[str, RegionStats]) -> None:
    """Adds ``regions`` to a frame's or window's JSON when a region was counted (so a run without
    regions writes exactly what it wrote before regions existed)."""
    if regions:
        data["regions"] = {label: stats.to_json() for label, stats in regions.items()}


@dataclass(frozen=True, slots=True)
class WindowStats:
    """All scopes of one window (the last N seconds, or the whole run); ``nodes``: a job's
    (see :class:`Frame`)."""

    seconds: float
    total: ScopeStats
    cmgs: Mapping[str, ScopeStats]
    cores: Mapping[str, ScopeStats]
    nodes: Mapping[str, ScopeStats] = field(default_factory=dict)
    thread_time: ThreadTime | None = None
    regions: Mapping[str, RegionStats] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "seconds": self.seconds,
            "total": self.total.to_json(),
            "cmgs": {k: v.to_json() for k, v in self.cmgs.items()},
            "cores": {k: v.to_json() for k, v in self.cores.items()},
        }
        if self.nodes:
            data["nodes"] = {k: v.to_json() for k, v in self.nodes.items()}
        _thread_time_json(data, self.thread_time)
        _regions_json(data, self.regions)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WindowStats:
        return cls(
            seconds=float(data["seconds"]),
            total=ScopeStats.from_json(data["total"]),
            cmgs={k: ScopeStats.from_json(v) for k, v in data.get("cmgs", {}).items()},
            cores={k: ScopeStats.from_json(v) for k, v in data.get("cores", {}).items()},
            nodes={k: ScopeStats.from_json(v) for k, v in data.get("nodes", {}).items()},
            thread_time=ThreadTime.from_json(data["thread_time"]) if "thread_time" in data else None,
            regions={k: RegionStats.from_json(v) for k, v in data.get("regions", {}).items()},
        )


@dataclass(frozen=True, slots=True)
class MetricDelta:
    """One metric compared with the baseline, with the PMU document's sign convention.

    ``improvement`` is positive when the current run is better: base - now for lower-is-better
    metrics (miss/stall rates, energy), now - base for higher-is-better (IPC). ``relative`` is
    improvement / |base| (``None`` when base is 0 or either side is n/a).
    """

    base: float | None
    now: float | None
    delta: float | None
    improvement: float | None
    relative: float | None

    def to_json(self) -> dict[str, float | None]:
        return {
            "base": self.base,
            "now": self.now,
            "delta": self.delta,
            "improvement": self.improvement,
            "relative": self.relative,
        }


@dataclass(frozen=True, slots=True)
class Baseline:
    """Deltas of the current ``recent`` window against the window marked as baseline.

    ``after_change``: the baseline window starts at this configuration change, which cut it
    short (a window never mixes two configurations); ``None`` when it was not cut.
    """

    t_from: float
    t_to: float
    total: Mapping[str, MetricDelta]
    cmgs: Mapping[str, Mapping[str, MetricDelta]]
    cores: Mapping[str, Mapping[str, MetricDelta]]
    after_change: float | None = None

    def to_json(self) -> dict[str, Any]:
        def scope(d: Mapping[str, MetricDelta]) -> dict[str, Any]:
            return {k: v.to_json() for k, v in d.items()}

        out: dict[str, Any] = {"t_from": self.t_from, "t_to": self.t_to}
        if self.after_change is not None:
            out["after_change"] = self.after_change
        out.update(
            total=scope(self.total),
            cmgs={k: scope(v) for k, v in self.cmgs.items()},
            cores={k: scope(v) for k, v in self.cores.items()},
        )
        return out


@dataclass(frozen=True, slots=True)
class FrameRotation:
    """The rotation running at the end of a frame's interval: its mode, timeslice and reason.

    :class:`sectormon.rotation.plan.Rotation` fills it, through the session's header and the
    ``rotation`` marks of a change; read back from a recording, each value is kept as written
    (``None`` where absent), so a frame says what the recording said.
    """

    mode: object = None
    timeslice: object = None
    reason: object = None

    @classmethod
    def from_json(cls, data: object) -> FrameRotation | None:
        """The rotation a header's ``rotation`` or a rotation mark's data gives (``None``: none,
        an empty object or not an object)."""
        if not isinstance(data, Mapping) or not data:
            return None
        return cls(data.get("mode"), data.get("timeslice"), data.get("reason"))

    def to_json(self) -> dict[str, object]:
        return {"mode": self.mode, "timeslice": self.timeslice, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Frame:
    """One tick: the last interval per core/CMG/thread/total, plus the rolling and whole-run windows.

    ``overhead`` is the sampler's own CPU use over the interval, as a fraction of one core.
    ``groups`` maps each group to its coverage in the interval; ``active_group`` is the group
    running at the end of the interval (the rotation indicator). ``nodes`` is a job's nodes (their
    totals by host; each node's CMGs and cores are in ``cmgs``/``cores`` under ``node:HOST/...``):
    empty for one node's session. ``hotspots`` is a sampling session's hot-spot tables
    (``--sample``), absent otherwise. ``rotation`` is the rotation running at the end of the
    interval (:class:`FrameRotation`), absent for a recording made before sessions said it.

    ``procs`` is the counted processes (by pid; each the sum of its threads), covering what
    ``threads`` covers, and ``processes`` names them. ``bindings`` holds each thread's newest
    binding (by tid; :class:`~sectormon.data.binding.ThreadBinding`), where the source read one:
    its JSON is the thread's ``binding`` object. ``thread_time`` compares the target's CPU
    time that was counted with the kernel's figure over the interval (the final frame: the run);
    ``None`` when the source cannot tell (CPU-wide sessions, recordings without it).
    """

    t: float
    interval: float
    overhead: float
    total: ScopeStats
    cmgs: Mapping[str, ScopeStats]
    cores: Mapping[str, ScopeStats]
    threads: Mapping[str, ScopeStats]
    recent: WindowStats
    run: WindowStats
    groups: Mapping[str, float] = field(default_factory=dict)
    active_group: str = ""
    baseline: Baseline | None = None
    final: bool = False
    warnings: tuple[str, ...] = ()
    nodes: Mapping[str, ScopeStats] = field(default_factory=dict)
    hotspots: FrameHotspots | None = None
    procs: Mapping[str, ScopeStats] = field(default_factory=dict)
    processes: Mapping[str, ProcessScope] = field(default_factory=dict)
    thread_time: ThreadTime | None = None
    rotation: FrameRotation | None = None
    regions: Mapping[str, RegionStats] = field(default_factory=dict)
    bindings: Mapping[str, ThreadBinding] = field(default_factory=dict)

    @property
    def thread_coverage(self) -> float | None:
        """The share of the target's CPU time that was counted (``None``: unknown)."""
        return self.thread_time.coverage if self.thread_time is not None else None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "schema": FRAME_SCHEMA,
            "t": self.t,
            "interval": self.interval,
            "overhead": self.overhead,
            "active_group": self.active_group,
            "groups": dict(self.groups),
            "total": self.total.to_json(),
            "cmgs": {k: v.to_json() for k, v in self.cmgs.items()},
            "cores": {k: v.to_json() for k, v in self.cores.items()},
            "threads": {k: self._thread_json(k, v) for k, v in self.threads.items()},
            "recent": self.recent.to_json(),
            "run": self.run.to_json(),
            "baseline": self.baseline.to_json() if self.baseline else None,
            "final": self.final,
        }
        if self.warnings:
            data["warnings"] = list(self.warnings)
        if self.nodes:
            data["nodes"] = {k: v.to_json() for k, v in self.nodes.items()}
        if self.hotspots is not None:
            data["hotspots"] = self.hotspots.to_json()
        if self.procs:
            data["procs"] = {k: self._proc_json(k, v) for k, v in self.procs.items()}
        _thread_time_json(data, self.thread_time)
        if self.rotation is not None:
            data["rotation"] = self.rotation.to_json()
        _regions_json(data, self.regions)
        return data

    def _thread_json(self, key: str, stats: ScopeStats) -> dict[str, Any]:
        """A thread's stats and, when known, its ``binding`` (absent otherwise: a frame of a
        recording without bindings is the frame sectormon always wrote)."""
        data = stats.to_json()
        binding = self.bindings.get(key)
        if binding is not None:
            data["binding"] = binding.to_json()
        return data

    def _proc_json(self, key: str, stats: ScopeStats) -> dict[str, Any]:
        info = self.processes.get(key)
        if info is not None:
            named = info.to_json()
        else:  # no name seen for it: its pid from the key (a job's keys are node:HOST/proc:PID)
            pid = key.rsplit(":", 1)[-1]
            named = {"pid": int(pid) if is_ascii_digits(pid) else None, "command": None}
        return {**named, **stats.to_json()}
