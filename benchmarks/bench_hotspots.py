"""Sampled attribution's cost against Linux perf, on the same target in the same run.

The target is a C program (built here) whose three global arrays of 64, 16 and 1 MiB are touched
page by page and then given back with ``madvise(MADV_DONTNEED)``, ROUNDS times: every touch is a
page fault on a known variable.

1. Sampling overhead at the default period (page-faults, every fault, where the host has no
   hardware PMU): the CPU time ``sectormon hotspots`` and ``perf record`` add to the target, each
   split into the tool's own time and the target's extra (kernel) time for writing the samples;
   the target reports its own CPU time, so the tool's is the rest of the process tree's.
2. Symbolization and aggregation of about a million samples (``--rounds 50``) against
   ``perf report --sort symbol_daddr`` (and ``--sort symbol``) on the samples of the same program,
   event and period.

3. Live windows (``sectormon --sample page-faults:1``) on 20 short-lived runs of the program one
   after the other: sectormon's CPU in % of one core (its overhead line), the share of samples
   lost, and whether every frame's window reconciles (samples + lost = counted total), against
   the targets printed beside them.
4. DWARF source lines of this interpreter's libpython (about a million rows when it carries
   ``.debug_line``): peak RSS and time to look up the lines of N sampled functions, and of every
   compilation unit, each in a fresh process.

Run: ``python benchmarks/bench_hotspots.py [--rounds N] [--skip-perf]``. Needs gcc (and perf for 1-2).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sectormon.attribution.aggregate import HotspotAggregator
from sectormon.attribution.symbolize import Symbolizer
from sectormon.perf.events import parse_event
from sectormon.perf.sampling import SamplingConfig
from sectormon.sources.perf.samples import make_target, sample_target

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#define PAGE 4096
#define MIB (1024 * 1024)
static char big_array[64 * MIB] __attribute__((aligned(PAGE)));
static char mid_array[16 * MIB] __attribute__((aligned(PAGE)));
static char small_array[1 * MIB] __attribute__((aligned(PAGE)));
__attribute__((noinline)) static void touch(char *a, size_t n) {
    for (size_t i = 0; i < n; i += PAGE) a[i] = 1;
    madvise(a, n, MADV_DONTNEED);
}
int main(int argc, char **argv) {
    prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    for (int r = 0; r < rounds; r++) {
        touch(big_array, sizeof big_array);
        touch(mid_array, sizeof mid_array);
        touch(small_array, sizeof small_array);
    }
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    fprintf(stderr, "target-cpu %.6f\n", u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6
            + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6);
    return 0;
}
"""


