"""The control protocol's round trip: a command written to the control FIFO until its ack is read,
for sectormon and for ``perf stat --control`` on the same idle program, in the same run.

Each tool counts ``sleep`` with ``--delay -1 --control fifo:CTL,ACK``; the script then sends
``enable``/``disable`` pairs (every ack waited for) and ``ping``s, and prints the median and the
95th percentile of each command's round trip in microseconds, and sectormon's over perf's. With
sectormon the round trip includes waking the sampler thread and one ioctl per open group (one
group here: the generic profile's software events), then the ack; perf stat answers from its own
poll loop. The figure to hold: well under one 20 ms timeslice (the sampler would otherwise wait
for its next wake-up).

Usage: python benchmarks/bench_control.py [--rounds 200]
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

ACK = b"ack\n\x00"


def _round_trip(ctl: int, ack: int, command: str) -> float:
    start = time.perf_counter()
    os.write(ctl, f"{command}\n".encode())
    got = b""
    while len(got) < len(ACK):
        if not select.select([ack], [], [], 30)[0]:
            raise SystemExit(f"no ack for {command!r}")
        got += os.read(ack, len(ACK) - len(got))
    return time.perf_counter() - start


def measure(argv: list[str], where: Path, rounds: int) -> dict[str, list[float]]:
    ctl_path, ack_path = where / "ctl", where / "ack"
    os.mkfifo(ctl_path)
    os.mkfifo(ack_path)
    ctl = os.open(ctl_path, os.O_RDWR)
    ack = os.open(ack_path, os.O_RDWR)
    tool = subprocess.Popen(
        [*argv, "--delay", "-1", "--control", f"fifo:{ctl_path},{ack_path}", "--", "sleep", "600"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _round_trip(ctl, ack, "ping")  # the tool is up and listening
        times: dict[str, list[float]] = {"enable": [], "disable": [], "ping": []}
        for _ in range(rounds):
            for command in ("enable", "disable", "ping"):
                times[command].append(_round_trip(ctl, ack, command))
        return times
    finally:
        tool.terminate()
        tool.wait()
        os.close(ctl)
        os.close(ack)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    sectormon = shutil.which("sectormon") or str(Path(sys.executable).with_name("sectormon"))
    tools = {
        "sectormon": [sectormon, "--json", "-o", os.devnull, "--profile", "generic"],
        "perf stat": ["perf", "stat", "-e", "page-faults:u"],
    }
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, argv in tools.items():
            where = Path(tmp) / name.replace(" ", "_")
            where.mkdir()
            results[name] = measure(argv, where, args.rounds)
    print(f"round trip, {args.rounds} rounds (us: median / 95th percentile)")
    for command in ("enable", "disable", "ping"):
        row = []
        for name in tools:
            values = sorted(results[name][command])
            p95 = values[int(0.95 * (len(values) - 1))]
            row.append(f"{name} {1e6 * statistics.median(values):7.0f} / {1e6 * p95:7.0f}")
        ratio = statistics.median(results["sectormon"][command]) / statistics.median(
            results["perf stat"][command]
        )
        print(f"  {command:8s} " + "   ".join(row) + f"   ratio {ratio:.1f}x")
    print(f"load: {os.getloadavg()[0]:.2f} (1 min average)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
