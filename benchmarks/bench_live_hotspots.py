"""Live hot spots (``--sample``): what sampling adds to a counting session, against perf record.

1. The faulting target of ``bench_hotspots.py`` (three global arrays touched page by page and
   given back, ROUNDS times) run under ``sectormon --json -- CMD`` (counting only), ``sectormon
   --json --sample page-faults:1 -- CMD`` and ``perf record -e page-faults -c 1 -- CMD``: the CPU
   each process tree used beyond the target alone. What ``--sample`` adds is the difference of the
   two sectormon runs; perf record's cost is its peer.
2. Placing a running process's mappings (this Python's: the libraries a ``--pid`` session finds
   when it starts) with the symbol tables read lazily, as the live session does, against reading
   every library's symbol table at once, in the same run.

Run: ``python benchmarks/bench_live_hotspots.py [--rounds N] [--repeat N]``. Needs gcc and perf.
Numbers vary with the machine and its load; the ratios within one run are what to compare.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sectormon.attribution.symbolize import Symbolizer
from sectormon.host.maps import read_proc_maps

_SPEC = importlib.util.spec_from_file_location(
    "bench_hotspots", Path(__file__).with_name("bench_hotspots.py")
)
assert _SPEC is not None and _SPEC.loader is not None
bench_hotspots = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench_hotspots)


def tree_cpu(argv: list[str]) -> tuple[float, str]:
    """CPU seconds of the command's process tree beyond the target's own, and its stdout."""
    start = os.times()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    end = os.times()
    if proc.returncode != 0:
        sys.exit(f"bench_live_hotspots: {' '.join(argv[:4])} failed: {proc.stderr.strip()[-400:]}")
    used = (end.children_user - start.children_user) + (end.children_system - start.children_system)
    return used - bench_hotspots._target_cpu(proc.stderr), proc.stdout


def overhead(program: Path, rounds: int, repeat: int) -> None:
    sectormon = [sys.executable, "-m", "sectormon.cli", "--json", "--interval", "0.5"]
    target = ["--", str(program), str(rounds)]
    with tempfile.TemporaryDirectory() as work:
        runs = {
            "sectormon, counting only": [*sectormon, *target],
            "sectormon --sample page-faults:1": [*sectormon, "--sample", "page-faults:1", *target],
            "perf record -e page-faults -c 1": [
                "perf",
                "record",
                "-q",
                "-e",
                "page-faults",
                "-c",
                "1",
                "-o",
                f"{work}/perf.data",
                *target,
            ],
        }
        best = {name: float("inf") for name in runs}
        frame: dict[str, object] = {}
        for _ in range(repeat):
            for name, argv in runs.items():
                cpu, out = tree_cpu(argv)
                best[name] = min(best[name], cpu)
                if "--sample" in argv:
                    frame = json.loads(out.splitlines()[-1])["hotspots"]["run"]
    counting, sampling, perf = best.values()
    added = sampling - counting
    print(
        f"1. page-faults of the target, every fault sampled: {frame['samples']:,} samples, "
        f"{frame['lost_samples']:,} lost (best of {repeat}; CPU beyond the target's own)"
    )
    for name, cpu in best.items():
        print(f"   {name:<36}{cpu:8.3f} s")
    print(f"   --sample adds {added:.3f} s: {added / perf:.2f}x perf record's {perf:.3f} s")


def placement(repeat: int) -> None:
    events = read_proc_maps(os.getpid(), 0)

    def place(eager: bool) -> float:
        symbolizer = Symbolizer()
        start = time.process_time()
        for event in events:
            symbolizer.feed(event)
        if eager:
            for path in {e.path for e in events if e.path.startswith("/")}:
                image = symbolizer.images.get(path)
                if image is not None:
                    image.functions.lookup(0)
        return time.process_time() - start

    lazy = min(place(False) for _ in range(repeat))
    eager = min(place(True) for _ in range(repeat))
    files = len({e.path for e in events if e.path.startswith("/")})
    print(f"2. placing this process's {len(events)} mappings ({files} files), best of {repeat}:")
    print(
        f"   symbol tables on first lookup {lazy:.3f} s, all read at once {eager:.3f} s ({eager / lazy:.1f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="target rounds (each ~20,700 faults)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions, best kept")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        program = bench_hotspots.build(Path(work))
        overhead(program, args.rounds, args.repeat)
    placement(args.repeat)


if __name__ == "__main__":
    main()
