"""What the simulated kernels' region costs a session: CPU, frames and recording with it and without.

Each case runs a headless session on the simulated A64FX (scenario-a, the default warm-up and
rotation, recorded to a gzip file) twice, alternating within each repetition: as shipped, where
every slice reads the kernel's region in every thread, and with the source's region switched off,
as a trace workload (which marks nothing) has it. Prints the process CPU seconds (best of the
repetitions), the frames' JSON bytes and the recording's bytes of each, and their ratios.

Then what a traced program's marker call costs the simulation (``sources/sim/marks.py``): scenario-a
run to completion (2 threads) with every chunk of its stream wrapped in a start and a stop, as a
program marking a region around each step would, against the same stream unmarked, on each core:
the CPU seconds of both and the difference per mark.

    .venv/bin/python benchmarks/bench_sim_regions.py [--quick]

Numbers vary with the machine and its load; the ratios within one run are what to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import cast

from sectormon.data.frames import Frame
from sectormon.profiles.resolve import load_profile
from sectormon.session.options import SessionRequest
from sectormon.session.setup import open_session
from sectormon.sim import native
from sectormon.sim.config import ModelConfig
from sectormon.sim.kernels import make_kernel
from sectormon.sim.stream import Chunks, Record, RegionMark
from sectormon.sim.workload import kernel_workload
from sectormon.sources.sim.source import SimOptions, SimSource, build_sim_source

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
    print()
    _marks(args.quick, repetitions)


def _marked(stream: Callable[[], Chunks]) -> Callable[[], Chunks]:
    """Every chunk of ``stream`` inside a region (four of them, in turn)."""

    def marked() -> Iterator[list[Record] | RegionMark]:
        for i, chunk in enumerate(stream()):
            yield RegionMark(True, "step", i % 4)
            yield chunk
            yield RegionMark(False, "step", i % 4)

    return lambda: cast(Chunks, marked())


def _marks(quick: bool, repetitions: int) -> None:
    kernel = make_kernel("scenario-a", {"passes": "200" if quick else "800"})
    head = ("marked stream", "core", "marks", "CPU s unmarked", "marked", "per mark")
    print("{:<22} {:>6} {:>7} {:>15} {:>8} {:>10}".format(*head))
    for core in [c for c in native.CORES if c == "python" or native.compiled is not None]:
        os.environ[native.ENV] = core
        best = {True: float("inf"), False: float("inf")}
        marks = 0
        for _ in range(repetitions):
            for marked in (False, True):
                workload = kernel_workload(kernel, 2, True, True)
                if marked:
                    specs = tuple(replace(s, stream=_marked(s.stream)) for s in workload.specs)
                    workload = replace(workload, specs=specs)
                    marks = sum(isinstance(x, RegionMark) for s in specs for x in s.stream())
                source = SimSource(workload, ModelConfig())
                start = time.process_time()
                source.start()
                source.run_to_completion()
                best[marked] = min(best[marked], time.process_time() - start)
        per = (best[True] - best[False]) / marks
        row = ("scenario-a, 2 threads", core, marks, best[False], best[True], per * 1e6)
        print("{:<22} {:>6} {:>7} {:15.3f} {:8.3f} {:7.0f} us".format(*row))


if __name__ == "__main__":
    main()
