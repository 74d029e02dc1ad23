"""What sectormon counts of a target against `perf stat` on the same workload, in the same run.

The rows of issue 19's table: thread churn (1000 threads x 3 ms, 200 x 29 ms, 20 x 280 ms of CPU,
one after another) as a command and attached with --pid, a job script (`sh -c 'w & w; wait'`),
page faults through a pyenv-style shim and with the interpreter's own start-up. For each it runs
`perf stat` and `sectormon --json` on the workload and prints both totals and their ratio
(sectormon / perf stat; 1.00 is the goal). Then heavy churn (3,000 short threads, up to 100 alive)
N times, counting runs that did not end by themselves with exit status 0.

``--sectormon`` names the command to measure (default: the one installed beside this Python), so
the same script measures another build, e.g. ``--sectormon "python3 -m sectormon"`` with
PYTHONPATH set to a checkout.

Usage: python benchmarks/bench_tree.py [--sectormon CMD] [--heavy 20] [--only NAME]
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "tests" / "workloads"
sys.path.insert(0, str(ROOT))
from tests.workloads.peer import PERF_EVENTS as EVENTS  # noqa: E402 - the repo root is on the path now
from tests.workloads.peer import attach_gated as attach  # noqa: E402
from tests.workloads.peer import final_count, json_args, perf_value  # noqa: E402


def churn(threads: int, ms: int, alive: int = 1, *gate: str) -> list[str]:
    return [sys.executable, str(WORKLOADS / "churn.py"), str(threads), str(ms), str(alive), *gate]


class Bench:
    def __init__(self, sectormon: list[str], tmp: Path) -> None:
        self.sectormon = sectormon
        self.tmp = tmp

    def ours(self, out: Path, *extra: str) -> list[str]:
        return json_args(self.sectormon, out, *extra)

    def command(self, name: str, argv: Sequence[str]) -> tuple[float, float | None]:
        peer = subprocess.run(
            ["perf", "stat", "-x,", "-e", EVENTS[name], "--", *argv],
            capture_output=True,
            text=True,
            check=True,
        )
        out = self.tmp / "command.jsonl"
        out.unlink(missing_ok=True)
        subprocess.run([*self.ours(out), "--", *argv], capture_output=True, text=True, check=False)
        return perf_value(peer.stderr, EVENTS[name]), final_count(out, name)

    def attached(self, name: str, gated: Sequence[str]) -> tuple[float, float | None]:
        code, peer_err = attach(["perf", "stat", "-x,", "-e", EVENTS[name], "-p", "{pid}"], gated, None)
        if code != 0:
            raise SystemExit(peer_err)
        out = self.tmp / "attached.jsonl"
        out.unlink(missing_ok=True)
        attach(self.ours(out, "--pid", "{pid}"), gated, out)
        return perf_value(peer_err, EVENTS[name]), final_count(out, name)

    def heavy(self, run: int) -> bool:
        """One heavy churn run (command, or --pid every other run): True when it ended cleanly."""
        out = self.tmp / f"heavy{run}.jsonl"
        if run % 2:
            code, stderr = attach(self.ours(out, "--pid", "{pid}"), churn(3000, 1, 100, "--gate"), out)
        else:
            done = subprocess.run(
                [*self.ours(out), "--", *churn(3000, 1, 100)], capture_output=True, text=True, check=False
            )
            code, stderr = done.returncode, done.stderr
        if code != 0:
            print(f"    run {run}: exit {code}: {stderr.strip().splitlines()[-1:]}")
        return code == 0


def shim(tmp: Path) -> Path:
    (tmp / "version").write_text("system\n")
    path = tmp / "python3"
    path.write_text(
        "#!/usr/bin/env bash\nset -e\n"
        'version="$(cat "$(dirname "$0")/version")"\n'
        'prefix="$(printf %s "$version" | tr -d " " | sed -e "s/^/py-/")"\n'
        'test -n "$prefix"\n'
        f'exec {shlex.quote(sys.executable)} "$@"\n'
    )
    path.chmod(0o755)
    return path


Case = tuple[str, Callable[[], tuple[float, float | None]]]


def table_rows(bench: Bench, tmp: Path) -> list[Case]:
    """The table's rows: a name and what measures it (perf stat's figure, sectormon's)."""
    rows: list[Case] = []
    for n, ms in ((1000, 3), (200, 29), (20, 280)):
        argv = churn(n, ms)
        rows.append((f"-- churn {n} x {ms} ms, task-clock ms", partial(bench.command, "TASK_CLOCK", argv)))
    for n, ms in ((1000, 3), (200, 29), (20, 280)):
        gated = churn(n, ms, 1, "--gate")
        rows.append(
            (f"--pid churn {n} x {ms} ms, task-clock ms", partial(bench.attached, "TASK_CLOCK", gated))
        )
    job = shlex.join(churn(4, 150, 2))
    script = ["sh", "-c", f"{job} & {job}; wait"]
    rows.append(("-- sh -c 'w & w; wait', task-clock ms", partial(bench.command, "TASK_CLOCK", script)))
    pagefaults = [str(WORKLOADS / "pagefaults.py"), "30000", "1"]
    shimmed = [str(shim(tmp)), *pagefaults]
    rows.append(("-- shim w.py (30,000 pages), page-faults", partial(bench.command, "PAGE_FAULTS", shimmed)))
    direct = [sys.executable, *pagefaults]
    rows.append(
        ("-- python3 w.py (30,000 pages), page-faults", partial(bench.command, "PAGE_FAULTS", direct))
    )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    beside = Path(sys.executable).with_name("sectormon")
    parser.add_argument("--sectormon", default=str(beside) if beside.exists() else "sectormon")
    parser.add_argument("--heavy", type=int, default=20, help="heavy churn runs (0: none)")
    parser.add_argument("--only", help="run only the cases whose name contains this")
    args = parser.parse_args()
    if not shutil.which("perf"):
        raise SystemExit("needs `perf` (apt-get install linux-perf)")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        bench = Bench(shlex.split(args.sectormon), tmp)
        cases = table_rows(bench, tmp)
        print(f"{'case':48} {'perf stat':>12} {'sectormon':>12} {'ratio':>7}")
        for name, run in cases:
            if args.only and args.only not in name:
                continue
            peer, ours = run()
            shown = "failed" if ours is None else f"{ours:12.1f}"
            ratio = "" if ours is None else f"{ours / peer:7.3f}"
            print(f"{name:48} {peer:12.1f} {shown:>12} {ratio}", flush=True)
        if args.heavy and not args.only:
            clean = sum(bench.heavy(run) for run in range(args.heavy))
            print(f"heavy churn (3,000 threads, up to 100 alive): {clean} of {args.heavy} runs ended cleanly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
