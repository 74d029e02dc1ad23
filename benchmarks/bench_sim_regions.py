"""What the simulated kernels' region costs a session: CPU, frames and recording with it and without.

Each case runs a headless session on the simulated A64FX (scenario-a, the default warm-up and
rotation, recorded to a gzip file) twice, alternating within each repetition: as shipped, where
every slice reads the kernel's region in every thread, and with the source's region switched off,
as a trace workload (which marks nothing) has it. Prints the process CPU seconds (best of the
repetitions), the frames' JSON bytes and the recording's bytes of each, and their ratios.

    .venv/bin/python benchmarks/bench_sim_regions.py [--quick]

Numbers vary with the machine and its load; the ratios within one run are what to compare.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from sectormon.data.frames import Frame
from sectormon.profiles.resolve import load_profile
from sectormon.session.options import SessionRequest
from sectormon.session.setup import open_session
from sectormon.sources.sim.source import SimOptions, build_sim_source

PROFILE = load_profile("a64fx")


def run(options: SimOptions, regions: bool, record: Path) -> tuple[float, int, int]:
    """CPU seconds of the session, its frames' JSON bytes and its recording's bytes."""
    source = build_sim_source(options, loop=False)
    if not regions:
        source._regions = None  # what a workload that marks nothing has
    session = open_session(source, PROFILE, SessionRequest(record=str(record)))
    frames: list[Frame] = []
    session.subscribe(frames.append)
    start = time.process_time()
    session.run()
    cpu = time.process_time() - start
    return cpu, sum(len(json.dumps(f.to_json())) for f in frames), record.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads, 2 repetitions")
    args = parser.parse_args()
    passes = "1000" if args.quick else "3000"
    repetitions = 2 if args.quick else 5
    print(f"{'case':<22} {'CPU s (no region)':>18} {'frames MB':>16} {'recording kB':>18}")
    with tempfile.TemporaryDirectory() as folder:
        for threads in (2, 8):
            options = SimOptions(sizes={"passes": passes}, threads=threads)
            best = {True: float("inf"), False: float("inf")}
            size = {True: (0, 0), False: (0, 0)}
            for rep in range(repetitions):
                for regions in (True, False):
                    record = Path(folder) / f"{threads}-{regions}-{rep}.jsonl.gz"
                    cpu, frames, recorded = run(options, regions, record)
                    best[regions] = min(best[regions], cpu)
                    size[regions] = (frames, recorded)
            on, off = size[True], size[False]
            print(
                f"{f'{threads} threads, passes {passes}':<22} "
                f"{best[True]:6.2f} ({best[False]:5.2f}) x{best[True] / best[False]:4.2f} "
                f"{on[0] / 1e6:5.2f} ({off[0] / 1e6:4.2f}) x{on[0] / off[0]:4.2f} "
                f"{on[1] / 1e3:6.0f} ({off[1] / 1e3:4.0f}) x{on[1] / off[1]:4.2f}"
            )


if __name__ == "__main__":
    main()
