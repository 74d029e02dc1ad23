"""The simulated A64FX as a counter source: the same sampler, engine and sinks as on real hardware.

Units are the simulated threads, bound to FX700-numbered cores (CPU 0-47, CMG = CPU // 12), plus one
CMG unit per CMG in use for the CMG-scoped events. The source owns a simulated clock: ``now()`` is
simulated seconds (cycles / 2.2 GHz) and ``wait_until(t)`` runs the model up to ``t``. Simulated time
runs far slower than wall time (about 5 simulated microseconds per wall millisecond and thread on
the compiled core, where the sampler's Python takes most of the time, 20x less on the Python
model), hence the sim defaults below: a 10 us timeslice
and a 250 us frame interval, so the six SC groups rotate about four times per frame. The TUI paces
the simulated clock (``pace``) so a frame comes every half second, not as fast as the model runs.
A kernel's threads mark their measured phase, after the warm-up, as a region named after the
kernel (:mod:`.regions`), and a traced program's marker calls mark its own regions (:mod:`.marks`):
the slices carry them through :meth:`SimSource.read_regions`. A program running under QEMU
(``live``) adds its threads to the machine as they appear, as new units (a thread's clock starts
at the machine's), and ends with the session like a launched command.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sectormon.data.readings import Unit
from sectormon.data.regions import EMPTY, RegionSnapshot
from sectormon.errors import SectormonError, UsageError
from sectormon.host.cpu_time import TargetCpu
from sectormon.perf.group import GroupValues
from sectormon.perf.probe import ProbeResult
from sectormon.profiles.model import EventDef, Profile
from sectormon.sim import events as sim_events
from sectormon.sim.config import (
    CMGS,
    CPUS_PER_CMG,
    FREQ_HZ,
    TICKS,
    ModelConfig,
    Prefetch,
    SectorConfig,
    ticks_to_ns,
)
from sectormon.sim.counters import Cmg
from sectormon.sim.engine import Machine
from sectormon.sim.kernels import default_sectors, make_kernel
from sectormon.sim.objects import DataObjects, object_sectors, parse_objects
from sectormon.sim.thread import SimThread
from sectormon.sim.trace import TraceFile
from sectormon.sim.workload import Workload, kernel_workload, trace_workload
from sectormon.sources.base import Capabilities, SampleFeed, SampleRequest, SourceBase, UnitsUpdate
from sectormon.sources.sim.defaults import (
    DEFAULT_THREADS,
    DEFAULT_WARMUP,
    SIM_DEFAULT_INTERVAL,
    SIM_DEFAULT_TIMESLICE,
)
from sectormon.sources.sim.marks import MarkedRegions
from sectormon.sources.sim.regions import KernelRegions

if TYPE_CHECKING:  # a real program's trace: imported only by the runs that have one
    from sectormon.sim.qemu.capture import Program, TracedRun
    from sectormon.sim.qemu.workload import LiveProgram
    from sectormon.sources.sim.samples import SimSampleFeed

# Behind its pace by more than this (a slow model, a paused session), the pace starts over from the
# present moment: catching up would draw a burst of frames no one can read.
PACE_SLACK = 1.0
SECTOR_PRESETS = ("off", "on")
TRACE_WARMUP = 0.0  # a trace is the measured region: all of it counts


class SimEventError(SectormonError):
    """An event the model does not count was opened (the probe reports it first)."""


class SimCounterGroup:
    """A group of model counters on one unit: cumulative while enabled, like a perf group."""

    def __init__(self, source: SimSource, unit: Unit, events: Sequence[EventDef]) -> None:
        self._source = source
        self.unit = unit
        self.events = tuple(e.name for e in events)
        self._codes = tuple(e.code or 0 for e in events)  # all modelled: open_group checked
        self._thread = source.thread_on(unit.core) if unit.kind == "cmg" else source.thread_of(unit.ident)
        self._cmg = source.cmg(unit.cmg)
        self._acc = [0] * len(events)
        self._time = 0
        self._base: list[int] | None = None
        self._base_time = 0
        self._closed = False

    def _raw(self) -> list[int]:
        energy = self._source.config.energy
        out = []
        for code in self._codes:
            if code in sim_events.CMG_EVENTS:
                out.append(sim_events.read_cmg(code, self._cmg, energy) if self._cmg is not None else 0)
            else:
                out.append(sim_events.read_pe(code, self._thread, energy))
        return out

    def _clock(self) -> int:
        """Ticks this unit has existed: a thread's own clock (stops when it ends), else the machine's."""
        if self.unit.kind == "thread" and self._thread is not None:
            return self._thread.cyc
        return self._source.machine.tick

    def enable(self) -> None:
        if self._base is None and not self._closed:
            self._base = self._raw()
            self._base_time = self._clock()

    def disable(self) -> None:
        if self._base is not None:
            now = self._raw()
            self._acc = [a + n - b for a, n, b in zip(self._acc, now, self._base, strict=True)]
            self._time += self._clock() - self._base_time
            self._base = None

    def reset(self) -> None:
        self._acc = [0] * len(self._codes)
        self._time = 0
        if self._base is not None:
            self._base = self._raw()
            self._base_time = self._clock()

    def read(self) -> GroupValues:
        values = list(self._acc)
        time = self._time
        if self._base is not None:
            now = self._raw()
            values = [a + n - b for a, n, b in zip(values, now, self._base, strict=True)]
            time += self._clock() - self._base_time
        ns = ticks_to_ns(time)
        return GroupValues(values=tuple(values), time_enabled=ns, time_running=ns)

    def close(self) -> None:
        self._base = None
        self._closed = True


class SimSource(SourceBase):
    """A :class:`~sectormon.sources.base.Source` over the simulated machine.

    ``workload`` says what the threads run (:mod:`sectormon.sim.workload`); ``config`` is the whole
    model (geometry, timing, energy, prefetch, sectors); ``loop`` restarts finished streams forever
    (the TUI demo), so ``finished()`` never becomes true.
    """

    kind = "sim"
    # Its own clock, a fixed set of simulated threads, no kernel to multiplex or keep task time:
    # none of the capabilities, stated rather than inherited.
    capabilities = Capabilities()
    default_timeslice = SIM_DEFAULT_TIMESLICE
    default_interval = SIM_DEFAULT_INTERVAL

    def default_recent(self, interval: float) -> float:
        """Ten intervals: ten seconds of simulated time would take hours to fill."""
        return 10 * interval

    def __init__(
        self,
        workload: Workload,
        config: ModelConfig | None = None,
        *,
        loop: bool = False,
        warmup: float = 0.0,
        pace: float = 0.0,
        live: LiveProgram | None = None,
        region: str | None = None,
    ) -> None:
        self.config = config or ModelConfig()
        # The region ``sim --summary`` reports instead of the whole run (NAME or NAME#NUMBER).
        self.region = region
        # Wall seconds per simulated second that wait_until keeps to at least (0: as fast as the
        # model runs), and the (wall, simulated) moment the pace counts from.
        self.pace = pace
        self._paced_from: tuple[float, float] | None = None
        self.workload = workload
        self.loop = loop
        if not warmup >= 0:
            raise UsageError(f"--warmup {warmup:g}: give 0 or more simulated seconds")
        self.warmup = warmup
        self._origin = 0  # machine tick that is time 0 of the session (after the warm-up)
        self.machine = Machine(self.config, list(workload.specs), loop=loop)
        self._configured = self.config.sectors
        self._preset = "on" if self._configured.enabled else "off"
        self._threads = {t.tid: t for t in self.machine.threads}
        self._by_cpu = {t.cpu: t for t in self.machine.threads}
        self._ended_reported: set[int] = set()
        self._lock = threading.Lock()
        # A running program (sim -- CMD): its threads join the machine as they appear, and the
        # cycles before a thread joined are not its own (target_cpu).
        self.live = live
        self._joined_at: dict[int, int] = {}
        self._samples: SimSampleFeed | None = None  # --sample: a joining thread is sampled too
        # A kernel's threads mark their measured phase; a traced program's streams carry its marks.
        kernel = workload.kernel
        self._regions = KernelRegions(kernel.name, self.config.energy) if kernel is not None else None
        self.marks = MarkedRegions(self.config.energy)
        self.machine.on_mark = self.marks.on_mark
        self._regions_read = EMPTY

    # -- lookups used by the counter groups -------------------------------------------------------
    def thread_of(self, tid: int) -> SimThread | None:
        return self._threads.get(tid)

    def thread_on(self, cpu: int | None) -> SimThread | None:
        return self._by_cpu.get(cpu) if cpu is not None else None

    def cmg(self, ident: int | None) -> Cmg | None:
        return self.machine.cmgs.get(ident) if ident is not None else None

    # -- Source protocol ------------------------------------------------------------------------
    def start(self) -> None:
        """Run the warm-up, uncounted, then make the current cycle time 0 of the session.

        Like a fapp region placed after initialisation: the cold-start misses of the first
        microseconds would otherwise land in whichever group runs first and be extrapolated over the
        whole rotation.
        """
        if self.warmup > 0 and self._origin == 0:
            with self._lock:
                self._join_live_threads()  # a running program's first threads warm up too
                self.machine.run_until(self.warmup * FREQ_HZ)
                self._origin = self.machine.tick
            if self.machine.finished():
                raise UsageError(
                    f"the workload ended within the --warmup of {self.warmup:g} simulated seconds, "
                    "before counting started: nothing would be measured (fix: --warmup 0, or a "
                    "larger workload, e.g. --size passes=...)"
                )
        if self._regions is not None:
            self._regions.begin(self.machine)  # the measured phase starts where the warm-up ends

    def now(self) -> float:
        return (self.machine.tick - self._origin) / TICKS / FREQ_HZ

    def wait_until(self, t: float) -> None:
        if self.pace > 0:
            self._keep_pace(t)
        with self._lock:
            self._join_live_threads()
            self.machine.run_until(t * FREQ_HZ + self._origin / TICKS)

    def _join_live_threads(self) -> None:
        """A running program's threads that appeared since the last look, added to the machine
        at its present tick (called with the lock held)."""
        if self.live is None:
            return
        for spec in self.live.new_specs():
            thread = self.machine.add_thread(spec)
            self._threads[thread.tid] = thread
            self._by_cpu[thread.cpu] = thread
            self._joined_at[thread.tid] = self.machine.tick
            if self._samples is not None:
                self._samples.adopt(thread)

    def _keep_pace(self, t: float) -> None:
        """Sleep until simulated time ``t`` is due at ``pace`` wall seconds per simulated second."""
        now = time.monotonic()
        if self._paced_from is None:
            self._paced_from = (now, t)
            return
        wall0, sim0 = self._paced_from
        due = wall0 + (t - sim0) * self.pace
        if due > now:
            time.sleep(due - now)
        elif now - due > PACE_SLACK:
            self._paced_from = (now, t)

    def run_to_completion(self) -> None:
        if self.loop:
            raise UsageError("a looping simulation never completes; run it without --loop")
        with self._lock:
            self.machine.run_to_completion()

    def poll_units(self) -> UnitsUpdate:
        with self._lock:
            self._join_live_threads()
        alive = []
        ended = []
        for t in self.machine.threads:
            unit = Unit(kind="thread", ident=t.tid, core=t.cpu, cmg=t.cmg.ident)
            if t.done:
                if t.tid not in self._ended_reported:
                    self._ended_reported.add(t.tid)
                    ended.append(unit.key)
            else:
                alive.append(unit)
        return UnitsUpdate(alive=tuple(alive), ended=tuple(ended))

    def units(self) -> tuple[Unit, ...]:
        """Every simulated thread, finished or not."""
        return tuple(
            Unit(kind="thread", ident=t.tid, core=t.cpu, cmg=t.cmg.ident) for t in self.machine.threads
        )

    def cmg_units(self) -> tuple[Unit, ...]:
        return tuple(
            Unit(kind="cmg", ident=c, core=c * CPUS_PER_CMG, cmg=c) for c in sorted(self.machine.cmgs)
        )

    def open_group(self, unit: Unit, events: Sequence[EventDef]) -> SimCounterGroup:
        missing = [e.name for e in events if not sim_events.is_modelled(e.code)]
        if missing:
            raise SimEventError(
                f"event {missing[0]} is {sim_events.NOT_MODELLED}; leave it out of the groups "
                "(the probe marks it unsupported)"
            )
        if unit.kind == "thread" and unit.ident not in self._threads:
            raise SimEventError(f"no simulated thread {unit.ident}")
        if unit.kind == "cmg" and unit.cmg not in self.machine.cmgs:
            raise SimEventError(f"CMG {unit.cmg} runs no simulated thread")
        if unit.kind == "cpu":
            raise SimEventError("the simulator counts per simulated thread and per CMG, not per CPU")
        self.add_region_group(events)
        return SimCounterGroup(self, unit, events)

    def add_region_group(self, events: Sequence[EventDef]) -> None:
        """Count ``events`` (modelled ones) in every region: one group of each reading."""
        if self._regions is not None:
            self._regions.add_group(events)
        self.marks.add_group(events)

    def probe(self, events: Sequence[EventDef]) -> Mapping[str, ProbeResult]:
        energy = self.config.energy
        out: dict[str, ProbeResult] = {}
        for e in events:
            if not sim_events.is_modelled(e.code):
                out[e.name] = ProbeResult(e.name, "unsupported", sim_events.NOT_MODELLED)
                continue
            code = e.code
            assert code is not None
            if code in sim_events.CMG_EVENTS:
                value = sum(sim_events.read_cmg(code, c, energy) for c in self.machine.cmgs.values())
            else:
                value = sum(sim_events.read_pe(code, t, energy) for t in self.machine.threads)
            out[e.name] = ProbeResult(e.name, "counts", "modelled by the simulator", value)
        return out

    def finished(self) -> bool:
        if self.live is None:
            return self.machine.finished()
        with self._lock:
            self._join_live_threads()
            return self.machine.finished() and self.live.exhausted()

    @property
    def exit_code(self) -> int | None:
        """A running program's exit code once it ended by itself (negative: a signal), else None."""
        if self.live is None or self.live.run.stopped:
            return None
        return self.live.run.exit_code

    def end_note(self) -> str | None:
        code = self.exit_code
        if not code or self.live is None:
            return None
        from sectormon.sources.perf.launch import describe_exit

        return f"{self.live.run.argv[0]}: {describe_exit(code)}"

    def read_regions(self) -> RegionSnapshot | None:
        """Every region (a kernel's, a program's marked ones) when it changed since the last call."""
        snapshot = self.regions()
        if snapshot == self._regions_read:
            return None
        self._regions_read = snapshot
        return snapshot

    def regions(self) -> RegionSnapshot:
        """Every region in every thread now: the kernel's (:mod:`.regions`), then the marked ones
        (:mod:`.marks`) in the order they were first marked."""
        with self._lock:
            marked = self.marks.read()
            if self._regions is None:
                return marked
            kernel = self._regions.read(self.machine)
        if not marked.threads and not marked.unpaired:
            return kernel
        return RegionSnapshot(
            threads=kernel.threads + marked.threads, overflow=frozenset(), unpaired=marked.unpaired, dropped=0
        )

    def target_cpu(self) -> TargetCpu | None:
        """Every simulated thread's own clock: exactly what its counters could have counted."""
        cycles = sum(t.cyc - self._joined_at.get(t.tid, 0) for t in self.machine.threads)
        return TargetCpu(cycles / TICKS / FREQ_HZ)

    def describe(self) -> dict[str, Any]:
        return {
            "source": "sim",
            "simulated": True,
            "model": self.config.to_json(),
            "kernel": dict(self.workload.description),
            "loop": self.loop,
            "warmup_s": self.warmup,
            "sector_config": {"preset": self._preset, **self._current_sectors().to_json()},
            "events": sim_events.catalog(),
            "target": {"kind": "sim", "threads": len(self.machine.threads)},
        }

    def cpu_description(self) -> str:
        return "simulated A64FX"

    def topology_json(self) -> dict[str, Any]:
        """The simulated FX700: 48 CPUs, 4 CMGs of 12 (same shape as a host topology)."""
        return {
            "cpus": list(range(CMGS * CPUS_PER_CMG)),
            "cmgs": {str(c): list(range(c * CPUS_PER_CMG, (c + 1) * CPUS_PER_CMG)) for c in range(CMGS)},
            "is_a64fx": True,
            "model": "simulated A64FX (FX700 numbering)",
            "domain": "cmg",
            "variant": "",
            "excluded": [],
        }

    def open_sampling(self, request: SampleRequest, profile: Profile) -> SampleFeed:
        """Sample the model's L1D refills from now on (after the warm-up)."""
        from sectormon.sources.sim.samples import SimSampleFeed

        with self._lock:
            self._samples = SimSampleFeed(
                self.machine, self.workload, self.config.energy, request, profile, origin=self._origin
            )
        return self._samples

    def program_note(self) -> str | None:
        """What a running program's session simulated, once it is closed: how the program ended,
        the accesses simulated of those traced, and what was not simulated (None without one)."""
        live = self.live
        if live is None:
            return None
        from sectormon.sim.qemu.workload import left_out_note
        from sectormon.sources.perf.launch import describe_exit

        run = live.run
        program = run.result()
        code = program.exit_code
        ended = "stopped with the session (SIGTERM)" if run.stopped else describe_exit(code)
        traced = sum(t.accesses for t in program.threads)
        simulated = sum(t.acc for t in self.machine.threads)
        looped = " (its records looped)" if simulated > traced else ""
        parts = [
            f"sim -- {program.argv[0]}: {ended}; simulated {simulated:,} of its {traced:,} traced accesses"
            f"{looped} in {len(self.machine.threads)} thread(s)"
        ]
        threads, accesses = live.left_out(program)
        if threads:
            parts.append(left_out_note(threads, accesses, len(live.cpus)))
        if program.dropped + program.truncated:
            parts.append(f"{program.dropped + program.truncated:,} accesses not kept by the capture")
        if (untraced := program.untraced_sve()) is not None:
            parts.append(untraced)
        if live.live_objects is not None and (unnamed := live.live_objects.note()) is not None:
            parts.append(unnamed)
        return "; ".join(parts)

    def close(self) -> None:
        """A running program is stopped (SIGTERM, then SIGKILL), as a session ends its command;
        otherwise nothing to release: the model lives in memory."""
        if self.live is not None:
            self.live.run.close()

    # -- live reconfiguration (TUI) -------------------------------------------------------------
    def sector_presets(self) -> tuple[str, ...]:
        return SECTOR_PRESETS

    def sector_preset(self) -> str:
        return self._preset

    def apply_sector_preset(self, name: str) -> None:
        """``off``: no restriction (plain LRU); ``on``: the configured maxima. Takes effect at fill time."""
        if name not in SECTOR_PRESETS:
            raise UsageError(f"unknown sector preset {name!r}; choose one of {', '.join(SECTOR_PRESETS)}")
        self._preset = name
        self.machine.request_sectors(self._current_sectors())

    def sector_config_for(self, name: str) -> dict[str, Any] | None:
        """The ``sector_config`` of the header as it is once preset ``name`` applies (the TUI
        shows it at once; the header written at the start keeps the starting one)."""
        return {"preset": name, **replace(self._configured, enabled=name == "on").to_json()}

    def _current_sectors(self) -> SectorConfig:
        return replace(self._configured, enabled=self._preset == "on")


