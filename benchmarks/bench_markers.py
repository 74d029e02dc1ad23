"""What a region marker costs: a start/stop pair outside sectormon and inside it, per group read,
against perf stat's control fifo toggling on the same program in the same run.

A small C program (built here with ``sectormon markers --cflags/--libs``) times N pairs of
``sectormon_region_begin/end`` on one region. Outside sectormon that is the no-op path; inside, the
program runs under a :class:`MarkerEndpoint` whose opener gives each thread 1, 2 or 4 software groups
(page-faults + task-clock), so the slope is the cost of one group read; with groups sectormon
rotates by enabling them, each marker also reads the thread's CPU clock. The same program then runs
under ``perf stat --control fifo:CTL,ACK --delay -1`` while this script sends ``enable``/``disable``
and waits for each ``ack``: the round trip a script driving perf's fifo pays per toggle pair.
Targets (issue 30): inside <= 1/10 of perf's fifo round trip; outside <= 50 ns.
Run: ``python benchmarks/bench_markers.py [--pairs N] [--toggles N]``. Results: docs/perf-tuning.md.
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sectormon.perf.events import parse_event
from sectormon.perf.group import PerfGroup
from sectormon.regions.endpoint import MarkerEndpoint

PROGRAM = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sectormon_markers.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "wait")) { /* perf's target: lives until stdin closes */
        char buf[64];
        while (read(0, buf, sizeof buf) > 0) {}
        return 0;
    }
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    sectormon_region_begin("bench"); /* the first pair sets the thread up: not timed */
    sectormon_region_end("bench");
    double best = 1e30;
    for (int repeat = 0; repeat < 5; repeat++) {
        double t0 = now();
        for (long i = 0; i < n; i++) {
            sectormon_region_begin("bench");
            sectormon_region_end("bench");
        }
        double per = (now() - t0) / n;
        if (per < best) best = per;
    }
    printf("%.2f\n", best);
    return 0;
}
"""

EVENTS = ("page-faults", "task-clock")


def build(directory: Path) -> Path:
    sectormon = Path(sys.executable).parent / "sectormon"

    def flags(which: str) -> list[str]:
        return subprocess.run(
            [str(sectormon), "markers", which], capture_output=True, text=True, check=True
        ).stdout.split()

    source = directory / "bench_markers.c"
    source.write_text(PROGRAM)
    program = directory / "bench_markers"
    cc = [shutil.which("cc") or "cc", "-O2", *flags("--cflags"), str(source), "-o", str(program)]
    subprocess.run([*cc, *flags("--libs")], check=True)
    return program


def clean_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SECTORMON_")}


def pair_ns(program: Path, pairs: int, env: dict[str, str]) -> float:
    out = subprocess.run([str(program), str(pairs)], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout)


def inside_ns(program: Path, pairs: int, groups: int, rotated: bool = False) -> float:
    opened: list[PerfGroup] = []

    def opener(tid: int) -> list[PerfGroup]:
        new = [PerfGroup([parse_event(e) for e in EVENTS], pid=tid, names=EVENTS) for _ in range(groups)]
        for group in new:
            group.enable()
        opened.extend(new)
        return new

    try:
        with MarkerEndpoint(opener, rotated=rotated) as endpoint:
            ns = pair_ns(program, pairs, {**clean_environment(), **endpoint.environment()})
            (region,) = endpoint.read().of("bench")
            assert region.calls == 5 * pairs + 1 and len(region.groups) == groups
            return ns
    finally:
        for group in opened:
            group.close()


def perf_fifo_round_trip_us(program: Path, toggles: int) -> float | None:
    """Mean µs of one enable + disable through perf stat's control fifo, acknowledged each."""
    perf = shutil.which("perf")
    if perf is None:
        return None
    with tempfile.TemporaryDirectory() as directory:
        ctl, ack = Path(directory) / "ctl", Path(directory) / "ack"
        os.mkfifo(ctl)
        os.mkfifo(ack)
        command = [perf, "stat", "--control", f"fifo:{ctl},{ack}", "--delay", "-1", "-e", "page-faults:u"]
        proc = subprocess.Popen(
            [*command, "--", str(program), "wait"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None
        ctl_fd = os.open(ctl, os.O_WRONLY)
        ack_fd = os.open(ack, os.O_RDONLY)

        def send(command: bytes) -> None:
            os.write(ctl_fd, command)
            reply = b""
            while b"\n" not in reply:  # perf writes "ack\n" and its terminating NUL
                if not select.select([ack_fd], [], [], 10.0)[0]:
                    raise RuntimeError(f"perf did not acknowledge {command!r} within 10 s")
                reply += os.read(ack_fd, 16)
            assert reply.lstrip(b"\0").startswith(b"ack"), reply

        try:
            send(b"enable\n")  # the first round trip sets perf's loop up: not timed
            send(b"disable\n")
            start = time.perf_counter_ns()
            for _ in range(toggles):
                send(b"enable\n")
                send(b"disable\n")
            elapsed = time.perf_counter_ns() - start
        finally:
            os.close(ctl_fd)
            os.close(ack_fd)
            proc.stdin.close()
            proc.wait(timeout=30)
    return elapsed / toggles / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pairs", type=int, default=200_000, help="start/stop pairs per timed repeat outside"
    )
    parser.add_argument("--toggles", type=int, default=1_000, help="enable/disable pairs through perf's fifo")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of every measurement, interleaved")
    args = parser.parse_args()
    runs: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as directory:
        program = build(Path(directory))
        # Interleaved rounds and their medians: on a shared machine the load moves during a run,
        # and it should move under every figure alike.
        for _ in range(args.rounds):
            measured = {
                "outside": pair_ns(program, args.pairs * 10, clean_environment()),
                **{f"{g} group": inside_ns(program, args.pairs // 10, g) for g in (1, 2, 4)},
                "1 group rotated": inside_ns(program, args.pairs // 10, 1, rotated=True),
            }
            fifo = perf_fifo_round_trip_us(program, args.toggles)
            if fifo is not None:
                measured["perf fifo"] = fifo * 1000
            for name, value in measured.items():
                runs.setdefault(name, []).append(value)
    median = {name: statistics.median(values) for name, values in runs.items()}
    print(f"load average {os.getloadavg()[0]:.2f}; medians of {args.rounds} interleaved rounds")
    print(f"outside sectormon: {median['outside']:.2f} ns a start/stop pair (target <= 50 ns)")
    for groups in (1, 2, 4):
        inside_us = median[f"{groups} group"] / 1000
        print(f"inside, {groups} group(s) of 2 software events: {inside_us:.3f} µs a pair")
    per_group = (median["4 group"] - median["1 group"]) / 3
    print(f"  each group read adds {per_group / 1000:.3f} µs a pair (two reads)")
    rotated_us = median["1 group rotated"] / 1000
    print(f"inside, 1 group rotated by sectormon (+ the thread CPU clock): {rotated_us:.3f} µs a pair")
    if "perf fifo" not in median:
        print("perf not found: no fifo peer")
        return
    fifo_ns = median["perf fifo"]
    print(f"perf stat --control fifo: {fifo_ns / 1000:.1f} µs an enable + disable round trip")
    print(f"inside (1 group) / perf's round trip: 1/{fifo_ns / median['1 group']:.0f} (target <= 1/10)")


if __name__ == "__main__":
    main()
