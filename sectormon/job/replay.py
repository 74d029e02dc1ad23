"""A job played as frames: every node's recording replayed through its own engine, side by side.

Each node is replayed exactly as ``sectormon replay NODE`` replays it (its own engine, its own
frame clock); its frames are put on the job's timeline by the node's offset and grouped by the
job interval they end in, and each group becomes one job frame (:mod:`.combine`). The last frame
is the job's final frame, over the whole job.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack

from sectormon.data.frames import Frame
from sectormon.data.header import Header
from sectormon.errors import UsageError
from sectormon.job.combine import JobCombiner
from sectormon.job.nodes import Alignment
from sectormon.metrics.formulas import MetricSet


def job_header(alignment: Alignment) -> Header:
    """The stream header of a job replay: the first node's header, with every node's and the job's facts."""
    from sectormon.session.replay import stream_header

    first = stream_header(alignment.nodes[0].header)
    job = {
        "interval": alignment.interval,
        "start": alignment.start,
        "end": alignment.end,
        "nodes": [
            {"host": n.host, "offset": n.offset, "first_t": n.first_t, "end_t": n.end_t, "file": n.label}
            for n in alignment.nodes
        ],
        "warnings": list(alignment.warnings),
    }
    return first.with_fields(
        host=dataclasses.replace(first.host, name="job of " + ", ".join(n.host for n in alignment.nodes)),
        extra={**first.extra, "job": job},
    )


def combiner(alignment: Alignment) -> JobCombiner:
    """The job's metrics: the nodes must share one profile (a job's totals need one set of formulas)."""
    from sectormon.profiles.codec import profile_from_dict

    profiles = {n.host: n.header.profile for n in alignment.nodes}
    names = {str(p.get("name")) if p else "?" for p in profiles.values()}
    first = alignment.nodes[0]
    if any(p != profiles[first.host] for p in profiles.values()):
        raise UsageError(
            f"the nodes were recorded with different profiles ({', '.join(sorted(names))}); "
            "a job's totals need one: record every node with the same --profile"
        )
    profile = profile_from_dict(dict(profiles[first.host]), source=first.label)
    return JobCombiner(MetricSet(profile), [n.host for n in alignment.nodes])


def job_frames(
    alignment: Alignment,
    *,
    skip_bad: bool = False,
    t_from: float | None = None,
    t_to: float | None = None,
    speed: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    on_warning: Callable[[str], None] = lambda _message: None,
) -> Iterator[Frame]:
    """The job's frames in job time (``t_from``/``t_to`` keep a range), then its final frame.
    ``speed`` paces them in real time times ``speed`` (None: as fast as possible); what the
    nodes' readers warn about (a cut file) goes to ``on_warning``."""
    from sectormon.io.reader import open_recording
    from sectormon.session.replay import Pacer, replay_frames

    job = combiner(alignment)
    interval = alignment.interval
    lo = -math.inf if t_from is None else t_from
    hi = math.inf if t_to is None else t_to
    pacer = Pacer(speed, sleep, clock, hole=interval) if speed is not None and math.isfinite(speed) else None
    with ExitStack() as stack:
        streams = {
            n.host: stack.enter_context(open_recording(n.path, skip_bad=skip_bad, name=n.label))
            for n in alignment.nodes
        }
        finals: dict[str, Frame] = {}

        def timed(host: str, offset: float) -> Iterator[tuple[float, int, str, Frame]]:
            for frame in replay_frames(streams[host]):
                if frame.final:
                    finals[host] = frame
                else:
                    aligned = frame.t + offset
                    yield aligned, math.ceil(aligned / interval - 1e-6), host, frame

        merged = heapq.merge(
            *(timed(n.host, n.offset) for n in alignment.nodes), key=lambda item: (item[0], item[2])
        )
        group: dict[str, Frame] = {}
        group_t = -math.inf
        group_k: int | None = None
        for aligned, k, host, frame in merged:
            if group and (k != group_k or host in group):
                if lo <= group_t <= hi:
                    if pacer is not None:
                        pacer.wait(group_t)
                    yield job.frame(group_t, group, interval=interval, run_seconds=group_t - alignment.start)
                group = {}
            group_t = max(group_t, aligned) if group else aligned
            group[host] = frame
            group_k = k
        if group and lo <= group_t <= hi:
            yield job.frame(group_t, group, interval=interval, run_seconds=group_t - alignment.start)
        for n in alignment.nodes:
            for warning in streams[n.host].warnings:
                on_warning(f"node {n.host}: {warning}")
    end = alignment.end
    if lo <= end <= hi and finals:
        yield job.frame(end, finals, interval=alignment.seconds, run_seconds=alignment.seconds, final=True)


def final_job_frame(alignment: Alignment, *, skip_bad: bool = False) -> Frame:
    """Only the job's final frame (what compare needs): each node replayed to its own final frame."""
    from sectormon.session.replay import final_frame

    job = combiner(alignment)
    finals = {n.host: final_frame(n.path, skip_bad=skip_bad, name=n.label)[1] for n in alignment.nodes}
    return job.frame(
        alignment.end, finals, interval=alignment.seconds, run_seconds=alignment.seconds, final=True
    )
