"""Sampler self-overhead against `perf stat` on the same target, in the same run.

A 48-thread busy target; sectormon attached with --pid, 5 groups of software events made to rotate
as counter events do (``rotate_software: true``), once per rotation mode, all at the same time:
the default settings (``--rotation auto``: kernel rotation here, reads every 0.1 s), ``--rotation
kernel``, ``--rotation sync`` in 20 ms timeslices with the budget off (``--max-overhead 100``: the
lock-step rotation's own cost) and with the default 2 % budget, the default settings and sync
without a budget each with ``--proxy N`` (``--proxy``, 1: N stand-in threads count the rotating
groups for all: what proxy counting saves, and next to it the proxied task-clock and page-fault
estimates against the full count of the instance without --proxy over the same wall-clock span: the
deviation, the estimate's 95 % error bound and whether it held the full count, over the span and
interval by interval; with one stand-in the bound is unknown); and `perf
stat -I 100 -e <the same events> -p PID`. Every tool's CPU time is read from /proc through psutil
over the same wall-clock span, from 1 s after every instance's first frame (start-up takes seconds
on a loaded machine). Prints each one's CPU use as
% of one core and its ratio to perf stat. Targets (issue 19): the default <= 2 % of one core and
<= 3x perf stat. Then, on the same target, the CPU the sync rotation's syscalls alone take (see
syscall_floor): the part of its figure no Python change can remove.

With --openmetrics: two sectormon instances on the same target in the same run, one of them
serving --openmetrics and scraped once a second (as Prometheus would); prints the CPU the
endpoint adds, as % of one core and as a ratio to the instance without it. Target (issue 21):
<= 0.2 % of a core. Two instances differ by up to 0.3 % of a core in their own rotation's cost, so
it then prints what one GET costs the serving instance alone: back-to-back GETs against as long
unscraped, on the same instance.

With --scrape-cost: what one scrape of a 48-core A64FX frame costs (the TUI fixture's: 53 scopes,
25 metrics, about 2,000 samples), in process: CPU time per scrape of a new frame with sectormon's
writer (OpenMetrics and the 0.0.4 text format, plain and gzip, and a second scraper of the same
frame) against prometheus_client's own generate_latest on the same collector class fed the same
frames, in the same run, with the gzip bodies' sizes; then the gzip step alone (sectormon's
ISA-L level 1 against zlib's level 1 and prometheus_client's own level 9) on the same body.
With --gzip-settings instead: the gzip step alone for every setting considered (zlib's levels,
memLevel and strategies, ISA-L's levels): CPU, size and ratio.
Target: <= 2 ms a scrape (0.2 % of a core at a 1 s scrape interval), gzip included.
With --instructions as well: the same comparison in instructions per scrape under callgrind
(repeatable on a loaded machine, where CPU times vary by 1.5x; a few minutes under valgrind).

Usage: python benchmarks/bench_sampler.py [--seconds 20] [--threads 48] [--proxy 1]
       [--openmetrics | --scrape-cost [--instructions | --gzip-settings] [--scrapes N]]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import itertools
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
import zlib
from collections.abc import Callable
from pathlib import Path

import psutil

PROFILE = textwrap.dedent(
    """
    name: bench-sw5
    description: Five groups of software events for the sampler overhead benchmark.
    counters: 4
    match: {}
    rotate_software: true
    events:
      TASK_CLOCK: {spec: task-clock, scope: pe, unit: ns, desc: CPU time of the task}
      CPU_CLOCK: {spec: cpu-clock, scope: pe, unit: ns, desc: CPU clock}
      PAGE_FAULTS: {spec: page-faults, scope: pe, unit: count, desc: Page faults}
      MINOR_FAULTS: {spec: minor-faults, scope: pe, unit: count, desc: Minor faults}
      MAJOR_FAULTS: {spec: major-faults, scope: pe, unit: count, desc: Major faults}
      CONTEXT_SWITCHES: {spec: context-switches, scope: pe, unit: count, desc: Context switches}
      CPU_MIGRATIONS: {spec: cpu-migrations, scope: pe, unit: count, desc: Migrations}
      ALIGNMENT_FAULTS: {spec: alignment-faults, scope: pe, unit: count, desc: Alignment faults}
      EMULATION_FAULTS: {spec: emulation-faults, scope: pe, unit: count, desc: Emulation faults}
    groups:
      B1: {desc: one, events: [TASK_CLOCK, PAGE_FAULTS]}
      B2: {desc: two, events: [CPU_CLOCK, CONTEXT_SWITCHES]}
      B3: {desc: three, events: [CPU_MIGRATIONS, MINOR_FAULTS]}
      B4: {desc: four, events: [MAJOR_FAULTS, TASK_CLOCK]}
      B5: {desc: five, events: [ALIGNMENT_FAULTS, EMULATION_FAULTS]}
    metrics:
      cpu_utilization: {formula: TASK_CLOCK / 1e9 / SECONDS, unit: cores, better: none, desc: Busy cores}
      page_fault_rate: {formula: PAGE_FAULTS / SECONDS, unit: 1/s, better: lower, desc: Faults per second}
    """
)
PERF_EVENTS = (
    "task-clock,cpu-clock,page-faults,minor-faults,major-faults,context-switches,cpu-migrations,"
    "alignment-faults,emulation-faults"
)

TARGET = textwrap.dedent(
    """
    import mmap, os, sys, threading, time
    n = int(sys.argv[1])
    def spin():
        x = 0
        while True:
            x += 1
            if x % 100000 == 0:
                time.sleep(0.001)  # yield a little so 48 threads share 2 cores like a real code
                page = mmap.mmap(-1, 1 << 16)  # 16 pages touched and unmapped: page faults
                page.write(bytes(1 << 16))  # for --proxy to estimate
                page.close()
    for _ in range(n):
        threading.Thread(target=spin, daemon=True).start()
    print(os.getpid(), flush=True)
    time.sleep(3600)
    """
)


def ioctl_costs() -> dict[str, float]:
    """µs per group enable/disable ioctl on another process's thread, running vs sleeping.

    The rotation needs two of these per unit per timeslice; the kernel sends an IPI to the target
    thread's CPU for each, whose price depends on the machine (a halted vCPU is slow to wake).
    """
    from sectormon.perf.events import parse_event
    from sectormon.perf.group import PerfGroup

    costs: dict[str, float] = {}
    scripts = {"running": "while True: pass", "sleeping": "import time; time.sleep(60)"}
    for state, script in scripts.items():
        proc = subprocess.Popen([sys.executable, "-c", script])
        try:
            time.sleep(0.3)
            group = PerfGroup([parse_event("page-faults"), parse_event("task-clock")], pid=proc.pid)
            rounds = 1000
            start = time.perf_counter()
            for _ in range(rounds):
                group.enable()
                group.disable()
            costs[state] = (time.perf_counter() - start) / (2 * rounds) * 1e6
            group.close()
        finally:
            proc.kill()
            proc.wait()
    return costs


def syscall_floor(pid: int, rounds: int = 100) -> dict[str, float]:
    """CPU seconds per 20 ms timeslice of the syscalls alone that the rotation makes on ``pid``.

    One group per thread (task-clock + page-faults), then per round what the sampler does at the
    end of a slice, with as little Python as possible around the calls: disable every group
    (``fcntl.ioctl`` on its leader), read every group (``os.read``), poll the target (its pidfd,
    the thread count, the thread list every 5th slice), enable every group. Rounds are 20 ms
    apart like slices, so caches are as cold as the sampler finds them. sectormon's CPU use
    minus this is the cost of its own Python.
    """
    import fcntl

    from sectormon.perf import abi
    from sectormon.perf.events import parse_event
    from sectormon.perf.group import PerfGroup

    specs = [parse_event("task-clock"), parse_event("page-faults")]
    groups: list[PerfGroup] = []
    for name in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(Exception):  # a thread that just exited
            groups.append(PerfGroup(specs, pid=int(name)))
    fds = [g.leader_fd for g in groups]
    size = groups[0].read_size
    flag = 0  # the leader alone, as PerfGroup.enable/disable do
    spent = dict.fromkeys(("disable", "read", "proc", "enable"), 0.0)
    clock = time.thread_time
    for fd in fds:
        fcntl.ioctl(fd, abi.PERF_EVENT_IOC_ENABLE, flag)
    pidfd = os.pidfd_open(pid)
    exit_poll = select.poll()
    exit_poll.register(pidfd, select.POLLIN)
    task_fd = os.open(f"/proc/{pid}/task", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for round_no in range(rounds):
            time.sleep(0.02)
            t0 = clock()
            for fd in fds:
                fcntl.ioctl(fd, abi.PERF_EVENT_IOC_DISABLE, flag)
            t1 = clock()
            for fd in fds:
                os.read(fd, size)
            t2 = clock()
            exit_poll.poll(0)
            os.fstat(task_fd)
            if round_no % 5 == 0:  # sources/perf/source.py FULL_SCAN_POLLS
                os.listdir(f"/proc/{pid}/task")
            t3 = clock()
            for fd in fds:
                fcntl.ioctl(fd, abi.PERF_EVENT_IOC_ENABLE, flag)
            t4 = clock()
            for key, value in zip(spent, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                spent[key] += value
    finally:
        for group in groups:
            group.close()
        os.close(pidfd)
        os.close(task_fd)
    return {key: value / rounds for key, value in spent.items()}


def cpu_seconds(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


MODES: dict[str, list[str]] = {
    "default": [],
    "kernel": ["--rotation", "kernel"],
    "sync": ["--rotation", "sync", "--timeslice", "0.02", "--max-overhead", "100"],
    "sync+budget": ["--rotation", "sync", "--timeslice", "0.02"],
}
"""sectormon's configurations measured side by side: name -> options (and the proxied ones,
:func:`with_proxy`)."""


def with_proxy(per_cmg: int) -> dict[str, list[str]]:
    """:data:`MODES` and the default settings and sync without a budget with ``--proxy per_cmg``."""
    proxy = ["--proxy", str(per_cmg)]
    return {
        **MODES,
        f"proxy {per_cmg}": proxy,
        f"sync proxy {per_cmg}": [*MODES["sync"], *proxy],
    }


def measure(
    profile: Path,
    threads: int,
    seconds: float,
    pin: str | None,
    *,
    with_floor: bool,
    modes: dict[str, list[str]],
    outputs: Path | None = None,
    trace: list[tuple[float, float]] | None = None,
) -> tuple[dict[str, float], float, dict[str, float]]:
    """Start the target, one sectormon per entry of ``modes`` and perf stat (all under
    ``taskset -c pin`` when given) and return each tool's CPU seconds over ``seconds`` of steady
    state, the wall time, and the syscall floor measured on the same target afterwards (when
    ``with_floor``). ``outputs``: a directory that keeps each sectormon's JSON as NAME.jsonl.
    ``trace``: filled with the target's CPU seconds (the kernel's account, /proc) at Unix times,
    every 0.1 s while the tools run: the truth a task-clock estimate is checked against."""
    sectormon = shutil.which("sectormon") or str(Path(sys.executable).with_name("sectormon"))
    perf = shutil.which("perf")
    prefix = ["taskset", "-c", pin] if pin is not None else []
    target = subprocess.Popen(
        [*prefix, sys.executable, "-c", TARGET, str(threads)], stdout=subprocess.PIPE, text=True
    )
    assert target.stdout is not None
    pid = int(target.stdout.readline())
    time.sleep(0.5)
    tools: dict[str, subprocess.Popen[bytes]] = {}
    floor: dict[str, float] = {}
    try:
        for name, options in modes.items():
            tools[name] = subprocess.Popen(
                [
                    *prefix,
                    sectormon,
                    "--json",
                    "--pid",
                    str(pid),
                    "--profile",
                    str(profile),
                    *options,
                    "--interval",
                    "1",
                    "--duration",
                    str(seconds + 60),  # ended by the bench once measured (start-up varies with load)
                    *(["-o", str(outputs / f"{name}.jsonl")] if outputs is not None else []),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        if perf:
            tools["perf stat"] = subprocess.Popen(
                [*prefix, perf, "stat", "-I", "100", "-e", PERF_EVENTS, "-p", str(pid)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        stop = threading.Event()
        if trace is not None:
            tracer = threading.Thread(target=_trace_cpu, args=(psutil.Process(pid), trace, stop), daemon=True)
            tracer.start()
        # Start-up (imports, probe, opening 48 x 5 groups) is not steady state: measure from the
        # first frame of every instance that writes one (at load 6 that took up to 5 s), then 1 s on.
        if outputs is not None:
            _wait_for_frames([outputs / f"{name}.jsonl" for name in modes], tools)
        time.sleep(1.0 if outputs is not None else 2.0)
        procs = {name: psutil.Process(p.pid) for name, p in tools.items()}
        start = {name: cpu_seconds(p) for name, p in procs.items()}
        wall0 = time.monotonic()
        time.sleep(seconds)
        wall = time.monotonic() - wall0
        used = {name: cpu_seconds(p) - start[name] for name, p in procs.items()}
    finally:
        stop.set()
        for proc in tools.values():
            proc.terminate()
        for proc in tools.values():
            proc.wait(timeout=10)
        try:
            if with_floor:
                floor = syscall_floor(pid)
        finally:
            target.kill()
            target.wait()
    return used, wall, floor


def _trace_cpu(target: psutil.Process, trace: list[tuple[float, float]], stop: threading.Event) -> None:
    """Append (Unix time, the target's CPU seconds) every 0.1 s until ``stop``."""
    while not stop.is_set():
        trace.append((time.time(), cpu_seconds(target)))
        stop.wait(0.1)


def _wait_for_frames(
    paths: list[Path], tools: dict[str, subprocess.Popen[bytes]], timeout: float = 60.0
) -> None:
    """Until each of ``paths`` holds a header and a frame (its instance counts in steady state)."""
    end = time.monotonic() + timeout
    for path in paths:
        while not (path.exists() and path.read_text().count("\n") >= 2):
            if time.monotonic() > end or any(p.poll() is not None for p in tools.values()):
                raise RuntimeError(f"{path.name}: no frame {timeout:g} s after the start (or a tool ended)")
            time.sleep(0.05)


EVENTS = {"TASK_CLOCK": ("task-clock", "cores", 1e9), "PAGE_FAULTS": ("page faults", "/s", 1.0)}
"""The proxied events compared: name -> (words, unit of the rate, counts per unit-second)."""


@dataclasses.dataclass
class Run:
    """An instance's interval frames as cumulative sums at wall-clock times: the frames' ends
    (Unix seconds, the first frame's start first), each event's sum from there (``None`` figures,
    n/a, add nothing), each frame's absolute error half-width of each event (its ``proxy_error``
    times its count; 0 for a counted figure, ``None`` unknown), and the frames with an n/a figure."""

    times: list[float]
    sums: dict[str, list[float]]
    halves: dict[str, list[float | None]]
    missing: int


def _cumulative(path: Path) -> Run:
    header, *frames = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    frames = frames[:-1]  # the last frame is the run's
    wall0 = header["wall_t0"]
    times = [wall0 + frames[0]["t"] - frames[0]["interval"]] if frames else []
    sums: dict[str, list[float]] = {name: [0.0] for name in EVENTS}
    halves: dict[str, list[float | None]] = {name: [] for name in EVENTS}
    missing = 0
    for frame in frames:
        total = frame["total"]
        counts = total["counts"]
        missing += any(counts.get(name) is None for name in sums)
        times.append(wall0 + frame["t"])
        for name, cumulative in sums.items():
            count = counts.get(name) or 0.0
            cumulative.append(cumulative[-1] + count)
            bound = total.get("proxy_error", {}).get(name, 0.0) if name in total.get("proxy", ()) else 0.0
            halves[name].append(None if bound is None else bound * count)
    return Run(times, sums, halves, missing)


def _at(times: list[float], cumulative: list[float], when: float) -> float:
    """A cumulative sum at wall time ``when``, linear within the frame that holds it."""
    for i in range(1, len(times)):
        if times[i] >= when:
            share = (when - times[i - 1]) / (times[i] - times[i - 1])
            return cumulative[i - 1] + share * (cumulative[i] - cumulative[i - 1])
    return cumulative[-1]


def _span_half(run: Run, name: str, lo: float, hi: float) -> float | None:
    """The absolute half-width of an event's estimate over ``lo..hi``: each frame's in proportion
    to its part of the span, added up (a bound that holds when each frame's does, whatever the
    frames' errors have in common: the same stand-ins err alike from frame to frame); ``None``
    when a frame in the span has an unknown bound."""
    out = 0.0
    for i, half in enumerate(run.halves[name]):
        start, end = run.times[i], run.times[i + 1]
        overlap = min(end, hi) - max(start, lo)
        if overlap <= 0.0 or end <= start:
            continue
        if half is None:
            return None
        out += half * overlap / (end - start)
    return out


@dataclasses.dataclass
class Accuracy:
    """One proxied event over a common span: the full count's rate and the estimate's, the
    estimate's 95 % half-width (``None``: unknown), and over the proxied instance's frames inside
    the span, how many had a known bound and how many of those held the full count."""

    full: float
    estimate: float
    half: float | None
    intervals: int
    known: int
    covered: int
    kernel: float | None = None
    """Task-clock only: the target's CPU time over the span (cores), the kernel's account."""


def _kernel_cores(trace: list[tuple[float, float]], lo: float, hi: float) -> float | None:
    """The target's CPU seconds per second over ``lo..hi``, linear between the trace's samples."""
    if len(trace) < 2 or trace[0][0] > lo or trace[-1][0] < hi:
        return None
    times = [t for t, _ in trace]
    cpu = [c for _, c in trace]
    return (_at(times, cpu, hi) - _at(times, cpu, lo)) / (hi - lo)


def accuracy(
    paths: tuple[Path, Path], skip: float, trace: list[tuple[float, float]] | None = None
) -> tuple[dict[str, Accuracy], float, int]:
    """Two instances' rates of each event in :data:`EVENTS` over the same wall-clock span: from
    ``skip`` seconds after the later one's first frame (start-up; a stand-in's hand-over) to the
    earlier one's last interval frame. Instances started seconds apart on a loaded machine see
    different loads: a rate over each one's own frames compares two spans. The second's estimate
    comes with its error bound over the span and per interval (the first's full count over the
    same wall-clock interval as the truth). Returns per event its :class:`Accuracy`, the span's
    seconds, and the second's frames with an n/a figure."""
    plain, proxied = _cumulative(paths[0]), _cumulative(paths[1])
    lo = max(plain.times[0], proxied.times[0]) + skip
    hi = min(plain.times[-1], proxied.times[-1])
    span = hi - lo
    if span <= 0:
        return {}, 0.0, proxied.missing

    def between(run: Run, name: str, a: float, b: float) -> float:
        return _at(run.times, run.sums[name], b) - _at(run.times, run.sums[name], a)

    out: dict[str, Accuracy] = {}
    for name, (_, _, unit) in EVENTS.items():
        half = _span_half(proxied, name, lo, hi)
        inside = [
            i for i in range(len(proxied.times) - 1) if lo <= proxied.times[i] and proxied.times[i + 1] <= hi
        ]
        known = [i for i in inside if proxied.halves[name][i] is not None]
        covered = sum(
            abs(
                proxied.sums[name][i + 1]
                - proxied.sums[name][i]
                - between(plain, name, proxied.times[i], proxied.times[i + 1])
            )
            <= (proxied.halves[name][i] or 0.0)
            for i in known
        )
        out[name] = Accuracy(
            full=between(plain, name, lo, hi) / unit / span,
            estimate=between(proxied, name, lo, hi) / unit / span,
            half=None if half is None else half / unit / span,
            intervals=len(inside),
            known=len(known),
            covered=covered,
            kernel=_kernel_cores(trace, lo, hi) if trace and name == "TASK_CLOCK" else None,
        )
    return out, span, proxied.missing


def print_accuracy(
    outputs: Path, plain: str, proxied: str, trace: list[tuple[float, float]] | None = None
) -> None:
    """The proxied instance's estimates against the full count of the same run's ``plain``, each
    with its 95 % error bound and whether the bound held the full count; task-clock also against
    the kernel's CPU time of the target over the same span (``trace``), which no rotation scales."""
    figures, span, missing = accuracy((outputs / f"{plain}.jsonl", outputs / f"{proxied}.jsonl"), 3.0, trace)

    def versus(name: str) -> str:
        words, unit, _ = EVENTS[name]
        found = figures.get(name)
        if found is None or found.full == 0:
            return f"{words} n/a (no common span)"
        deviation = 100 * (found.estimate / found.full - 1)
        if found.half is None:
            bound = "bound n/a (unknown in an interval: one stand-in, or none counted any)"
        else:
            held = "covered" if abs(found.estimate - found.full) <= found.half else "NOT covered"
            bound = f"bound ±{100 * found.half / found.estimate:.1f} % (95 %): {held}"
        kernel = ""
        if found.kernel:
            off = found.estimate - found.kernel
            held = "n/a" if found.half is None else "covered" if abs(off) <= found.half else "NOT covered"
            kernel = f"; vs the kernel's {found.kernel:.3g}: {100 * off / found.kernel:+.1f} %, {held}"
        return (
            f"{words} {found.estimate:.3g} vs {found.full:.3g} {unit} ({deviation:+.1f} %, {bound}; "
            f"intervals: {found.covered} of {found.known} within their bound, "
            f"{found.intervals - found.known} n/a{kernel})"
        )

    print(
        f"      {proxied} estimates vs {plain}'s full count (same run, the same {span:.1f} s of wall "
        f"clock from 3 s after both started; {missing} intervals n/a):"
    )
    for name in EVENTS:
        print(f"        {versus(name)}")


def print_control(
    outputs: Path, first: str, second: str, trace: list[tuple[float, float]] | None = None
) -> None:
    """Two full counts of the same run (no proxy) compared as :func:`print_accuracy` compares an
    estimate: the comparison's own noise (each instance extrapolates its rotated counts, and their
    frames end at different times), which no proxy bound covers; and ``second``'s task-clock
    against the kernel's CPU time of the target."""
    figures, span, _ = accuracy((outputs / f"{first}.jsonl", outputs / f"{second}.jsonl"), 3.0, trace)
    found = {name: f for name, f in figures.items() if f.full}
    clock = found.get("TASK_CLOCK")
    kernel = (
        f"; {second}'s task-clock vs the kernel's: {100 * (clock.estimate / clock.kernel - 1):+.1f} %"
        if clock is not None and clock.kernel
        else ""
    )
    print(
        f"      control, two full counts ({second} vs {first}, the same {span:.1f} s): "
        + ", ".join(
            f"{EVENTS[name][0]} {100 * (f.estimate / f.full - 1):+.1f} %" for name, f in found.items()
        )
        + kernel
    )


def measure_openmetrics(
    profile: Path, threads: int, seconds: float
) -> tuple[dict[str, float], float, int, float]:
    """CPU seconds of sectormon with and without a scraped --openmetrics endpoint, side by side on
    one target over the same ``seconds``; the wall time; the scrapes made; the CPU of one GET."""
    sectormon = shutil.which("sectormon") or str(Path(sys.executable).with_name("sectormon"))
    target = subprocess.Popen([sys.executable, "-c", TARGET, str(threads)], stdout=subprocess.PIPE, text=True)
    assert target.stdout is not None
    pid = int(target.stdout.readline())
    time.sleep(0.5)
    common = ["--pid", str(pid), "--profile", str(profile), "--timeslice", "0.02", "--interval", "1"]
    common += ["--duration", str(seconds + 20)]  # and the GETs of cpu_per_get
    tools: dict[str, subprocess.Popen[str]] = {}
    stop = threading.Event()
    scrapes = 0

    def scrape(url: str) -> None:
        nonlocal scrapes
        while not stop.wait(1.0):  # Prometheus's 1 s scrape interval
            with urllib.request.urlopen(url, timeout=5) as response:
                response.read()
            scrapes += 1

    try:
        tools["without"] = subprocess.Popen(
            [sectormon, "--json", *common], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True
        )
        tools["with --openmetrics"] = subprocess.Popen(
            [sectormon, "--json", "--openmetrics", "0", *common],  # the same JSON work as the peer
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        stderr = tools["with --openmetrics"].stderr
        assert stderr is not None
        line = ""
        while "OpenMetrics at " not in line:  # after the probe's warnings
            line = stderr.readline()
            if not line:
                raise RuntimeError("sectormon --openmetrics said no URL on stderr")
        url = line.split("OpenMetrics at ", 1)[1].strip()
        scraper = threading.Thread(target=scrape, args=(url,), daemon=True)
        scraper.start()
        time.sleep(2.0)  # start-up is not steady state
        procs = {name: psutil.Process(p.pid) for name, p in tools.items()}
        start = {name: cpu_seconds(p) for name, p in procs.items()}
        wall0 = time.monotonic()
        time.sleep(seconds)
        wall = time.monotonic() - wall0
        used = {name: cpu_seconds(p) - start[name] for name, p in procs.items()}
        stop.set()
        scraper.join()
        per_get = cpu_per_get(procs["with --openmetrics"], url)
    finally:
        stop.set()
        for proc in tools.values():
            proc.terminate()
        for proc in tools.values():
            proc.wait(timeout=10)
        target.kill()
        target.wait()
    return used, wall, scrapes, per_get


def cpu_per_get(proc: psutil.Process, url: str, seconds: float = 5.0) -> float:
    """CPU seconds one GET costs the serving process: its CPU over ``seconds`` of back-to-back
    GETs less its CPU over as many seconds unscraped (one instance, so no instance-to-instance
    noise; a frame is made once a second, so most GETs serve one already made)."""
    before = cpu_seconds(proc)
    time.sleep(seconds)
    idle = cpu_seconds(proc) - before
    before, gets, end = cpu_seconds(proc), 0, time.monotonic() + seconds
    while time.monotonic() < end:
        with urllib.request.urlopen(url, timeout=5) as response:
            response.read()
        gets += 1
    return max(cpu_seconds(proc) - before - idle, 0.0) / gets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--threads", type=int, default=48)
    parser.add_argument(
        "--no-same-cpu", action="store_true", help="skip the second run with everything on one CPU"
    )
    parser.add_argument(
        "--openmetrics", action="store_true", help="measure only what a scraped --openmetrics endpoint adds"
    )
    parser.add_argument(
        "--scrape-cost",
        action="store_true",
        help="CPU per scrape of a 48-core A64FX frame: sectormon's writer vs prometheus_client's",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="with --scrape-cost: instructions per scrape under callgrind instead of CPU time",
    )
    parser.add_argument(
        "--gzip-settings",
        action="store_true",
        help="with --scrape-cost: only the gzip step, for every zlib and ISA-L setting considered",
    )
    parser.add_argument(
        "--scrapes", type=int, help="scrapes per --scrape-cost measurement (200; 10 under callgrind)"
    )
    parser.add_argument("--proxy", type=int, default=1, help="stand-ins per CMG of the proxied instances (1)")
    parser.add_argument("--scrape-child", nargs=2, metavar=("ROW", "SIDE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.openmetrics:
        return bench_openmetrics(args.threads, args.seconds)
    if args.scrape_child:
        row, side = args.scrape_child
        return scrape_child(row, side, args.scrapes)
    if args.scrape_cost and args.instructions:
        return bench_instructions(args.scrapes or 5)
    if args.scrape_cost and args.gzip_settings:
        compress_cost(ScrapeRig().scrape("openmetrics", "ours"), args.scrapes or 200, every=True)
        return 0
    if args.scrape_cost:
        return bench_scrape_cost(args.scrapes or 200)
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp, "bench.yaml")
        profile.write_text(PROFILE)
        outputs = Path(tmp)
        modes = with_proxy(args.proxy)
        trace: list[tuple[float, float]] = []
        used, wall, floor = measure(
            profile,
            args.threads,
            args.seconds,
            None,
            with_floor=True,
            modes=modes,
            outputs=outputs,
            trace=trace,
        )
        shape = f"{args.threads} busy threads, 5 rotating groups of software events"
        print(f"target: {shape}, {wall:.1f} s, all tools at once; CPU as % of one core")
        peer = used.get("perf stat", 0.0)
        for name, seconds in used.items():
            options = " ".join(modes.get(name, [])) or ("(default settings)" if name in modes else "-I 100")
            ratio = f"{seconds / peer:6.2f}x perf stat" if peer > 0 else "perf stat: not installed"
            print(f"{name:>12}: {100 * seconds / wall:6.2f} %  {ratio}  ({seconds:.3f} s CPU; {options})")
        print("     targets: default <= 2 % of one core and <= 3x perf stat")
        for plain, proxied in (("default", f"proxy {args.proxy}"), ("sync", f"sync proxy {args.proxy}")):
            if used.get(plain, 0.0) > 0:
                print(
                    f"  --proxy {args.proxy} saves {plain} "
                    f"{100 * (used[plain] - used[proxied]) / wall:.2f} % of a core "
                    f"({used[proxied] / used[plain]:.2f}x its CPU)"
                )
                print_accuracy(outputs, plain, proxied, trace)
        print_control(outputs, "default", "kernel", trace)
        print_control(outputs, "default", "sync", trace)
        floor_pct = 100 * sum(floor.values()) * 50  # 50 slices per second
        print(
            "sync's syscalls alone on this target, per 20 ms slice: "
            + ", ".join(f"{key} {1e6 * value:.0f} us" for key, value in floor.items())
            + f" -> {floor_pct:.2f} % of a core; sync's own Python and the rest: "
            f"{100 * used['sync'] / wall - floor_pct:.2f} % of a core"
        )
        if not args.no_same_cpu:
            # The kernel makes every enable/disable of another CPU's thread a synchronous
            # cross-CPU call; with target and tools on one CPU there are none. The difference
            # between the two runs is what those interrupts cost on this machine.
            same, same_wall, _ = measure(
                profile, args.threads, args.seconds, "0", with_floor=False, modes={"sync": MODES["sync"]}
            )
            print(
                "same run with target and tools all on CPU 0 (no cross-CPU calls): "
                + ", ".join(f"{name} {100 * sec / same_wall:.2f} %" for name, sec in same.items())
            )
    costs = ioctl_costs()
    per_second = 2 * args.threads * 50  # two ioctls per unit per 20 ms slice
    low, high = (per_second * min(costs.values()) / 1e4, per_second * max(costs.values()) / 1e4)
    print(
        "kernel cost of one group enable/disable ioctl on another process's thread here: "
        + ", ".join(f"{state} {us:.1f} us" for state, us in costs.items())
        + f" -> rotation floor for {args.threads} threads: {low:.1f}-{high:.1f} % of a core"
    )
    return 0


def bench_openmetrics(threads: int, seconds: float) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp, "bench.yaml")
        profile.write_text(PROFILE)
        used, wall, scrapes, per_get = measure_openmetrics(profile, threads, seconds)
    print(f"target: {threads} busy threads, 5 groups of software events, 20 ms timeslices, {wall:.1f} s")
    for name, cpu in used.items():
        print(f"{name:>18}: {100 * cpu / wall:6.2f} % of one core ({cpu:.3f} s CPU)")
    base, served = used["without"], used["with --openmetrics"]
    ratio = served / base if base > 0 else float("nan")
    print(
        f"{'added':>18}: {100 * (served - base) / wall:+6.2f} % of one core, ratio {ratio:.3f}x "
        f"({scrapes} scrapes, one a second; target <= 0.2 % of a core)"
    )
    print(
        f"{'one GET':>18}: {1e3 * per_get:6.2f} ms of the serving process's CPU, back to back on the "
        f"same instance: {100 * per_get:.3f} % of one core at one scrape a second"
    )
    return 0


SCRAPE_ROWS = ("openmetrics", "openmetrics+gzip", "text")
"""What a scrape is asked for: the OpenMetrics format (plain, gzip) and the 0.0.4 text format."""

PEER_GZIP_LEVEL = 1
"""zlib's level for the peer's gzip rows: its fastest, the cheapest gzip the standard library makes."""

CLIENT_GZIP_LEVEL = 9
"""prometheus_client's own endpoint compresses at gzip.compress's default level."""


class ScrapeRig:
    """A FrameCollector fed the 48-core fixture's frames (a new t each), and one scrape of each
    row by sectormon's writer ("ours") or by prometheus_client's generate_latest ("theirs")."""

    def __init__(self) -> None:
        from prometheus_client.registry import CollectorRegistry

        from sectormon.export.collector import FrameCollector

        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.export import a64fx48

        fixture = a64fx48.frames()
        self._frames = (
            dataclasses.replace(fixture[i % len(fixture)], t=float(i + 1)) for i in itertools.count()
        )
        self.collector = FrameCollector(a64fx48.header())
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        self.new_frame()

    def new_frame(self) -> None:
        self.collector.publish(next(self._frames))

    def scrape(self, row: str, side: str) -> bytes:
        import gzip

        from prometheus_client.exposition import generate_latest as text_latest
        from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

        from sectormon.export.exposition import Format

        if side == "ours":
            fmt = Format.TEXT if row == "text" else Format.OPENMETRICS
            return self.collector.scrape().body(fmt, gzipped=row.endswith("gzip"))
        body = text_latest(self.registry) if row == "text" else openmetrics_latest(self.registry)
        return gzip.compress(body, compresslevel=PEER_GZIP_LEVEL) if row.endswith("gzip") else body


def bench_scrape_cost(scrapes: int) -> int:
    import statistics

    clock = time.thread_time

    def per_scrape(row: str, side: str, *, new_frames: bool = True) -> float:
        """Median CPU seconds of a scrape over ``scrapes`` rounds, a new frame before each."""
        rig = ScrapeRig()
        spent = []
        for _ in range(scrapes):
            if new_frames:
                rig.new_frame()
            start = clock()
            rig.scrape(row, side)
            spent.append(clock() - start)
        return statistics.median(spent)

    rig = ScrapeRig()
    plain = rig.scrape("openmetrics", "ours")
    lines = plain.count(b"\n")
    print(
        f"a 48-core A64FX frame: {lines} lines, {len(plain) / 1e3:.1f} kB; "
        f"median CPU per scrape of a new frame over {scrapes}"
    )
    for row in SCRAPE_ROWS:
        fast, slow = per_scrape(row, "ours"), per_scrape(row, "theirs")
        sizes = ""
        if row.endswith("gzip"):
            ours, theirs = len(rig.scrape(row, "ours")), len(rig.scrape(row, "theirs"))
            sizes = f"; {ours / 1e3:.1f} kB vs {theirs / 1e3:.1f} kB (zlib level {PEER_GZIP_LEVEL})"
        print(
            f"{row:>18}: sectormon {1e3 * fast:6.2f} ms ({0.1 * fast * 1e3:.3f} % of a core at 1 s), "
            f"prometheus_client {1e3 * slow:6.2f} ms: {slow / fast:5.1f}x faster{sizes}"
        )
    compress_cost(plain, scrapes)
    repeat = per_scrape("openmetrics+gzip", "ours", new_frames=False)
    print(f"{'same frame again':>18}: sectormon {1e3 * repeat:6.3f} ms (a second scraper: already made)")
    http = http_get_cost(scrapes)
    print(
        f"{'HTTP GET':>18}: sectormon {1e3 * http:6.2f} ms of the process's CPU per GET /metrics with "
        "Prometheus's headers (OpenMetrics, gzip), server and client threads together"
    )
    print("target: <= 2 ms a scrape (0.2 % of a core at a 1 s scrape interval)")
    return 0


Compress = Callable[[bytes], bytes]


def zlib_gzip(level: int, mem_level: int = 8, strategy: int = zlib.Z_DEFAULT_STRATEGY) -> Compress:
    """The standard library's gzip (zlib, the gzip container) with these settings."""

    def compress(body: bytes) -> bytes:
        packer = zlib.compressobj(level, zlib.DEFLATED, 31, mem_level, strategy)
        return packer.compress(body) + packer.flush()

    return compress


def gzip_ways(*, every: bool) -> dict[str, Compress]:
    """sectormon's gzip and the standard library's at zlib's level 1 and prometheus_client's 9;
    ``every``: also the other zlib settings and ISA-L levels considered for the endpoint."""
    from isal import isal_zlib

    from sectormon.export.scrape import GZIP_LEVEL, GZIP_WBITS, gzip_body

    ways: dict[str, Compress] = {f"sectormon (ISA-L level {GZIP_LEVEL})": gzip_body}
    if every:
        for level in (0, 2, 3):
            ways[f"ISA-L level {level}"] = functools.partial(
                isal_zlib.compress, level=level, wbits=GZIP_WBITS
            )
    ways[f"zlib level {PEER_GZIP_LEVEL}"] = zlib_gzip(PEER_GZIP_LEVEL)
    if every:
        strategies = {
            "filtered": zlib.Z_FILTERED,
            "Huffman only": zlib.Z_HUFFMAN_ONLY,
            "RLE": zlib.Z_RLE,
            "fixed codes": zlib.Z_FIXED,
        }
        ways["zlib level 1 memLevel 9"] = zlib_gzip(1, 9)
        ways["zlib level 2"] = zlib_gzip(2)
        ways["zlib level 2 memLevel 9"] = zlib_gzip(2, 9)
        for name, strategy in strategies.items():
            for level in (1, 2):
                ways[f"zlib level {level} {name}"] = zlib_gzip(level, 8, strategy)
    ways[f"zlib level {CLIENT_GZIP_LEVEL} (prometheus_client's)"] = zlib_gzip(CLIENT_GZIP_LEVEL)
    return ways


def compress_cost(plain: bytes, rounds: int, *, every: bool = False) -> None:
    """The gzip step alone on one OpenMetrics body: median CPU, the size and the ratio to the plain
    body for each of :func:`gzip_ways`, each checked to decompress to the plain body."""
    import gzip
    import statistics

    print(f"gzip alone, median CPU over {rounds} of the {len(plain) / 1e3:.1f} kB OpenMetrics body:")
    for name, compress in gzip_ways(every=every).items():
        spent = []
        for _ in range(rounds):
            start = time.thread_time()
            packed = compress(plain)
            spent.append(time.thread_time() - start)
        if gzip.decompress(packed) != plain:
            raise RuntimeError(f"{name}: the gzip body does not decompress to the plain body")
        print(
            f"{name:>34}: {1e3 * statistics.median(spent):6.3f} ms, {len(packed) / 1e3:5.1f} kB "
            f"({len(plain) / len(packed):4.1f}x smaller)"
        )


def http_get_cost(scrapes: int) -> float:
    """Median process CPU seconds of one GET /metrics to an in-process endpoint serving the
    fixture's session, a new frame before each: what the HTTP server adds around the writer."""
    import http.client
    import statistics

    from sectormon.export.server import OpenMetricsExporter

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.export import a64fx48

    headers = {
        "Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
        "Accept-Encoding": "gzip",
    }
    fixture = a64fx48.frames()
    exporter = OpenMetricsExporter(port=0)
    exporter.start(a64fx48.header())
    spent = []
    try:
        host, port = exporter.address
        for i in range(scrapes + 1):
            exporter.publish(dataclasses.replace(fixture[i % len(fixture)], t=float(i + 1)))
            start = time.process_time()
            connection = http.client.HTTPConnection(host, port, timeout=10)
            connection.request("GET", "/metrics", headers=headers)
            connection.getresponse().read()
            connection.close()
            spent.append(time.process_time() - start)
    finally:
        exporter.close()
    return statistics.median(spent[1:])


def scrape_child(row: str, side: str, scrapes: int) -> int:
    """``scrapes`` scrapes of new frames, nothing else: run under callgrind by bench_instructions."""
    rig = ScrapeRig()
    rig.scrape(row, side)
    for _ in range(scrapes):
        rig.new_frame()
        rig.scrape(row, side)
    return 0


def bench_instructions(scrapes: int) -> int:
    """Instructions per scrape under callgrind: repeatable on a loaded machine, where CPU times
    are not. Each side runs twice, with 0 and with ``scrapes`` scrapes; the difference over
    ``scrapes`` is one scrape's count (start-up and the fixture's frames cancel out)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("valgrind is not installed here (apt-get install valgrind)")
        return 1

    def instructions(row: str, side: str, count: int) -> int:
        command = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
        command += [__file__, "--scrape-child", row, side, "--scrapes", str(count)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        for line in done.stderr.splitlines():
            if "Collected :" in line:
                return int(line.rsplit(":", 1)[1])
        raise RuntimeError(f"callgrind said no count: {done.stderr[-500:]}")

    print(f"instructions per scrape of a new 48-core A64FX frame (callgrind, {scrapes} scrapes)")
    for row in SCRAPE_ROWS:
        counts = {}
        for side in ("ours", "theirs"):
            counts[side] = (instructions(row, side, scrapes) - instructions(row, side, 0)) / scrapes
        print(
            f"{row:>18}: sectormon {counts['ours'] / 1e6:6.2f} M, prometheus_client "
            f"{counts['theirs'] / 1e6:6.1f} M: {counts['theirs'] / counts['ours']:5.1f}x fewer"
        )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