@dataclass(frozen=True, slots=True)
class SimOptions:
    """The simulated machine and workload, as ``sectormon sim`` and ``--source sim`` spell them
    (parsed and checked one by one; :func:`build_sim_source` checks how they fit together).

    ``None`` takes the default: sectors per kernel, threads 2, the sector cache on for kernels
    and off for traces, a warm-up for kernels and none for traces (a trace is the measured
    region), a looping workload in the TUI and a single pass headless. ``objects``: the file
    naming a trace's data objects (or those objects, read once). A trace given as a
    :class:`TraceFile` is read from it (a pipe's copy), so every source built from these options
    (the advisor builds one per configuration) sees the whole trace.
    """

    kernel: str = "scenario-a"
    traces: tuple[str | TraceFile, ...] = ()
    objects: str | DataObjects | None = None
    threads: int | None = None
    sizes: Mapping[str, str] = field(default_factory=dict)
    assign: Mapping[str, str] = field(default_factory=dict)
    seed: int = 1
    l1_sectors: tuple[int, int, int, int] | None = None
    l2_sectors: tuple[int, ...] | None = None
    l2_sets: tuple[int, ...] = (0,)
    l2_ways: int = 14
    sector_cache: bool | None = None
    prefetch: bool = True
    tag_override: bool = True
    warmup: float | None = None
    loop: bool | None = None
    program: Program | None = None  # a traced real program (sim -- CMD), captured once
    running: TracedRun | None = None  # a program running under QEMU, simulated while it runs
    cpus: tuple[int, ...] = ()  # --bind: the simulated CPU of a program's t-th thread
    region: str | None = None  # the region --summary reports (--region NAME or NAME#NUMBER)


