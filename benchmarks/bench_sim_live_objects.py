"""What naming heap sites and stacks while a program runs costs the live frame stream
(``sectormon sim --json -- ./prog``, sim/qemu/live_objects.py): wall seconds of the whole command
for a program without heap blocks (examples/stream_table.c: globals only, so only
the larger per-object counters of every live thread differ) and for one that allocates 2 million
blocks from one site (bench_sim_heap.py's churn: the first block of a site asks Python once, the
others are the reader's own look-up).

Each ``--sectormon`` command (default: this checkout's) runs each program in turn, alternating,
best of ``--repeat``; give a main checkout's too to compare the two in one run:

    .venv/bin/python benchmarks/bench_sim_live_objects.py --sectormon /path/to/main/.venv/bin/sectormon

Prints per command and program, for its best run by wall time: the wall seconds, the CPU seconds
of sectormon and QEMU (steadier on a shared machine), and the simulated accesses per wall second
(from the closing line). Needs gcc, qemu-x86_64 and the built plugin and shim. Numbers vary with
the machine and its load; compare within one run.
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STREAM_TABLE = HERE.parent / "examples" / "stream_table.c"
sys.path.insert(0, str(HERE))
from bench_sim_heap import CHURN  # noqa: E402 - the same churn program as the heap benchmark

SIMULATED = re.compile(r"simulated ([\d,]+) of its")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(sectormon: str, binary: str) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of sectormon and QEMU, simulated accesses) of
    ``sectormon sim --json -- binary``."""
    cpu = _cpu()
    started = time.perf_counter()
    run = subprocess.run(
        [sectormon, "sim", "--json", "--", binary], capture_output=True, text=True, check=True
    )
    seconds = time.perf_counter() - started
    match = SIMULATED.search(run.stderr)
    assert match, run.stderr
    return seconds, _cpu() - cpu, int(match.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sectormon", action="append", help="a sectormon command (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    commands = [str(HERE.parent / ".venv" / "bin" / "sectormon"), *(args.sectormon or [])]
    with tempfile.TemporaryDirectory() as folder:
        programs = {
            "stream_table (no heap)": Path(folder) / "stream_table",
            "churn (2M blocks)": Path(folder) / "churn",
        }
        subprocess.run(
            ["gcc", "-O2", "-o", str(programs["stream_table (no heap)"]), str(STREAM_TABLE)], check=True
        )
        churn_c = Path(folder) / "churn.c"
        churn_c.write_text(CHURN)
        subprocess.run(
            ["gcc", "-O2", "-g", "-o", str(programs["churn (2M blocks)"]), str(churn_c)], check=True
        )
        best: dict[tuple[str, str], tuple[float, float, int]] = {}
        for _ in range(args.repeat):  # alternating: every command and program once per round
            for label, binary in programs.items():
                for command in commands:
                    result = _run(command, str(binary))
                    key = (command, label)
                    best[key] = min(best.get(key, result), result)
    print(f"{'sectormon':<60} {'program':<24} {'wall s':>7}  {'CPU s':>6}  {'M acc/s':>8}")
    for (command, label), (seconds, cpu, accesses) in best.items():
        print(f"{command:<60} {label:<24} {seconds:>7.2f}  {cpu:>6.2f}  {accesses / seconds / 1e6:>8.2f}")


if __name__ == "__main__":
    main()