def build(directory: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("bench_hotspots: needs a C compiler")
    source = directory / "faults.c"
    source.write_text(PROGRAM)
    exe = directory / "faults"
    subprocess.run([cc, "-O1", "-g", "-o", str(exe), str(source)], check=True)
    return exe


def _target_cpu(stderr: str) -> float:
    for line in stderr.splitlines():
        if line.startswith("target-cpu "):
            return float(line.split()[1])
    sys.exit(f"bench_hotspots: the target did not report its CPU time: {stderr[-400:]}")


def tree_cpu(argv: list[str]) -> tuple[float, float, str]:
    """(CPU seconds of the command and everything it waited for, the target's own CPU, stdout)."""
    start = os.times()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    end = os.times()
    if proc.returncode != 0:
        sys.exit(f"bench_hotspots: {' '.join(argv[:3])} failed: {proc.stderr.strip()[-400:]}")
    return _children_cpu(start, end), _target_cpu(proc.stderr), proc.stdout


def _children_cpu(start: os.times_result, end: os.times_result) -> float:
    return (end.children_user - start.children_user) + (end.children_system - start.children_system)


def overhead(program: Path, rounds: int, work: Path) -> None:
    alone, target_alone, _ = tree_cpu([str(program), str(rounds)])
    sectormon = [sys.executable, "-m", "sectormon.cli", "hotspots", "--json", "--event", "page-faults"]
    total_s, target_s, out = tree_cpu([*sectormon, "--", str(program), str(rounds)])
    report = json.loads(out)
    period = report["period"]
    data = work / "perf.data"
    record = ["perf", "record", "-q", "-e", "page-faults", "-c", str(period), "-o", str(data)]
    total_p, target_p, _ = tree_cpu([*record, "--", str(program), str(rounds)])
    rows = [
        ("perf record", total_p - target_p, target_p - target_alone),
        ("sectormon, while sampling", report["overhead"]["sectormon_cpu_seconds"], target_s - target_alone),
        ("sectormon, whole command", total_s - target_s, target_s - target_alone),
    ]
    print(
        f"1. sampling overhead: page-faults every {period} fault(s), {report['samples']:,} samples "
        f"({report['lost_samples']} lost); the target alone used {target_alone:.3f} s CPU"
    )
    print(f"   {'':<28}{'tool CPU':>10}{'target extra':>14}{'sum':>9}")
    for name, tool, extra in rows:
        print(f"   {name:<28}{tool:>9.3f}s{extra:>13.3f}s{tool + extra:>8.3f}s")
    peer = rows[0][1] + rows[0][2]
    sampling, whole = rows[1][1] + rows[1][2], rows[2][1] + rows[2][2]
    print(f"   sampling vs perf record: {sampling / peer:.2f}x (target <= 2x)")
    print(f"   whole command (Python start, symbolization, report) vs perf record: {whole / peer:.2f}x")
    print(f"   (process trees: perf record {total_p:.3f} s, sectormon {total_s:.3f} s, alone {alone:.3f} s)")


def symbolization(program: Path, rounds: int, work: Path) -> None:
    run = sample_target(
        make_target(command=[str(program), str(rounds)]), parse_event("page-faults"), SamplingConfig(period=1)
    )
    start = time.process_time()
    symbolizer = Symbolizer()
    aggregator = HotspotAggregator()
    for event in run.stream():
        attributed = symbolizer.feed(event)
        if attributed is not None:
            aggregator.add(attributed)
    table = aggregator.table(total=run.counted.value if run.counted else None, top=20)
    ours = time.process_time() - start
    data = work / "perf1.data"
    record = ["perf", "record", "-q", "-e", "page-faults", "-c", "1", "-d", "-o", str(data)]
    subprocess.run([*record, "--", str(program), str(rounds)], check=True, capture_output=True)
    timings = {}
    for sort in ("symbol_daddr", "symbol"):
        before = os.times()
        subprocess.run(
            ["perf", "report", "-i", str(data), "--stdio", "--mem-mode", "--sort", sort],
            capture_output=True,
            check=True,
        )
        timings[sort] = _children_cpu(before, os.times())
    samples = table.samples
    top = ", ".join(f"{r.name} {100 * r.share:.1f}%" for r in table.objects[:3])
    print(f"2. symbolization and aggregation of {samples:,} samples (page-faults, every fault, same program)")
    print(
        f"   sectormon (functions, source lines and data objects at once): {ours:.2f} s CPU, "
        f"{ours / samples * 1e6:.2f} us a sample; top objects: {top}"
    )
    for sort, seconds in timings.items():
        print(f"   perf report --sort {sort:<13}: {seconds:.2f} s CPU; ratio {ours / seconds:.2f}x")


LIVE_TARGET_CPU = 15.0
"""The target for item 3: sectormon's CPU (every thread, and what writing the samples costs the
target) while sampling every fault, in % of one core."""
LIVE_TARGET_LOST = 2.0
"""The target for item 3: samples lost, in % of the samples taken."""
WINDOW_SLACK = 8
"""Events a window may count but leave to the next one's samples (the microseconds between
reading the rings and reading the counters)."""


def live_windows(program: Path) -> None:
    loop = ["sh", "-c", f"for i in $(seq 20); do {program} 1 >/dev/null 2>&1; done"]
    start = os.times()
    subprocess.run(loop, check=True)
    alone = _children_cpu(start, os.times())
    argv = [sys.executable, "-m", "sectormon.cli", "--json", "--sample", "page-faults:1", "--interval", "0.5"]
    start = os.times()
    began = time.monotonic()
    proc = subprocess.run([*argv, "--", *loop], capture_output=True, text=True, check=False)
    wall = time.monotonic() - began
    tree = _children_cpu(start, os.times())
    if proc.returncode != 0:
        sys.exit(f"bench_hotspots: the live run failed: {proc.stderr.strip()[-400:]}")
    frames = [json.loads(line) for line in proc.stdout.splitlines()][1:]
    final = frames[-1]
    run = final["hotspots"]["run"]
    # The frames' overhead line is the counting sampler thread's CPU; the ring reader and the
    # resolver are threads of their own, so the whole cost is the process tree's beyond the loop's.
    line = 100 * final["overhead"]
    cpu = 100 * (tree - alone) / wall
    lost = 100 * run["lost_samples"] / max(1, run["samples"] + run["lost_samples"])
    windows = [f["hotspots"]["interval"] for f in frames]
    worst = max(abs(w["samples"] + w["lost_samples"] - (w["counted_total"] or 0)) for w in windows)
    print(f"3. live windows, --sample page-faults:1 on 20 runs of the program in turn ({len(frames)} frames)")
    print(f"   {'':<34}{'measured':>10}{'target':>10}")
    rows = (
        ("sectormon CPU, % of one core", f"{cpu:.1f}%", f"{LIVE_TARGET_CPU:.1f}%", cpu <= LIVE_TARGET_CPU),
        ("  of it the frames' overhead line", f"{line:.1f}%", "", True),
        ("samples lost", f"{lost:.1f}%", f"{LIVE_TARGET_LOST:.1f}%", lost <= LIVE_TARGET_LOST),
        ("worst window |samples+lost-count|", f"{worst:,}", f"{WINDOW_SLACK}", worst <= WINDOW_SLACK),
    )
    for name, measured, target, met in rows:
        verdict = ("met" if met else "NOT met") if target else ""
        print(f"   {name:<34}{measured:>10}{target:>10}  {verdict}")
    samples, lost_samples, counted = run["samples"], run["lost_samples"], run["counted_total"]
    print(f"   (run: {samples:,} samples, {lost_samples:,} lost, counted {counted:,}; {wall:.1f} s)")


def dwarf_lines(samples: int) -> None:
    import sysconfig

    library = Path(sysconfig.get_config_var("LIBDIR") or "") / (sysconfig.get_config_var("INSTSONAME") or "")
    if not library.is_file():
        print("4. DWARF lines: this interpreter has no shared libpython; skipped")
        return
    from sectormon.attribution.elf import ElfImage

    image = ElfImage(str(library))
    if not image.has_lines:
        print(f"4. DWARF lines: {library.name} has no .debug_line; skipped")
        return
    print(f"4. DWARF lines of {library} ({library.stat().st_size / 2**20:.1f} MiB), each in a fresh process")
    probe = [sys.executable, "-c", _LINES_PROBE]
    for n, what in (
        (samples, f"the lines of {samples} sampled functions"),
        (0, "every function (every unit with code)"),
    ):
        out = subprocess.run(
            [*probe, str(library), str(n)], capture_output=True, text=True, check=True
        ).stdout
        found, rows, seconds, rss = out.split()
        print(
            f"   {what:<40}: {int(found):>5} found, {int(rows):>9,} rows, {float(seconds):6.2f} s CPU, "
            f"peak RSS {int(rss) / 1024:6.0f} MiB"
        )


_LINES_PROBE = r"""
import resource, sys, time
from sectormon.attribution.elf import ElfImage
image = ElfImage(sys.argv[1])
n = int(sys.argv[2])
start = time.process_time()
starts = sorted(begin for _, begin, _ in image.functions.ranges())
step = max(1, len(starts) // n) if n else 1
found = sum(image.source(begin + 1) is not None for begin in starts[::step][: n or None])
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(found, image.decoded_rows, time.process_time() - start, rss)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=50, help="passes over the arrays (20,736 faults each)")
    parser.add_argument("--skip-perf", action="store_true", help="only items 3 and 4 (no perf needed)")
    parser.add_argument("--samples", type=int, default=100, help="sampled functions for item 4 (default 100)")
    args = parser.parse_args()
    if not args.skip_perf and shutil.which("perf") is None:
        sys.exit("bench_hotspots: needs perf (apt-get install linux-perf), or give --skip-perf")
    with tempfile.TemporaryDirectory(prefix="bench-hotspots-") as tmp:
        work = Path(tmp)
        program = build(work)
        print(f"bench_hotspots: {args.rounds} rounds of 20,736 page faults; machine: {os.cpu_count()} CPUs")
        if not args.skip_perf:
            overhead(program, args.rounds, work)
            symbolization(program, args.rounds, work)
        live_windows(program)
        dwarf_lines(args.samples)


if __name__ == "__main__":
    main()
