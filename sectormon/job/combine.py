"""One job frame from the nodes' frames of one interval: job totals, and every node's scopes.

Job totals are the nodes' scaled counts summed in the nodes' order (the same float every time), with
the profile's metrics evaluated over them. A node with no frame in the interval adds nothing and
lowers the coverage. Each node keeps its own scopes as its own replay computed them, named
``node:HOST/cmg:N`` and ``node:HOST/core:N``; each node's regions likewise (:mod:`.regions`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sectormon.data.frames import Frame, ScopeStats, ThreadTime, WindowStats
from sectormon.job.keys import node_key
from sectormon.job.regions import JobRegions, summed_scope
from sectormon.metrics.formulas import MetricSet


def summed_thread_time(parts: Sequence[ThreadTime | None]) -> ThreadTime | None:
    """The job's thread time: the nodes' counted and kernel seconds added (``None``: no node
    could tell; nodes that could not are left out of both sums)."""
    known = [part for part in parts if part is not None]
    if not known:
        return None
    return ThreadTime(
        sum(p.counted_s for p in known), sum(p.kernel_s for p in known), sum(p.teardown_s for p in known)
    )


class JobCombiner:
    """Builds job frames from node frames (a profile's metrics, the number of nodes)."""

    def __init__(self, metrics: MetricSet, hosts: Sequence[str]) -> None:
        self._metrics = metrics
        self._hosts = tuple(hosts)
        self._regions = JobRegions(metrics)

    def summed(self, parts: Sequence[tuple[ScopeStats, float]], seconds: float) -> ScopeStats:
        """The job scope of ``parts`` (each node's scope and its seconds) over ``seconds``."""
        return summed_scope(self._metrics, parts, seconds, len(self._hosts) * seconds)

    def window(self, parts: Mapping[str, WindowStats], seconds: float) -> WindowStats:
        return WindowStats(
            seconds=seconds,
            total=self.summed([(w.total, w.seconds) for w in parts.values()], seconds),
            cmgs={node_key(h, "cmg", k): v for h, w in parts.items() for k, v in w.cmgs.items()},
            cores={node_key(h, "core", k): v for h, w in parts.items() for k, v in w.cores.items()},
            nodes={h: w.total for h, w in parts.items()},
            thread_time=summed_thread_time([w.thread_time for w in parts.values()]),
            regions=self._regions.combine({h: w.regions for h, w in parts.items()}),
        )

    def frame(
        self,
        t: float,
        frames: Mapping[str, Frame],
        *,
        interval: float,
        run_seconds: float,
        final: bool = False,
    ) -> Frame:
        """The job frame at job time ``t`` from the frames the nodes made for it (by host).

        A final frame's top level is the whole run (``interval`` is then the job's span), as a
        node's is.
        """
        present = [h for h in self._hosts if h in frames]
        ordered = {h: frames[h] for h in present}
        recent_seconds = max((f.recent.seconds for f in ordered.values()), default=0.0)
        groups: dict[str, float] = {}
        for f in ordered.values():
            for group, share in f.groups.items():
                groups[group] = groups.get(group, 0.0) + share / len(ordered)
        active = {f.active_group for f in ordered.values()}
        return Frame(
            t=t,
            interval=interval,
            overhead=sum(f.overhead for f in ordered.values()) / len(ordered) if ordered else 0.0,
            total=self.summed([(f.total, f.interval) for f in ordered.values()], interval),
            cmgs={node_key(h, "cmg", k): v for h, f in ordered.items() for k, v in f.cmgs.items()},
            cores={node_key(h, "core", k): v for h, f in ordered.items() for k, v in f.cores.items()},
            threads={node_key(h, "thread", k): v for h, f in ordered.items() for k, v in f.threads.items()},
            bindings={node_key(h, "thread", k): v for h, f in ordered.items() for k, v in f.bindings.items()},
            procs={node_key(h, "proc", k): v for h, f in ordered.items() for k, v in f.procs.items()},
            processes={node_key(h, "proc", k): v for h, f in ordered.items() for k, v in f.processes.items()},
            thread_time=summed_thread_time([f.thread_time for f in ordered.values()]),
            recent=self.window({h: f.recent for h, f in ordered.items()}, recent_seconds),
            run=self.window({h: f.run for h, f in ordered.items()}, run_seconds),
            groups=groups,
            active_group=active.pop() if len(active) == 1 else "",
            final=final,
            warnings=tuple(f"node {h}: {w}" for h, f in ordered.items() for w in f.warnings),
            nodes={h: f.total for h, f in ordered.items()},
            regions=self._regions.combine({h: f.regions for h, f in ordered.items()}),
        )