def sector_config(options: SimOptions, kernel: str | None) -> SectorConfig:
    """The sector configuration of the options (the kernel's defaults where not given)."""
    l1_default, l2_default = default_sectors(kernel or "")
    l1 = options.l1_sectors or l1_default
    if options.l2_sectors:
        l2v = options.l2_sectors
        l2 = (*l2v, 7, 7) if len(l2v) == 2 else l2v
    else:
        l2 = (*l2_default, 7, 7)
    l2 = tuple(min(w, options.l2_ways) for w in l2)
    if options.sector_cache is not None:
        enabled = options.sector_cache
    else:
        enabled = kernel is not None or bool(options.l1_sectors or options.l2_sectors)
    return SectorConfig(
        enabled=enabled,
        l1=(l1[0], l1[1], l1[2], l1[3]),
        l2=(l2[0], l2[1], l2[2], l2[3]),
        l2_sets=options.l2_sets,
        tag_override=options.tag_override,
    )


def build_sim_source(options: SimOptions, *, loop: bool) -> SimSource:
    """The :class:`SimSource` the options describe; ``loop`` where ``options.loop`` is ``None``."""
    live = None
    if options.running is not None:
        live, sectors = _live_program(options, options.running)
        workload = Workload((), live.describe())
    elif options.program is not None:
        workload, sectors = _program_workload(options, options.program)
    elif options.traces:
        if options.threads is not None and options.threads != len(options.traces):
            raise UsageError(
                f"--threads {options.threads} with {len(options.traces)} --trace file(s): a trace is one "
                "thread; give one --trace per thread and leave out --threads"
            )
        if options.sizes:
            raise UsageError("--size sets kernel parameters; a --trace carries its own addresses")
        if options.region is not None:
            raise UsageError(
                f"--region {options.region}: a --trace marks no region (it holds a program's accesses, "
                "not its marker calls); drop --region"
            )
        sectors = sector_config(options, None)
        objects = parse_objects(options.objects) if isinstance(options.objects, str) else options.objects
        assign = object_sectors(objects, options.assign) if options.assign else None
        workload = trace_workload(
            list(options.traces), sectors.tag_override, options.prefetch, objects, assign
        )
    else:
        if options.objects:
            raise UsageError("--objects names the data objects of a --trace; a kernel names its arrays")
        kernel = make_kernel(options.kernel, dict(options.sizes), dict(options.assign), options.seed)
        sectors = sector_config(options, options.kernel)
        threads = DEFAULT_THREADS if options.threads is None else options.threads
        workload = kernel_workload(kernel, threads, sectors.tag_override, options.prefetch)
    config = ModelConfig(
        l2_ways=options.l2_ways, prefetch=Prefetch(enabled=options.prefetch), sectors=sectors
    )
    warmup = options.warmup
    if warmup is None:
        program = options.program is not None or options.running is not None
        warmup = TRACE_WARMUP if options.traces or program else DEFAULT_WARMUP
    loop = loop if options.loop is None else options.loop
    return SimSource(workload, config, loop=loop, warmup=warmup, live=live, region=options.region)


