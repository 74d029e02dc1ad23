"""Sampler self-overhead against `perf stat` on the same target, in the same run.

A 48-thread busy target; sectormon attached with --pid, rotating 5 groups of software events in
20 ms timeslices; at the same time `perf stat -I 100 -e <the same events> -p PID`. Both tools' CPU
time is read from /proc through psutil over the same wall-clock span. Prints each tool's CPU use as %
of one core and their ratio. Targets (issue 3): sectormon <= 2% of one core and <= 3x perf stat.

Usage: python benchmarks/bench_sampler.py [--seconds 20] [--threads 48]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil

PROFILE = textwrap.dedent(
    """
    name: bench-sw5
    description: Five groups of software events for the sampler overhead benchmark.
    counters: 4
    match: {}
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


def cpu_seconds(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--threads", type=int, default=48)
    args = parser.parse_args()
    sectormon = shutil.which("sectormon") or str(Path(sys.executable).with_name("sectormon"))
    perf = shutil.which("perf")
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp, "bench.yaml")
        profile.write_text(PROFILE)
        target = subprocess.Popen(
            [sys.executable, "-c", TARGET, str(args.threads)], stdout=subprocess.PIPE, text=True
        )
        assert target.stdout is not None
        pid = int(target.stdout.readline())
        time.sleep(0.5)
        tools: dict[str, subprocess.Popen[bytes]] = {}
        try:
            tools["sectormon"] = subprocess.Popen(
                [
                    sectormon,
                    "--json",
                    "--pid",
                    str(pid),
                    "--profile",
                    str(profile),
                    "--timeslice",
                    "0.02",
                    "--interval",
                    "1",
                    "--duration",
                    str(args.seconds + 5),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if perf:
                tools["perf stat"] = subprocess.Popen(
                    [perf, "stat", "-I", "100", "-e", PERF_EVENTS, "-p", str(pid)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            time.sleep(2.0)  # start-up (imports, probe, opening 48 x 5 groups) is not steady state
            procs = {name: psutil.Process(p.pid) for name, p in tools.items()}
            start = {name: cpu_seconds(p) for name, p in procs.items()}
            wall0 = time.monotonic()
            time.sleep(args.seconds)
            wall = time.monotonic() - wall0
            used = {name: cpu_seconds(p) - start[name] for name, p in procs.items()}
        finally:
            for proc in tools.values():
                proc.terminate()
            for proc in tools.values():
                proc.wait(timeout=10)
            target.kill()
            target.wait()
    print(f"target: {args.threads} busy threads, 5 groups of software events, 20 ms timeslices, {wall:.1f} s")
    for name, seconds in used.items():
        print(f"{name:>10}: {100 * seconds / wall:6.2f} % of one core ({seconds:.3f} s CPU)")
    if "perf stat" in used and used["perf stat"] > 0:
        ratio = used["sectormon"] / used["perf stat"]
        print(f"     ratio: sectormon / perf stat = {ratio:.2f}x  (target <= 3x; sectormon target <= 2 %)")
    else:
        print("     ratio: perf not installed here (apt-get install linux-perf)")
    costs = ioctl_costs()
    per_second = 2 * args.threads * 50  # two ioctls per unit per 20 ms slice
    low, high = (per_second * min(costs.values()) / 1e4, per_second * max(costs.values()) / 1e4)
    print(
        "kernel cost of one group enable/disable ioctl on another process's thread here: "
        + ", ".join(f"{state} {us:.1f} us" for state, us in costs.items())
        + f" -> rotation floor for {args.threads} threads: {low:.1f}-{high:.1f} % of a core"
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
