"""Replay memory and time per unit: a recording of many units (threads), replayed and compared.

A slice holds one reading per unit. A session following a very threaded program (or a damaged
file) can hold 100,000s of units in one slice, and a replay's memory grows with the units, not with
the recording's length. This benchmark writes a recording of N units (default 50,000) and S slices
(default 6) into a temporary directory, then runs, each in a process of its own:

- ``sectormon replay --json`` (every frame built and written), and with ``--skip-bad``;
- ``sectormon compare FILE FILE`` (only each side's final frame is built);

and reports each one's wall and CPU seconds and its peak resident memory, with the memory per
unit (peak minus a ~60 MB interpreter, over N). docs/perf-tuning.md has the numbers.

Usage: ``python benchmarks/bench_replay_units.py [--units N] [--slices S]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_KIB = 60 * 1024  # the interpreter with sectormon imported, before any reading


def generate(path: Path, units: int, slices: int) -> None:
    from sectormon.profiles.codec import profile_to_dict
    from sectormon.profiles.resolve import load_profile

    profile = load_profile("a64fx")
    group = profile.groups[0]
    events = list(profile.pe_events(group))
    header = {
        "schema": "sectormon/recording/2",
        "sectormon": "bench",
        "created": "2026-01-01T00:00:00+00:00",
        "host": "bench",
        "topology": {
            "cpus": list(range(48)),
            "cmgs": {str(c): list(range(c * 12, c * 12 + 12)) for c in range(4)},
        },
        "profile": profile_to_dict(profile),
        "source": {"kind": "sim"},
        "target": {"mode": "pid"},
        "options": {"interval": 1.0, "timeslice": 0.25, "recent_seconds": 2.0},
        "unavailable": {},
    }

    def counts(i: int) -> list[int]:
        return [1_000_000 + i + 1000 * e for e in range(len(events))]

    with path.open("w") as f:
        f.write(json.dumps(header, separators=(",", ":")) + "\n")
        for k in range(slices):
            rows = [
                [f"thread:{i}", i % 48, (i % 48) // 12, group.name, 250_000_000, 250_000_000, 0, counts(i)]
                for i in range(units)
            ]
            record = {
                "schema": "sectormon/slice/2", "t": 0.25 * (k + 1), "index": k, "duration": 0.25,
                "group": group.name, "overhead_s": 0.0, "ended": [], "events": [events], "readings": rows,
            }  # fmt: skip
            f.write(json.dumps(record, separators=(",", ":")) + "\n")
        f.write(
            json.dumps(
                {"schema": "sectormon/mark/2", "t": 0.25 * slices, "kind": "end", "label": "", "data": {}}
            )
        )
        f.write("\n")


def measure(*args: str) -> tuple[float, float, int, int]:
    """Wall s, CPU s (user + system, reader processes included) and peak RSS (KiB) of
    ``sectormon ARGS`` run under a parent of its own, and its exit code."""
    probe = (
        "import resource, subprocess, sys, time; t = time.monotonic(); "
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
        "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(time.monotonic() - t, u.ru_utime + u.ru_stime, u.ru_maxrss, done.returncode)"
    )
    beside = Path(sys.executable).with_name("sectormon")  # the venv's, whatever PATH says
    command = str(beside) if beside.exists() else shutil.which("sectormon") or "sectormon"
    done = subprocess.run(
        [sys.executable, "-c", probe, command, *args], capture_output=True, text=True, check=True
    )
    wall, cpu, peak, code = done.stdout.split()
    return float(wall), float(cpu), int(peak), int(code)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=50_000)
    parser.add_argument("--slices", type=int, default=6)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sectormon-bench-units-"))
    try:
        path = tmp / "units.jsonl"
        start = time.monotonic()
        generate(path, args.units, args.slices)
        size = path.stat().st_size
        print(
            f"{args.units:,} units x {args.slices} slices: {size / 1e6:.0f} MB, "
            f"written in {time.monotonic() - start:.1f} s"
        )
        runs = {
            "replay --json": ("replay", "--json", str(path)),
            "replay --json --skip-bad": ("replay", "--json", "--skip-bad", str(path)),
            "compare (final frames)": ("compare", "--json", str(path), str(path)),
        }
        for name, command in runs.items():
            wall, cpu, peak, code = measure(*command)
            per_unit = (peak - BASE_KIB) / args.units
            print(
                f"{name:26s} exit {code}  wall {wall:6.1f} s  cpu {cpu:6.1f} s  "
                f"peak {peak / 1024:7.0f} MB  {per_unit:5.1f} KiB/unit"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
