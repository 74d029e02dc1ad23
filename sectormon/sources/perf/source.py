"""The live perf source: counter groups on the threads of a process, a launched command, or CPUs.

Implements :class:`sectormon.sources.base.Source` on the wall clock. CMG-scoped events need one
CPU-wide (``pid=-1``) group per CMG, which perf_event_paranoid may forbid; whether it is allowed is
decided by actually opening one CPU-wide software event, and when it is not, :meth:`cmg_units`
returns nothing and :attr:`cmg_unavailable_reason` says why, so the sampler reports those events
unavailable and runs everything else.
"""

from __future__ import annotations

import dataclasses
import os
import select
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sectormon.data.readings import Unit
from sectormon.errors import SectormonError
from sectormon.host import roots
from sectormon.host.cpu_time import StatTimes, TargetCpu, TargetCpuClock
from sectormon.host.processes import environ_of, read_process_info
from sectormon.host.threads import has_ended
from sectormon.host.topology import Topology, format_cpu_list
from sectormon.perf import abi
from sectormon.perf.errors import GONE_ERRNOS, PerfError, TargetGone
from sectormon.perf.events import EventSpec, parse_event
from sectormon.perf.group import GroupValues, PerfGroup
from sectormon.perf.probe import ProbeResult, probe_events
from sectormon.profiles.model import EventDef, Profile
from sectormon.sources.base import (
    Capabilities,
    CounterGroup,
    SampleFeed,
    SampleRequest,
    SourceBase,
    UnitsUpdate,
)
from sectormon.sources.perf.binding_check import BindingCheck
from sectormon.sources.perf.launch import describe_exit
from sectormon.sources.perf.targets import BadTarget, CommandTarget, CpuTarget, Target, children_warning
from sectormon.sources.perf.thread_binding import BindingWatch
from sectormon.sources.perf.thread_units import ThreadTracker

CMG_CHECK_EVENT = "cpu-clock"


class _ExecGatedGroup:
    """A group on a command still held before exec.

    Enabling it now would count the waiting child, so an ``enable()`` before the release reopens the
    group with ``enable_on_exec`` (the kernel enables it at exec) and a ``disable()`` undoes that.
    Once the command runs, every call goes straight to the group.
    """

    def __init__(self, opener: Callable[[bool], PerfGroup], gated: Callable[[], bool]) -> None:
        self._opener = opener
        self._gated = gated
        self._inner = opener(False)
        self._armed = False
        self.events = self._inner.events

    def _reopen(self, armed: bool) -> None:
        self._inner.close()
        self._inner = self._opener(armed)
        self._armed = armed

    def enable(self) -> None:
        if not self._gated():
            self._inner.enable()
        elif not self._armed:
            self._reopen(True)

    def disable(self) -> None:
        if not self._gated():
            self._inner.disable()
        elif self._armed:
            self._reopen(False)

    def reset(self) -> None:
        self._inner.reset()

    def read(self) -> GroupValues:
        return self._inner.read()

    def close(self) -> None:
        self._inner.close()

    @property
    def closed(self) -> bool:
        return self._inner.closed

    @property
    def ids(self) -> tuple[int, ...]:
        return self._inner.ids

    @property
    def leader_fd(self) -> int:
        return self._inner.leader_fd


AFFINITY_REFRESH_POLLS = 25  # re-read known threads' binding every 25 polls (0.5 s at 20 ms slices)
FULL_SCAN_POLLS = 5
"""List /proc/PID/task at least every 5 polls (100 ms at 20 ms slices) even when the thread count
stands still: the count cannot see one thread ending while another starts within one timeslice,
and a new thread found this way has missed at most those polls of counting."""

CHILD_CHECK_SCANS = 10
"""Thread list reads between looks for child processes started by any thread of the target (one
/proc read per thread; the main thread's is read every time), until one is found."""