def check_program_options(options: SimOptions) -> None:
    """Refuse the options of a built-in workload with ``sim -- CMD`` (before the program runs)."""
    given = [
        o
        for o, v in (("--trace", options.traces), ("--size", options.sizes), ("--threads", options.threads))
        if v
    ]
    if given:
        raise UsageError(
            f"{', '.join(given)}: not with sim -- CMD, which simulates the program's own threads "
            "(--trace, --size and --threads describe a built-in workload)"
        )


def _program_workload(options: SimOptions, program: Program) -> tuple[Workload, SectorConfig]:
    """A traced program's workload: like a trace's (sectors off by default, ``--objects`` names
    its data), one simulated thread per traced thread."""
    from sectormon.sim.qemu.workload import program_workload  # ELF symbols: only for a program

    check_program_options(options)
    sectors = sector_config(options, None)
    objects = parse_objects(options.objects) if isinstance(options.objects, str) else options.objects
    objects = objects or program.objects  # --objects FILE, else the program's global variables
    assign = object_sectors(objects, options.assign) if options.assign else None
    workload = program_workload(
        program, sectors.tag_override, options.prefetch, objects, assign, options.cpus, marks=True
    )
    return workload, sectors


def _live_program(options: SimOptions, run: TracedRun) -> tuple[LiveProgram, SectorConfig]:
    """A running program's threads, simulated as they appear (its data objects are known once it
    runs: the options' are checked then)."""
    from sectormon.sim.qemu.live_objects import check_live_assign
    from sectormon.sim.qemu.workload import LiveProgram

    check_program_options(options)
    run.wait_started()  # its first thread: the program's variables are known by then
    if not run.threads_seen():
        raise UsageError(f"sim -- {run.argv[0]}: the program made no memory access QEMU could trace")
    sectors = sector_config(options, None)
    objects = parse_objects(options.objects) if isinstance(options.objects, str) else options.objects
    objects = objects or run.objects
    if objects is run.objects:
        check_live_assign(options.assign)
    assign = object_sectors(objects, options.assign) if options.assign else None
    live = LiveProgram(run, sectors.tag_override, options.prefetch, objects, assign, options.cpus, marks=True)
    return live, sectors
