"""A job as one side of ``sectormon compare``: its totals and every node's scopes.

Scopes: ``total`` (the job), ``node:HOST`` (a node's total), ``node:HOST/cmg:N`` and
``node:HOST/core:N``: each node's whole-run window, exactly as its own recording's replay gives
it. Two jobs on different hosts compare node by node in the order they were given
(:func:`pair_nodes`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from sectormon.data.frames import Frame, ScopeStats
from sectormon.data.run_metrics import RunMetrics
from sectormon.errors import UsageError
from sectormon.files.regular import check_name
from sectormon.job.nodes import Alignment


def job_facts(frame: Frame, alignment: Alignment, *, label: str) -> dict[str, Any]:
    """What a job side says about itself (the comparison's ``info``)."""
    return {
        "path": label,
        "source": "job",
        "nodes": [n.host for n in alignment.nodes],
        "seconds": frame.run.seconds,
    }


def job_run_metrics(frame: Frame, alignment: Alignment, *, label: str) -> RunMetrics:
    """A job's final frame as a :class:`RunMetrics`."""
    scopes: dict[str, ScopeStats] = {"total": frame.run.total}
    for node in alignment.nodes:
        scopes[f"node:{node.host}"] = frame.nodes[node.host]
        prefix = f"node:{node.host}/"
        scopes.update((k, v) for k, v in frame.run.cmgs.items() if k.startswith(prefix))
        scopes.update((k, v) for k, v in frame.run.cores.items() if k.startswith(prefix))
    return RunMetrics(
        label=label,
        kind="job",
        metrics={k: dict(v.metrics) for k, v in scopes.items()},
        coverage={k: dict(v.coverage) for k, v in scopes.items()},
        counts={k: dict(v.counts) for k, v in scopes.items()},
        info=job_facts(frame, alignment, label=label),
        proxy={k: v.proxy for k, v in scopes.items() if v.proxy},
    )


def _renamed(run: RunMetrics, names: Mapping[str, str]) -> RunMetrics:
    def rename(scope: str) -> str:
        if not scope.startswith("node:"):
            return scope
        host, sep, rest = scope[len("node:") :].partition("/")
        return f"node:{names[host]}{sep}{rest}"

    return RunMetrics(
        label=run.label,
        kind=run.kind,
        metrics={rename(k): v for k, v in run.metrics.items()},
        coverage={rename(k): v for k, v in run.coverage.items()},
        counts={rename(k): v for k, v in run.counts.items()},
        info=run.info,
        proxy={rename(k): v for k, v in run.proxy.items()},
    )


def pair_nodes(base: RunMetrics, other: RunMetrics) -> tuple[RunMetrics, RunMetrics, list[str]]:
    """Jobs on the same hosts compare host by host. On different hosts the nodes pair up in the
    order given (``node:1``, ``node:2``...), said in a warning; different node counts compare
    only the totals' and matching hosts' scopes."""
    base_hosts: Sequence[str] = base.info.get("nodes", ())
    other_hosts: Sequence[str] = other.info.get("nodes", ())
    if not base_hosts or not other_hosts or set(base_hosts) == set(other_hosts):
        return base, other, []
    if len(base_hosts) != len(other_hosts):
        return (
            base,
            other,
            [
                f"the jobs have {len(base_hosts)} and {len(other_hosts)} nodes on different hosts: "
                "only the job totals compare"
            ],
        )
    pairs = ", ".join(f"{b} vs {o}" for b, o in zip(base_hosts, other_hosts, strict=True))
    base_names = {h: str(i) for i, h in enumerate(base_hosts, start=1)}
    other_names = {h: str(i) for i, h in enumerate(other_hosts, start=1)}
    warning = f"the jobs ran on different hosts: nodes compared in the order given ({pairs})"
    return _renamed(base, base_names), _renamed(other, other_names), [warning]


def job_final(paths: Sequence[str], *, skip_bad: bool = False) -> tuple[Frame, Alignment, Any, list[str]]:
    """A job file, or several node recordings taken as one job: its final frame, its nodes (their
    hosts and offsets: a job file's extracted recordings are gone on return), its profile and the
    alignment's warnings."""
    from contextlib import ExitStack

    from sectormon.job.jobfile import is_job_file, open_job
    from sectormon.job.nodes import align, node_from_recording
    from sectormon.job.replay import combiner, final_job_frame
    from sectormon.profiles.codec import profile_from_dict

    for path in paths:
        check_name(path, "recording")
        if not os.path.isfile(path):
            raise UsageError(f"{path}: no such file (give recordings, or a job file from sectormon merge)")
    with ExitStack() as stack:
        if len(paths) == 1:
            alignment = stack.enter_context(open_job(paths[0], skip_bad=skip_bad))
        else:
            jobs = [p for p in paths if is_job_file(p)]
            if jobs:
                raise UsageError(f"{jobs[0]} is a merged job: give it alone, or the nodes' recordings")
            alignment = align([node_from_recording(p, label=p, skip_bad=skip_bad) for p in paths])
        combiner(alignment)  # one profile for every node, checked before the replays
        frame = final_job_frame(alignment, skip_bad=skip_bad)
        first = alignment.nodes[0]
        profile = profile_from_dict(dict(first.header.profile), source=first.label)
        return frame, alignment, profile, list(alignment.warnings)