class PerfSource(SourceBase):
    """Source of live counts through perf_event_open (``kind = "perf"``)."""

    kind = "perf"
    default_timeslice = 0.02
    default_interval = 1.0

    def __init__(
        self,
        target: Target,
        topology: Topology,
        *,
        exclude_kernel: bool = True,
        exclude_hv: bool = True,
        exclude_user: bool = False,
        per_core_warning: bool = True,
    ) -> None:
        """``per_core_warning``: warn that unbound threads count in no core (the monitor's
        per-core figures need binding; ``stat`` shows none)."""
        self.target = target
        self.topology = topology
        # The kernel multiplexes and counts task time on any target; only CPUs are a fixed set.
        self.capabilities = Capabilities(
            multiplexes=True,
            wall_clock=True,
            follows_threads=not isinstance(target, CpuTarget),
            task_time=True,
            launches=isinstance(target, CommandTarget),
        )
        self.exclude_kernel = exclude_kernel
        self.exclude_hv = exclude_hv
        self.exclude_user = exclude_user  # -e's ':k': kernel mode alone
        if isinstance(target, CpuTarget):
            missing = [c for c in target.cpus if c not in topology.cpus]
            if missing:
                raise BadTarget(
                    f"--cpus: CPU {format_cpu_list(missing)} does not exist here "
                    f"(CPUs: {format_cpu_list(topology.cpus)})"
                )
        self._tracker = ThreadTracker(
            topology.cmg_of,
            refresh_every=AFFINITY_REFRESH_POLLS,
            watch=BindingWatch(),
            pinner=target.pinner if isinstance(target, CommandTarget) else None,
            warn_unbound=per_core_warning,
        )
        # A sector-cache run is a run on an A64FX: the sector events exist nowhere else (and
        # --profile a64fx is refused elsewhere). Its threads' binding is checked.
        self._binding_check = BindingCheck(topology.cmg_of, topology.cmg_label) if topology.is_a64fx else None
        self._cpu_units: tuple[Unit, ...] | None = None
        self._thread_count: int | None = None
        self._children_warned = False
        self._listing_warned = False  # the threads of a process could not be listed for want of fds
        self._scans = 0  # thread list reads (poll_units)
        self._unreported: list[int] = []  # processes found, not yet in a UnitsUpdate
        self._opened_specs: set[str] = set()  # event specs opened on some thread already
        self._t0: float | None = None
        self._woken = threading.Event()  # wait_until sleeps on it: wake() cuts the sleep short
        self._groups: list[PerfGroup | _ExecGatedGroup] = []
        self._specs: dict[str, EventSpec] = {}
        self._cmg_checked = False
        self._cmg_reason: str | None = None
        self._closed = False
        self._cpu_clock: TargetCpuClock | None = None

    # --- clock ---
    def start(self) -> None:
        if self._t0 is None:
            if not isinstance(self.target, CpuTarget):  # before the launch: a command is our child
                self._cpu_clock = TargetCpuClock(
                    self._target_pids,
                    reaped_root=self._root_reaped,
                    root_final=self._root_final_times,
                    children_counted=self.target.follow_children,
                )
            self.target.start()
            self._t0 = time.monotonic()
            if isinstance(self.target, CommandTarget) and self.target.pid is not None:
                threading.Thread(
                    target=self._wake_at_exit, args=(self.target.pid,), name="sectormon-exit", daemon=True
                ).start()

    def _wake_at_exit(self, pid: int) -> None:
        """Wake the sampler when the command exits: a short command's run ends then, not at the
        sampler's next tick (a tenth of a second under kernel rotation, most of a `-- true`)."""
        try:
            fd = os.pidfd_open(pid)
        except OSError:  # no pidfd (an old kernel) or no fd left: the next tick notices the exit
            return
        try:
            select.select([fd], [], [])
        except OSError:
            return
        finally:
            os.close(fd)
        self.wake()

    def now(self) -> float:
        return 0.0 if self._t0 is None else time.monotonic() - self._t0

    def add_environment(self, env: Mapping[str, str]) -> None:
        if not isinstance(self.target, CommandTarget) or self.target.pid is not None:
            raise SectormonError("the environment is given before the command is launched")
        self.target.env.update(env)

    def wait_until(self, t: float) -> None:
        """Sleep until ``t`` or until :meth:`wake`; the first wait lets a gated command exec (its
        first groups are open)."""
        self.release()
        remaining = t - self.now()
        if remaining > 0 and self._woken.wait(remaining):
            self._woken.clear()

    def wake(self) -> None:
        self._woken.set()

    def release(self) -> None:
        """Let a gated command exec now (also done by the first :meth:`wait_until`)."""
        if isinstance(self.target, CommandTarget):
            self.target.release()

    def _gated(self) -> bool:
        return isinstance(self.target, CommandTarget) and self.target.gated

    # --- units ---
    def _cpu_unit(self, cpu: int) -> Unit:
        return Unit("cpu", cpu, core=cpu, cmg=self.topology.cmg_of.get(cpu))

    def poll_units(self) -> UnitsUpdate:
        """The units now. The same ``alive`` tuple as last time means nothing changed.

        Listing /proc/PID/task is the costliest part of a timeslice after the counters themselves,
        so it is skipped while the thread count is unchanged, except every FULL_SCAN_POLLS polls
        and whenever the tracker is due to refresh affinities. The threads of the first poll
        (before anything counts) are the roots: their groups inherit, so whatever they start is
        counted from its first instruction, found by a later poll or not.
        """
        target = self.target
        if isinstance(target, CpuTarget):
            if self._cpu_units is None:
                self._cpu_units = tuple(self._cpu_unit(c) for c in target.cpus)
            return UnitsUpdate(alive=self._cpu_units)
        count = target.thread_count()
        if (
            count is not None
            and count == self._thread_count
            and (self._tracker.polls + 1) % FULL_SCAN_POLLS
            and not self._tracker.refresh_due
            and not target.finished()
            and not target.new_children()
        ):
            return self._with_processes(self._tracker.unchanged())
        self._thread_count = count
        self._scans += 1
        threads = target.threads(every_thread=self._scans % CHILD_CHECK_SCANS == 1)
        short = target.listing_short_of_fds
        update = self._with_processes(self._tracker.update(threads, threads, roots=self._scans == 1))
        update = self._with_binding_check(update)
        if short is not None and not self._listing_warned:
            self._listing_warned = True
            update = dataclasses.replace(update, warnings=(*update.warnings, _listing_short_warning(short)))
        if not target.follow_children and not self._children_warned and target.pid is not None:
            tids = [tid for tid, where in threads.items() if where.process == target.pid]
            # The main thread at every read (scripts and launchers fork from it), all threads now and then.
            children = target.child_pids(tids if self._scans % CHILD_CHECK_SCANS == 1 else (target.pid,))
            if children:
                self._children_warned = True
                named = [(child, target.process_name(child)) for child in children]
                update = dataclasses.replace(
                    update, warnings=(*update.warnings, children_warning(target.pid, named))
                )
        return update

    def _with_processes(self, update: UnitsUpdate) -> UnitsUpdate:
        """``update`` naming the processes first seen since the last one.

        A command held before exec is still a copy of sectormon (its name, its environment), so
        processes are named once it runs.
        """
        target = self.target
        if isinstance(target, CpuTarget):
            return update
        self._unreported += target.new_processes()
        if not self._unreported or self._gated():
            return update
        pids, self._unreported = self._unreported, []
        infos = tuple(info for info in (read_process_info(pid) for pid in pids) if info is not None)
        return dataclasses.replace(update, processes=(*update.processes, *infos)) if infos else update

    def _with_binding_check(self, update: UnitsUpdate) -> UnitsUpdate:
        """``update`` with what the binding check of a sector-cache run finds, at each poll that
        re-read every thread's affinity (a thread is judged from its first such read on, see
        :meth:`ThreadTracker.bindings`)."""
        check = self._binding_check
        if check is None or not self._tracker.refreshed:
            return update
        warnings = check.review(self._tracker.bindings())
        return dataclasses.replace(update, warnings=(*update.warnings, *warnings)) if warnings else update

    def _needed_cmgs(self) -> list[int]:
        all_cmgs = sorted(c for c, cpus in self.topology.cmgs.items() if cpus)
        if isinstance(self.target, CpuTarget):
            wanted = {self.topology.cmg_of.get(c) for c in self.target.cpus}
            return [c for c in all_cmgs if c in wanted]
        units = self._tracker.units
        if any(u.cmg is None for u in units):
            return all_cmgs
        wanted = {u.cmg for u in units}
        return [c for c in all_cmgs if c in wanted]

    def _check_cmg(self) -> None:
        if self._cmg_checked:
            return
        self._cmg_checked = True
        firsts = [cpus[0] for _, cpus in sorted(self.topology.cmgs.items()) if cpus]
        if not firsts:
            self._cmg_reason = "the topology has no CMG (or cache domain) to count on"
            return
        try:
            group = PerfGroup(
                [parse_event(CMG_CHECK_EVENT)],
                pid=-1,
                cpu=firsts[0],
                exclude_kernel=self.exclude_kernel,
                exclude_hv=self.exclude_hv,
                exclude_user=self.exclude_user,
            )
        except PerfError as exc:
            self._cmg_reason = str(exc)  # the paranoid/capability explanation and its fix
            return
        group.close()

    @property
    def cmg_unavailable_reason(self) -> str | None:
        """Why CMG-wide (per-CPU, ``pid=-1``) counting is impossible here, or None when it works.

        Decided once, by opening one CPU-wide software event on the first CMG's first CPU.
        """
        self._check_cmg()
        return self._cmg_reason

    def cmg_units(self) -> tuple[Unit, ...]:
        if self.cmg_unavailable_reason is not None:
            return ()
        return tuple(
            Unit("cmg", cmg, core=self.topology.cmgs[cmg][0], cmg=cmg) for cmg in self._needed_cmgs()
        )

    # --- groups ---
    def _spec(self, event: EventDef) -> EventSpec:
        spec = self._specs.get(event.spec)
        if spec is None:
            spec = self._specs[event.spec] = parse_event(event.spec, sysfs_root=roots.SYSFS_PATH)
        return spec

    def open_group(self, unit: Unit, events: Sequence[EventDef]) -> CounterGroup:
        specs = [self._spec(e) for e in events]
        names = [e.name for e in events]
        if unit.kind == "thread":
            pid, cpu = unit.ident, -1
        elif unit.kind == "cpu":
            pid, cpu = -1, unit.ident
        elif unit.kind == "cmg":
            if unit.core is None:
                raise ValueError(f"CMG unit {unit.key} has no CPU to open its group on")
            pid, cpu = -1, unit.core
        else:
            raise ValueError(f"unknown unit kind {unit.kind!r}")

        inherit = unit.kind == "thread" and unit.inherit
        only_threads = isinstance(self.target, CpuTarget) or not self.target.follow_children

        def opener(enable_on_exec: bool) -> PerfGroup:
            return PerfGroup(
                specs,
                pid=pid,
                cpu=cpu,
                names=names,
                exclude_kernel=self.exclude_kernel,
                exclude_hv=self.exclude_hv,
                exclude_user=self.exclude_user,
                enable_on_exec=enable_on_exec,
                inherit=inherit,
                inherit_thread=only_threads,
            )

        group: PerfGroup | _ExecGatedGroup
        try:
            group = _ExecGatedGroup(opener, self._gated) if self._gated() and pid > 0 else opener(False)
        except PerfError as exc:
            if unit.kind == "thread" and self._ended_under(exc, unit.ident, specs):
                raise TargetGone(
                    f"thread {unit.ident} ended while its counters were opened ({exc.errno_name})",
                    errno=exc.errno,
                    event=exc.event,
                ) from None
            raise
        if unit.kind == "thread":
            self._opened_specs.update(spec.spec for spec in specs)
        self._groups = [g for g in self._groups if not g.closed]
        self._groups.append(group)
        return group

    def _ended_under(self, exc: PerfError, tid: int, specs: Sequence[EventSpec]) -> bool:
        """Whether an open failed because thread ``tid`` exited under it.

        A thread exiting during perf_event_open makes the kernel answer ESRCH, ENODEV or ENOENT,
        the last two also what a host without the event says. Events that already opened on a
        thread exist here, so for them these errors mean the thread ended; so does a thread that
        is no longer running.
        """
        if exc.errno not in GONE_ERRNOS:
            return False
        if all(spec.spec in self._opened_specs for spec in specs):
            return True
        return has_ended(tid)

    def needs_counter(self, event: EventDef) -> bool:
        """Software events (task-clock, page-faults, ...) are kernel counts, not PMU counters."""
        try:
            return self._spec(event).type != abi.PERF_TYPE_SOFTWARE
        except PerfError:
            return True  # not openable here: the probe reports it

    def probe(self, events: Sequence[EventDef]) -> Mapping[str, ProbeResult]:
        return probe_events(
            [(e.name, e.spec) for e in events],
            exclude_kernel=self.exclude_kernel,
            sysfs_root=roots.SYSFS_PATH,
            exclude_user=self.exclude_user,
        )

    def open_sampling(self, request: SampleRequest, profile: Profile) -> SampleFeed:
        """Sample the target beside the counting (a launched command: from its exec)."""
        from sectormon.sources.perf.live_samples import PerfSampleFeed

        return PerfSampleFeed(self.target, request, profile, exclude_kernel=self.exclude_kernel)

    # --- the kernel's CPU time of the target ---
    def _target_pids(self) -> tuple[int, ...]:
        """The processes whose threads are counted, the root first (one that ended and was reaped
        by a followed parent is in that parent's ``cutime``)."""
        return () if isinstance(self.target, CpuTarget) else self.target.followed_pids()

    def _root_reaped(self) -> bool:
        return isinstance(self.target, CommandTarget) and self.target.finished()

    def _root_final_times(self) -> StatTimes | None:
        return self.target.final_times if isinstance(self.target, CommandTarget) else None

    def target_cpu(self) -> TargetCpu | None:
        """utime + stime (+ reaped children's) of the target's processes (see :mod:`.cpu_time`)."""
        if self._cpu_clock is None or not self._target_pids():
            return None
        return self._cpu_clock.read()

    def units_cpu_seconds(self, units: Sequence[Unit]) -> Mapping[str, float]:
        """Each thread's utime + stime from ``/proc/PID/task/TID/stat`` (CPUs: none, every
        CPU is always there)."""
        if isinstance(self.target, CpuTarget):
            return {}
        import psutil  # here: only proxies ask, and a start without them needs none of psutil

        wanted: dict[int, dict[int, str]] = {}
        for unit in units:
            if unit.kind == "thread":
                wanted.setdefault(unit.process or unit.ident, {})[unit.ident] = unit.key
        seconds: dict[str, float] = {}
        for pid, keys in wanted.items():
            try:
                threads = psutil.Process(pid).threads()
            except psutil.Error:  # ended, or not ours to read
                continue
            for thread in threads:
                key = keys.get(thread.id)
                if key is not None:
                    seconds[key] = thread.user_time + thread.system_time
        return seconds

    # --- lifecycle and description ---
    def finished(self) -> bool:
        return self.target.finished()

    @property
    def exit_code(self) -> int | None:
        """The command's exit code once it has ended by itself (command mode), else None (also
        when the session ended it: Ctrl-C, --duration, --count)."""
        target = self.target
        if not isinstance(target, CommandTarget) or target.stopped:
            return None
        return target.exit_code

    def end_note(self) -> str | None:
        code = self.exit_code
        return describe_exit(code) if code else None

    def _sector_config(self) -> dict[str, str]:
        """FLIB_* variables (the Fujitsu runtime's sector cache settings) of the target's environment.

        A launched command's environment is the one handed to exec (also right while it is still
        held at the gate, when /proc shows the forked copy's); a running process's from /proc.
        """
        target = self.target
        if isinstance(target, CommandTarget):
            env: Mapping[str, str] = target.env
        elif target.pid is None:
            return {}
        else:
            env = environ_of(target.pid) or {}  # gone, or not ours to read: none known
        return {k: v for k, v in sorted(env.items()) if k.startswith("FLIB_")}

    def cpu_description(self) -> str:
        return self.topology.model

    def topology_json(self) -> dict[str, Any]:
        return self.topology.to_json()

    def describe(self) -> dict[str, Any]:
        target = self.target
        if isinstance(target, CpuTarget):
            info: dict[str, Any] = {"mode": "cpus", "pid": None, "cmdline": [], "threads": 0}
            info["cpus"] = list(target.cpus)
        else:
            info = {
                "mode": target.mode,
                "pid": target.pid,
                "cmdline": list(target.argv) if isinstance(target, CommandTarget) else target.cmdline(),
                "threads": len(self._tracker.units),
                "cpus": target.cpus(),
                "pids": list(target.roots),
                "children": target.follow_children,
            }
            if isinstance(target, CommandTarget) and target.pinner is not None:
                info["bind"] = list(target.pinner.cpus)  # --bind: the CPUs its threads were pinned to
        return {"target": info, "sector_config": self._sector_config(), "source": "perf"}

    def close(self) -> None:
        """Close every group opened through this source, then release the target. Idempotent."""
        groups, self._groups = self._groups, []
        for group in groups:
            group.close()
        if not self._closed:
            self._closed = True
            self.target.close()


def _listing_short_warning(pid: int) -> str:
    """What a thread list that found no fd left means for the figures (said once)."""
    return (
        f"out of file descriptors (EMFILE) listing the threads of pid {pid}: threads started while "
        f"the limit holds are not found and have no row of their own; their counts are in pid {pid}'s "
        "totals (its inherited groups) (fix: raise the limit with `ulimit -n`, or count fewer "
        "threads or events)"
    )
