"""Sampler self-overhead against `perf stat` on the same target, in the same run.

A 48-thread busy target; sectormon attached with --pid, 5 groups of software events made to rotate
as counter events do (``rotate_software: true``), once per rotation mode, all at the same time:
the default settings (``--rotation auto``: kernel rotation here, reads every 0.1 s), ``--rotation
kernel``, ``--rotation sync`` in 20 ms timeslices with the budget off (``--max-overhead 100``: the
lock-step rotation's own cost) and with the default 2 % budget; and `perf stat -I 100 -e <the same
events> -p PID`. Every tool's CPU time is read from /proc through psutil over the same wall-clock
span. Prints each one's CPU use as % of one core and its ratio to perf stat. Targets (issue 19):
the default <= 2 % of one core and <= 3x perf stat. Then, on the same target, the CPU the sync
rotation's syscalls alone take (see syscall_floor): the part of its figure no Python change can
remove.

With --openmetrics: two sectormon instances on the same target in the same run, one of them
serving --openmetrics and scraped once a second (as Prometheus would); prints the CPU the
endpoint adds, as % of one core and as a ratio to the instance without it. Target (issue 21):
<= 0.2 % of a core.

Usage: python benchmarks/bench_sampler.py [--seconds 20] [--threads 48] [--openmetrics]
"""

from __future__ import annotations

import argparse
import contextlib
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
    import os, sys, threading, time
    n = int(sys.argv[1])
    def spin():
        x = 0
        while True:
            x += 1
            if x % 100000 == 0:
                time.sleep(0.001)  # yield a little so 48 threads share 2 cores like a real code
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
            if round_no % 5 == 0:  # sources/perf.py FULL_SCAN_POLLS
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
"""sectormon's configurations measured side by side: name -> options."""


def measure(
    profile: Path,
    threads: int,
    seconds: float,
    pin: str | None,
    *,
    with_floor: bool,
    modes: dict[str, list[str]],
) -> tuple[dict[str, float], float, dict[str, float]]:
    """Start the target, one sectormon per entry of ``modes`` and perf stat (all under
    ``taskset -c pin`` when given) and return each tool's CPU seconds over ``seconds`` of steady
    state, the wall time, and the syscall floor measured on the same target afterwards (when
    ``with_floor``)."""
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
                    str(seconds + 5),
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
        time.sleep(2.0)  # start-up (imports, probe, opening 48 x 5 groups) is not steady state
        procs = {name: psutil.Process(p.pid) for name, p in tools.items()}
        start = {name: cpu_seconds(p) for name, p in procs.items()}
        wall0 = time.monotonic()
        time.sleep(seconds)
        wall = time.monotonic() - wall0
        used = {name: cpu_seconds(p) - start[name] for name, p in procs.items()}
    finally:
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


def measure_openmetrics(profile: Path, threads: int, seconds: float) -> tuple[dict[str, float], float, int]:
    """CPU seconds of sectormon with and without a scraped --openmetrics endpoint, side by side on
    one target over the same ``seconds``; the wall time; the scrapes made."""
    sectormon = shutil.which("sectormon") or str(Path(sys.executable).with_name("sectormon"))
    target = subprocess.Popen([sys.executable, "-c", TARGET, str(threads)], stdout=subprocess.PIPE, text=True)
    assert target.stdout is not None
    pid = int(target.stdout.readline())
    time.sleep(0.5)
    common = ["--pid", str(pid), "--profile", str(profile), "--timeslice", "0.02", "--interval", "1"]
    common += ["--duration", str(seconds + 5)]
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
    finally:
        stop.set()
        for proc in tools.values():
            proc.terminate()
        for proc in tools.values():
            proc.wait(timeout=10)
        target.kill()
        target.wait()
    return used, wall, scrapes


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
    args = parser.parse_args()
    if args.openmetrics:
        return bench_openmetrics(args.threads, args.seconds)
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp, "bench.yaml")
        profile.write_text(PROFILE)
        used, wall, floor = measure(profile, args.threads, args.seconds, None, with_floor=True, modes=MODES)
        shape = f"{args.threads} busy threads, 5 rotating groups of software events"
        print(f"target: {shape}, {wall:.1f} s, all tools at once; CPU as % of one core")
        peer = used.get("perf stat", 0.0)
        for name, seconds in used.items():
            options = " ".join(MODES.get(name, [])) or ("(default settings)" if name in MODES else "-I 100")
            ratio = f"{seconds / peer:6.2f}x perf stat" if peer > 0 else "perf stat: not installed"
            print(f"{name:>12}: {100 * seconds / wall:6.2f} %  {ratio}  ({seconds:.3f} s CPU; {options})")
        print("     targets: default <= 2 % of one core and <= 3x perf stat")
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
        used, wall, scrapes = measure_openmetrics(profile, threads, seconds)
    print(f"target: {threads} busy threads, 5 groups of software events, 20 ms timeslices, {wall:.1f} s")
    for name, cpu in used.items():
        print(f"{name:>18}: {100 * cpu / wall:6.2f} % of one core ({cpu:.3f} s CPU)")
    base, served = used["without"], used["with --openmetrics"]
    ratio = served / base if base > 0 else float("nan")
    print(
        f"{'added':>18}: {100 * (served - base) / wall:+6.2f} % of one core, ratio {ratio:.3f}x "
        f"({scrapes} scrapes, one a second; target <= 0.2 % of a core)"
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
