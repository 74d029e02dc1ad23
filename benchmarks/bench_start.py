"""How quickly sectormon starts: wall time of whole short runs against ``perf stat`` in the same run.

Rows, each the median of ``--runs`` (default 9) alternating runs:

- ``sectormon --version`` and ``sectormon --help`` (what a script or a user's first try pays);
- ``sectormon --json --count 1 -- true``: a whole counted run of a program that does nothing;
- ``sectormon stat -e task-clock -- true`` where the ``stat`` command exists (the quick start,
  docs/stat.md), and the same through the engine (``--profile generic`` sends it there);
- ``sectormon --json --pid PID`` on a sleeping process: from the start of the command to its
  header line (written once the counters count: issue 31 asks for 0.2 s) and to its first frame
  line (``--interval 0.05`` later);
- the peer: ``perf stat -e task-clock -- true``, and the floor: this Python's ``-c pass`` (the
  interpreter's own start, site and the installed packages' ``.pth`` hooks included).

Every row runs once before it is timed, with the interpreter allowed to write its bytecode caches
(``PYTHONDONTWRITEBYTECODE`` removed from the children's environment): an installed sectormon has
them, and compiling every module again would be most of a start. Each sectormon row prints its
ratio to perf stat. Target (issue 31): at most 4x perf stat for
``stat``. Run: ``python benchmarks/bench_start.py [--runs N]``. Results: docs/perf-tuning.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SECTORMON = str(Path(sys.executable).parent / "sectormon")
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=CHILD_ENV)
    return time.perf_counter() - start


def first_line_of_pid(pid: int, schema: str) -> float:
    """Seconds from starting ``sectormon --json --pid PID`` to its first line of ``schema``
    (``header``: counting has started; ``frame``: the first interval's frame)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [SECTORMON, "--json", "--interval", "0.05", "--timeslice", "0.05", "--pid", str(pid)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=CHILD_ENV,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if f'"sectormon/{schema}/' in line:
                return time.perf_counter() - start
        raise SystemExit(f"bench_start: sectormon --pid ended without a {schema} line")
    finally:
        proc.terminate()
        proc.wait()


def has_stat() -> bool:
    probe = subprocess.run(
        [SECTORMON, "stat", "--help"], capture_output=True, text=True, check=False, env=CHILD_ENV
    )
    return probe.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="alternating runs per row (default 9)")
    args = parser.parse_args()
    if shutil.which("perf") is None:
        raise SystemExit("bench_start: needs perf (the peer): apt-get install linux-perf")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    rows: dict[str, Callable[[], float]] = {
        "perf stat -e task-clock -- true": lambda: timed(["perf", "stat", "-e", "task-clock", "--", "true"]),
        "python -c pass (the floor)": lambda: timed([sys.executable, "-c", "pass"]),
        "sectormon --version": lambda: timed([SECTORMON, "--version"]),
        "sectormon --help": lambda: timed([SECTORMON, "--help"]),
        "sectormon --json --count 1 -- true": lambda: timed(
            [SECTORMON, "--json", "--count", "1", "--profile", "generic", "--", "true"]
        ),
        "sectormon --json --pid: header (counting)": lambda: first_line_of_pid(sleeper.pid, "header"),
        "sectormon --json --pid: first frame": lambda: first_line_of_pid(sleeper.pid, "frame"),
    }
    if has_stat():
        rows["sectormon stat -e task-clock -- true"] = lambda: timed(
            [SECTORMON, "stat", "-e", "task-clock", "--", "true"]
        )
        rows["... --profile generic (the engine's way)"] = lambda: timed(
            [SECTORMON, "stat", "--profile", "generic", "-e", "task-clock", "--", "true"]
        )
    times: dict[str, list[float]] = {name: [] for name in rows}
    try:
        for run in rows.values():
            run()  # warm: bytecode caches written, files in the page cache
        for _ in range(args.runs):
            for name, run in rows.items():
                times[name].append(run())
    finally:
        sleeper.kill()
        sleeper.wait()
    peer = statistics.median(times["perf stat -e task-clock -- true"])
    print(f"python: {sys.version.split()[0]}, load {os.getloadavg()[0]:.2f}, median of {args.runs}")
    for name, values in times.items():
        median = statistics.median(values)
        ratio = "" if name.startswith("perf") else f"  {median / peer:6.1f}x perf stat"
        print(f"{name:42s} {median * 1000:8.1f} ms{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
