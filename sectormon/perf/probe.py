"""Test-count each event once on the calling thread: does it open, and does it count?

An implementation-defined raw code may open fine and never count, so "opened but counted nothing"
is reported as ``zero`` (suspicious), never as a measured zero. Each event is opened in a group of
its own, so one bad event cannot hide the others. :func:`probe_events` first opens them all
together around one run of the workload, and takes from that run only the events that counted;
every other one (not opened, nothing counted, or never on a counter while the others held them)
is probed again alone, so nothing is judged from a multiplexed run. One workload for all instead
of one per event takes most of the probe off a start (docs/perf-tuning.md, bench_start.py).
Events that user-only counting can never see (the scheduler's context switches and migrations)
are reported ``unsupported`` under ``exclude_kernel``: their 0 would be made up, and a missing
input must show as n/a.
"""

from __future__ import annotations

import mmap
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sectormon.perf.errors import PerfError
from sectormon.perf.events import counts_only_in_kernel, parse_event
from sectormon.perf.group import PerfGroup


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What a short test count of one event on this host showed.

    ``counts``: opened and counted something. ``zero``: opened but never counted (suspicious, not a
    measured zero: an unsupported implementation-defined code may do this). ``unsupported``: the
    open failed; ``reason`` carries the errno name and the explanation.
    """

    event: str
    state: str
    reason: str = ""
    value: int = 0


PAGE = mmap.PAGESIZE
_WORK_PAGES = 16
_WORK_LOOPS = 20_000


def probe_workload() -> int:
    """A short mix of arithmetic, memory traffic, fresh page faults and one sleep (a context switch)."""
    acc = 0
    for i in range(_WORK_LOOPS):
        acc = (acc * 31 + i) & 0xFFFF_FFFF
    with mmap.mmap(-1, _WORK_PAGES * PAGE) as region:
        for offset in range(0, _WORK_PAGES * PAGE, PAGE):
            region[offset] = (acc + offset) & 0xFF
        acc += region[0]
    time.sleep(0.001)
    return acc


def _unsupported(name: str, exc: PerfError, stage: str) -> ProbeResult:
    """``reason`` starts with the errno name (or the stage that failed without one)."""
    return ProbeResult(name, "unsupported", reason=f"{exc.errno_name if exc.errno else stage}: {exc}")


def probe_event(
    name: str,
    spec_text: str,
    *,
    exclude_kernel: bool = True,
    sysfs_root: str = "/sys",
    exclude_user: bool = False,
) -> ProbeResult:
    """Open event ``name`` (perf spec ``spec_text``) alone on this thread around
    :func:`probe_workload` and classify the result."""
    try:
        spec = parse_event(spec_text, sysfs_root=sysfs_root)
    except PerfError as exc:
        return _unsupported(name, exc, "spec")
    if exclude_kernel and counts_only_in_kernel(spec):
        return ProbeResult(
            name,
            "unsupported",
            reason=f"user-only: '{spec.spec}' happens in kernel mode, and counting is user space only "
            "by default (--include-kernel counts kernel mode)",
        )
    try:
        group = PerfGroup(
            [spec], pid=0, cpu=-1, names=[name], exclude_kernel=exclude_kernel, exclude_user=exclude_user
        )
    except PerfError as exc:
        return _unsupported(name, exc, "open")
    try:
        group.reset()
        group.enable()
        probe_workload()
        group.disable()
        values = group.read()
    except PerfError as exc:
        return _unsupported(name, exc, "read")
    finally:
        group.close()
    value = values.values[0]
    if value > 0:
        return ProbeResult(name, "counts", value=value)
    if values.time_running == 0:
        reason = "opened but was never scheduled on a counter (time_running 0)"
    else:
        where = "in user space " if exclude_kernel else ""
        reason = f"opened and ran but counted nothing {where}during the probe (an unsupported code, or rare)"
    return ProbeResult(name, "zero", reason=reason, value=0)


def probe_events(
    events: Sequence[tuple[str, str]],
    *,
    exclude_kernel: bool = True,
    sysfs_root: str = "/sys",
    exclude_user: bool = False,
) -> dict[str, ProbeResult]:
    """Probe every ``(name, perf spec)`` in ``events``; keyed by name, in the given order."""
    counted = _counted_together(
        events, exclude_kernel=exclude_kernel, sysfs_root=sysfs_root, exclude_user=exclude_user
    )
    return {
        name: counted.get(name)
        or probe_event(
            name, spec, exclude_kernel=exclude_kernel, sysfs_root=sysfs_root, exclude_user=exclude_user
        )
        for name, spec in events
    }


def _counted_together(
    events: Sequence[tuple[str, str]], *, exclude_kernel: bool, sysfs_root: str, exclude_user: bool
) -> dict[str, ProbeResult]:
    """The events that count when all of them are open, each in a group of its own, around one
    run of :func:`probe_workload`; the others are left out (:func:`probe_event` judges them)."""
    groups: list[tuple[str, PerfGroup]] = []
    try:
        for name, spec_text in events:
            try:
                spec = parse_event(spec_text, sysfs_root=sysfs_root)
                if exclude_kernel and counts_only_in_kernel(spec):
                    continue
                group = PerfGroup(
                    [spec],
                    pid=0,
                    cpu=-1,
                    names=[name],
                    exclude_kernel=exclude_kernel,
                    exclude_user=exclude_user,
                )
            except PerfError:
                continue
            groups.append((name, group))
        try:
            for _, group in groups:
                group.reset()
                group.enable()
            probe_workload()
            for _, group in groups:
                group.disable()
            values = [(name, group.read().values[0]) for name, group in groups]
        except PerfError:
            return {}
    finally:
        for _, group in groups:
            group.close()
    return {name: ProbeResult(name, "counts", value=value) for name, value in values if value > 0}
