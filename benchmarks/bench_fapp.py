"""Time per thread row of ``sectormon fapp --json`` and ``import fapp`` on generated pa1 exports.

The report, section 3 and an import each look a thread's rows up for every metric; a search per
look-up made them quadratic (1,000 rows 5 s, 4,000 rows 54 s, 16,000 not done in 120 s). This
prints, for 1k, 4k and 16k rows (``--rows`` to change), the CPU seconds of each command run in this
process and the time per row: linear means the per-row figure stays flat as the rows grow.

Usage: python benchmarks/bench_fapp.py [--rows 1000,4000,16000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from sectormon.cli import main  # noqa: E402 - the repo root is on the path now

HEADER = (
    "LABEL-FAPP-cpupa,Level,Spawn,Process,Thread,Region_name,Region_number,Call,CNTVCT,PMCCNTR,"
    "0x80c0,0x80c1,0x0017,0x0018,0x0325,0x0326,0x0121,0x8000"
)


def write_folder(folder: Path, rows: int) -> None:
    """A measurement of ``rows`` threads: pa1 (every time-based metric's set) and info.json."""
    folder.mkdir()
    lines = [HEADER]
    lines += [
        f"FAPP-cpupa,Thread,0,0,{t},kernel,1,1,{100_000_000 + t},{220_000_000 + 7 * t},"
        f"{1000 + t},{2000 + t},{30 + t % 7},{40 + t % 5},{t % 3},{t % 2},{8_000_000 + t},{5_000_000 + t}"
        for t in range(rows)
    ]
    (folder / "pa1.csv").write_text("\n".join(lines) + "\n")
    (folder / "info.json").write_text('{"cntfrq_hz": 100000000}\n')


def cpu_seconds(argv: list[str]) -> float:
    """The CPU time of one in-process run of the CLI (output discarded); it must succeed."""
    started = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    elapsed = time.process_time() - started
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}")
    return elapsed


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000,4000,16000", help="thread rows per run, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the best is printed")
    args = parser.parse_args()
    sizes = [int(n) for n in args.rows.split(",")]
    print(f"{'rows':>7}  {'command':<14}{'best s':>9}{'µs/row':>9}")
    with tempfile.TemporaryDirectory(prefix="bench-fapp-") as tmp:
        for rows in sizes:
            folder = Path(tmp) / f"rows{rows}"
            write_folder(folder, rows)
            out = Path(tmp) / f"rows{rows}.jsonl"
            commands = {
                "fapp --json": ["fapp", str(folder), "--json"],
                "import fapp": ["import", "fapp", str(folder), "-o", str(out)],
            }
            for name, argv in commands.items():
                best = min(cpu_seconds(argv) for _ in range(args.repeat))
                print(f"{rows:>7}  {name:<14}{best:>9.2f}{best / rows * 1e6:>9.0f}", flush=True)


if __name__ == "__main__":
    main_()
