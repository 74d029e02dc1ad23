"""What naming a traced program's heap blocks costs (``sim -- CMD``: the shim, the events, the reader's
live blocks): a program that keeps 100,000 small blocks live and allocates and frees each ten times
(2 million allocations and 2 million frees) is traced with the shim and without it, and each
capture is read once by the record reader, with and without the heap tables.

Prints, for each: the trace's wall seconds, the accesses and instructions QEMU reported (the
shim's own wrappers are traced: the differences per allocation or free are what it adds to the
counts), and the reader pass's wall seconds over all records.

    .venv/bin/python benchmarks/bench_sim_heap.py [--repeat N]

Needs gcc, qemu-x86_64 and the built plugin and shim (pip install -e .). Numbers vary with the
machine and its load; compare within one run.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from sectormon.sim.qemu import target
from sectormon.sim.qemu.capture import Program, trace_program
from sectormon.sim.qemu.workload import program_workload

CHURN = r"""
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    enum { LIVE = 100000, ROUNDS = 10 };
    static void *p[LIVE];
    long s = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < LIVE; i++) {
            p[i] = malloc(32 + (i & 7) * 16);
            ((volatile long *)p[i])[0] = i;
        }
        for (int i = 0; i < LIVE; i++) {
            s += ((volatile long *)p[i])[0];
            free(p[i]);
        }
    }
    printf("%ld\n", s);
    return 0;
}
"""
EVENTS = 4_000_000  # allocations and frees


def reader_pass(program: Program) -> float:
    """Wall seconds to read every thread's records once, as one run of the model does."""
    workload = program_workload(program, False, False, program.objects)
    started = time.monotonic()
    for spec in workload.specs:
        for _ in spec.stream():
            pass
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="traces of each kind; the best is shown")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source, binary = Path(tmp) / "churn.c", Path(tmp) / "churn"
        source.write_text(CHURN)
        subprocess.run(["gcc", "-O2", "-g", "-o", str(binary), str(source)], check=True)
        shim = target.SHIM
        results = {}
        for label, shim_path in (("with the shim", shim), ("without", Path(tmp) / "none-{arch}.so")):
            target.SHIM = shim_path
            best: tuple[float, float, int, int] | None = None
            for _ in range(args.repeat):
                program = trace_program([str(binary)])
                read = reader_pass(program)
                accesses = sum(t.accesses for t in program.threads)
                instructions = sum(t.instructions for t in program.threads)
                run = (program.wall_s, read, accesses, instructions)
                best = (
                    run
                    if best is None
                    else (min(best[0], run[0]), min(best[1], run[1]), accesses, instructions)
                )
            assert best is not None
            results[label] = best
        target.SHIM = shim
    for label, (trace, read, accesses, instructions) in results.items():
        print(
            f"{label:14} trace {trace:6.2f} s   reader pass {read:5.2f} s   "
            f"accesses {accesses:,}   instructions {instructions:,}"
        )
    (_, _, a1, i1), (_, _, a0, i0) = results["with the shim"], results["without"]
    print(
        f"the shim's own, per allocation or free: {(a1 - a0) / EVENTS:.1f} accesses, "
        f"{(i1 - i0) / EVENTS:.1f} instructions"
    )


if __name__ == "__main__":
    main()
