"""The scope stats of a frame's windows: contributions in, :class:`ScopeStats` per scope out.

A frame has up to three windows (its interval, the recent window, the run; a baseline is one
more), and each window's scopes are its threads, processes, cores, CMGs and total. The engine
hands over each window's contributions; here they are laid out into scopes (a layout kept from
frame to frame while the window's entities stay the same, :func:`sectormon.metrics.scopes.layout`),
summed column by column (:mod:`sectormon.metrics.scopes`), adjusted for ``--proxy`` stand-ins
(:mod:`sectormon.metrics.proxy_scale`), and turned into stats in one batch per metric list across
all windows (:class:`sectormon.metrics.stats.StatsBuilder`): evaluating a metric has a fixed cost
per batch, so fewer, larger batches are cheaper. The engine keeps what accumulates; this keeps
only the profile's layout of events and levels and the per-window caches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sectormon.data.frames import EMPTY_SCOPE, ScopeStats, ThreadTime, WindowStats, scope_order
from sectormon.data.proxy import ProxySetting
from sectormon.metrics.formulas import MetricSet
from sectormon.metrics.proxy_scale import ProxyScaler
from sectormon.metrics.scopes import CLASS_OF_KIND, Block, EventClasses, Layout, joined_blocks, layout
from sectormon.metrics.scopes import blocks as scope_blocks
from sectormon.metrics.stats import StatsBuilder
from sectormon.metrics.windows import Contribution, ScopeKey, Terms, as_wall

TOTAL: ScopeKey = ("total", "")

WindowSpec = tuple[Sequence[Contribution], float, bool, "Mapping[ScopeKey, Terms] | None", str]
"""One window of a frame: (contributions, window seconds, with thread scopes?, archive of ended
entities or None, the name under which its scope layout is kept from frame to frame)."""


class FrameStats:
    """Scope stats of a profile's windows, one batch per metric list (module docstring)."""

    def __init__(
        self,
        mset: MetricSet,
        names: tuple[str, ...],
        pe: Mapping[str, int],
        cmg: Mapping[str, int],
        proxy: ProxySetting | None,
        *,
        own_time: bool,
    ) -> None:
        """``names``: the profile's events in order; ``pe``/``cmg``: the countable per-PE and
        CMG-wide events by position; ``proxy``: the session's ``--proxy`` setting; ``own_time``:
        whether units are scaled by their own time (see :mod:`sectormon.metrics.engine`)."""
        self._n = len(names)
        self._own_time = own_time
        self._builder = StatsBuilder(mset, names)
        # Per event, the class of the entities that may count it (scopes.CLASS_OF_KIND), -1: none.
        self._classes = EventClasses(
            [
                CLASS_OF_KIND["cpu"] if name in pe else CLASS_OF_KIND["cmg"] if name in cmg else -1
                for name in names
            ]
        )
        # Levels whose metric lists are equal compute the same things, so their scopes share one
        # batch: ("thread", "core") always, ("cmg", "total") unless a metric is total-only.
        self._batch_of_level: dict[str, str] = {}
        for level in ("core", "thread", "cmg", "total"):
            metric_names = mset.names_at(level)
            self._batch_of_level[level] = next(
                (b for b in self._batch_of_level.values() if mset.names_at(b) == metric_names), level
            )
        # A process is computed like a thread (its metrics are the thread level's).
        self._batch_of_level["proc"] = self._batch_of_level["thread"]
        self.proxy = (
            ProxyScaler(proxy, names, mset, self._batch_of_level, own_time=own_time)
            if proxy is not None
            else None
        )
        self._layouts: dict[str, Layout] = {}

    def windows(self, specs: Sequence[WindowSpec], archive_version: int) -> list[dict[ScopeKey, ScopeStats]]:
        """The scope stats of several windows, computed in one batch per metric list.

        ``archive_version`` changes whenever the archive of ended entities does (a window's
        layout depends on it). Scope sums are built column-wise per window
        (:mod:`sectormon.metrics.scopes`); metrics are evaluated column-wise over a batch
        (:meth:`MetricSet.evaluate_columns`), which has a fixed cost per metric: one batch for
        the cores and threads of all windows of a frame and one for their CMGs and totals cost
        less than nine. A thread alone on its core has the same stats as that core: it is
        computed once. The figures a ``--proxy`` session estimated are known before the stats
        are built, which take them with their bounds.
        """
        n = self._n
        found: dict[str, list[tuple[int, Block]]] = {}
        aliases: list[list[tuple[ScopeKey, ScopeKey]]] = []
        proxied: list[dict[ScopeKey, dict[str, float | None]]] = []
        for w, (contributions, seconds, threads, archive, slot) in enumerate(specs):
            entities = [entity for entity, _, _ in contributions]
            version = archive_version if archive is not None else -1
            plan = self._layouts.get(slot)
            if (
                plan is None
                or plan.threads != threads
                or plan.archive_version != version
                or plan.entities != entities
            ):
                plan = self._layouts[slot] = layout(
                    entities,
                    threads=threads,
                    archive=archive,
                    archive_version=version,
                    batch_of_level=self._batch_of_level,
                )
            walled = as_wall(contributions, n, self._own_time)
            scoped = scope_blocks(walled, seconds, n, self._classes, plan)
            if self.proxy is not None:
                flags = self.proxy.adjust(
                    contributions, scoped, threads=threads, archived=archive is not None
                )
                proxied.append(flags)
            for name, block in scoped.items():
                found.setdefault(name, []).append((w, block))
            aliases.append(plan.aliases)
        results: list[dict[ScopeKey, ScopeStats]] = [{} for _ in specs]
        for name, window_blocks in found.items():
            scaled, counted, present = joined_blocks([block for _, block in window_blocks])
            seconds_col = [block.seconds for _, block in window_blocks for _ in block.keys]
            proxied_col = (
                [proxied[w].get(key) for w, block in window_blocks for key in block.keys] if proxied else None
            )
            stats = self._builder.batch(scaled, counted, present, seconds_col, name, proxied_col)
            at = 0
            for w, block in window_blocks:
                results[w].update(zip(block.keys, stats[at : at + len(block.keys)], strict=True))
                at += len(block.keys)
        for out, pairs in zip(results, aliases, strict=True):
            for thread, core in pairs:
                out[thread] = out[core]
        return results

    def empty(self, seconds: float, level: str) -> ScopeStats:
        """The stats of a scope nothing contributed to (all metrics n/a)."""
        if not self._n:
            return EMPTY_SCOPE
        zero = [(0.0,)] * self._n
        return self._builder.batch(zero, zero, zero, [seconds], self._batch_of_level[level])[0]

    def as_window(
        self, scopes: Mapping[ScopeKey, ScopeStats], seconds: float, thread_time: ThreadTime | None = None
    ) -> WindowStats:
        """A window's stats from its scopes (its total n/a when nothing contributed)."""
        return WindowStats(
            seconds=seconds,
            total=scopes.get(TOTAL) or self.empty(seconds, "total"),
            cmgs=level_of(scopes, "cmg"),
            cores=level_of(scopes, "core"),
            thread_time=thread_time,
        )


def level_of(scopes: Mapping[ScopeKey, ScopeStats], level: str) -> dict[str, ScopeStats]:
    """The scopes of one level by key, in :func:`scope_order`."""
    keys = sorted((k for lv, k in scopes if lv == level), key=scope_order)
    return {k: scopes[(level, k)] for k in keys}
