"""Simulator speed: simulated accesses per second on one core, against pycachesim in the same run.

pycachesim (a C cache simulator) is driven the way a Python tool would drive it access by access:
one ``load()`` call per address. sectormon runs the same address list (L1D 64x4, L2 2048x14,
256-byte lines, LRU) as one thread, on each of its cores (the compiled core and the Python model,
``sectormon/sim/native.py``): once with only what pycachesim models (no prefetch, no sectors;
records of one access each, then grouped by line) and once with the full model (prefetcher,
sectors, timing). Then the built-in kernels on both cores. Then ``--objects``: a trace whose
accesses spread over 256 to 4,096 named objects (the most a file may name), run as ``sectormon sim
--trace T --objects O --summary`` runs it; the time per object must stay flat (it grew with the
objects squared: 5,000 objects took 80 s). Last, a real program (``sectormon sim -- ./prog``: the
issue 32 stream-and-table C program, tests/sim/qemu/programs) against cachegrind on the same
binary: traced under QEMU and simulated with the full model, in this process, against ``valgrind
--tool=cachegrind --cache-sim=yes``, accesses per second of each (cachegrind's D refs). Then the
worked example's advisor, as a user runs it: ``sectormon sim --advise --json -- ./stream_table``
(examples/), wall seconds of the whole command (trace included), the simulations it ran, and
simulated accesses per second of its search (``--advise-only``: this section alone).

    .venv/bin/python benchmarks/bench_sim.py [--quick] [--advise-only | --program-only]

Numbers vary with the machine and its load; the ratios within one run are what to compare. Each
repetition times every contender in turn (alternating), and the best of each is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from sectormon.commands.sim import summarize
from sectormon.sim import native
from sectormon.sim.config import L1_SETS, L1_WAYS, L2_SETS, ModelConfig, Prefetch, SectorConfig
from sectormon.sim.engine import Machine
from sectormon.sim.kernels import make_kernel
from sectormon.sim.objects import parse_objects
from sectormon.sim.qemu.capture import trace_program
from sectormon.sim.stream import Record, ThreadSpec
from sectormon.sim.trace import open_trace
from sectormon.sim.workload import kernel_workload
from sectormon.sources.sim.source import SimOptions, build_sim_source

LINE = 256


def _traces(n: int) -> dict[str, list[int]]:
    rng = random.Random(42)
    hot = [rng.randrange(48 << 10) for _ in range(n)]
    mixed: list[int] = []
    while len(mixed) < n:
        r = rng.random()
        if r < 0.4:
            mixed.append(rng.randrange(48 << 10))
        elif r < 0.7:
            mixed.append(rng.randrange(4 << 20))
        else:
            base = rng.randrange(32 << 20)
            mixed.extend(base + 8 * j for j in range(rng.randrange(1, 64)))
    return {
        "sequential 8-byte": [(i * 8) % (64 << 20) for i in range(n)],
        "hot random (L1D)": hot,
        "mixed": mixed[:n],
        "random 64 MiB": [rng.randrange(64 << 20) for _ in range(n)],
    }


def _pycachesim(addresses: list[int]) -> float:
    import cachesim

    mem = cachesim.MainMemory()
    l2 = cachesim.Cache("L2", L2_SETS, 14, LINE, "LRU")
    mem.load_to(l2)
    mem.store_from(l2)
    l1 = cachesim.Cache("L1", L1_SETS, L1_WAYS, LINE, "LRU", store_to=l2, load_from=l2)
    sim = cachesim.CacheSimulator(l1, mem)
    load = sim.load
    start = time.perf_counter()
    for a in addresses:
        load(a)
    return time.perf_counter() - start


def _records(addresses: list[int], grouped: bool) -> list[Record]:
    out: list[Record] = []
    for a in addresses:
        line = a // LINE
        if grouped and out and out[-1][0] == line:
            out[-1] = (line, out[-1][1] + 1, 0)
        else:
            out.append((line, 1, 0))
    return out


def _ours(records: list[Record], full: bool, core: str) -> float:
    def stream() -> Iterator[list[Record]]:
        for i in range(0, len(records), 4096):
            yield records[i : i + 4096]

    if full:
        config = ModelConfig()
    else:
        config = ModelConfig(prefetch=Prefetch(enabled=False), sectors=SectorConfig(enabled=False))
    machine = Machine(config, [ThreadSpec(0, 0, stream)], core=core)
    start = time.perf_counter()
    machine.run_to_completion()
    return time.perf_counter() - start


def _kernel(name: str, sizes: dict[str, str], prefetch: bool, core: str) -> tuple[int, float]:
    k = make_kernel(name, sizes)
    config = ModelConfig(prefetch=Prefetch(enabled=prefetch))
    machine = Machine(config, list(kernel_workload(k, 1, True, prefetch).specs), core=core)
    start = time.perf_counter()
    machine.run_to_completion()
    return machine.threads[0].acc, time.perf_counter() - start


def _objects(count: int, accesses: int, core: str, folder: str) -> float:
    """Seconds of ``sim --summary`` on a trace of ``accesses`` reads spread over ``count``
    objects of 4 KiB (files read, model built and run, per-object counts summed)."""
    rng = random.Random(count)
    objects = os.path.join(folder, f"{count}.objects")
    trace = os.path.join(folder, f"{count}.din")
    with open(objects, "w") as out:
        out.writelines(f"o{i} {0x100000 + i * 4096:x} 4K\n" for i in range(count))
    with open(trace, "w") as out:
        out.writelines(
            f"0 {0x100000 + rng.randrange(count) * 4096 + rng.randrange(64) * 64:x}\n"
            for _ in range(accesses)
        )
    os.environ[native.ENV] = core
    try:
        start = time.perf_counter()
        options = SimOptions(traces=(open_trace(trace),), objects=parse_objects(objects))
        summary = summarize(build_sim_source(options, loop=False))
        assert len(summary["objects"]) == count + 1
        return time.perf_counter() - start
    finally:
        del os.environ[native.ENV]


EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "stream_table.c"


def _program_under_sectormon(binary: str) -> tuple[int, float]:
    """(L1D accesses, seconds) of ``sim --summary -- binary``: traced and simulated, full model."""
    started = time.perf_counter()
    saved, quiet = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # the program's own output
    try:
        program = trace_program([binary])
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(quiet)
    options = SimOptions(
        program=program, sector_cache=True, l1_sectors=(3, 1, 0, 0), assign={"table": "0", "stream": "1"}
    )
    summary = summarize(build_sim_source(options, loop=False))
    return int(summary["counts"]["L1D_CACHE"]), time.perf_counter() - started


def _program_under_cachegrind(binary: str) -> tuple[int, float]:
    """(D refs, seconds) of cachegrind with the A64FX's L1D as its D1."""
    options = ["--tool=cachegrind", "--cache-sim=yes", "--D1=65536,4,256", "--cachegrind-out-file=/dev/null"]
    started = time.perf_counter()
    run = subprocess.run(["valgrind", *options, binary], capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - started
    match = re.search(r"D\s+refs:\s+([\d,]+)", run.stderr)
    assert match, run.stderr
    return int(match.group(1).replace(",", "")), seconds


def _real_program(repeat: int) -> None:
    missing = [tool for tool in ("gcc", "qemu-x86_64", "valgrind") if shutil.which(tool) is None]
    if missing:
        print(f"real program: skipped ({', '.join(missing)} missing)")
        return
    with tempfile.TemporaryDirectory() as folder:
        binary = os.path.join(folder, "stream_table")
        subprocess.run(["gcc", "-O2", "-o", binary, str(EXAMPLE)], check=True)
        ours = cachegrind = (0, float("inf"))
        for _ in range(repeat):  # alternating, best of each
            ours = min(ours, _program_under_sectormon(binary), key=lambda r: r[1])
            cachegrind = min(cachegrind, _program_under_cachegrind(binary), key=lambda r: r[1])
    rate, peer = ours[0] / ours[1] / 1e6, cachegrind[0] / cachegrind[1] / 1e6
    print(f"{'program':<28} {'accesses':>10}  {'sectormon':>10}  {'cachegrind':>10}")
    label = "stream_table (x86_64)"
    print(f"{label:<28} {ours[0]:>10}  {rate:>10.2f}  {peer:>10.2f}  ({rate / peer:.2f}x cachegrind)")


def _advise_example(repeat: int) -> None:
    """The worked example's advisor through the installed command, best of ``repeat`` runs."""
    missing = [tool for tool in ("gcc", "qemu-x86_64") if shutil.which(tool) is None]
    command = Path(sys.executable).with_name("sectormon")
    if missing or not command.exists():
        print(f"advisor: skipped ({', '.join(missing) or 'the sectormon command'} missing)")
        return
    with tempfile.TemporaryDirectory() as folder:
        binary = os.path.join(folder, "stream_table")
        subprocess.run(["gcc", "-O2", "-g", "-o", binary, str(EXAMPLE)], check=True)
        best: tuple[float, dict[str, object]] = (float("inf"), {})
        for _ in range(repeat):
            started = time.perf_counter()
            run = subprocess.run(
                [str(command), "sim", "--advise", "--json", "--", binary],
                capture_output=True,
                text=True,
                check=True,
            )
            elapsed = time.perf_counter() - started
            best = min(best, (elapsed, json.loads(run.stdout.splitlines()[-1])), key=lambda r: r[0])
    elapsed, advice = best
    print(f"sim --advise -- ./stream_table (examples/, x86_64), the whole command, best of {repeat}")
    search = advice["search"]
    assert isinstance(search, dict) and isinstance(advice["objects"], list)
    runs = search["simulated"] + 1  # the baseline too
    accesses = sum(o["accesses"] for o in advice["objects"])
    print(f"{'command':<40} {'wall s':>7} {'search s':>9} {'CPU s':>6} {'runs':>5} {'M acc/s':>8}")
    print(
        f"{'sim --advise -- ./stream_table':<40} {elapsed:>7.1f} {search['seconds']:>9.1f} "
        f"{search['cpu_seconds']:>6.1f} {runs:>5} {runs * accesses / search['seconds'] / 1e6:>8.1f}"
        f"  ({search['how'].split(':')[0]}{', cut short' if search['cut_short'] else ''})"
    )


def _best_alternating(runs: list[Callable[[], float]], repeat: int) -> list[float]:
    """The best time of each, measured in turn ``repeat`` times: every contender sees the same
    phases of a shared machine (the slower runs are what other tenants took)."""
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, run in enumerate(runs):
            best[i] = min(best[i], run())
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs, one repetition")
    parser.add_argument("--advise-only", action="store_true", help="only the worked example's advisor")
    parser.add_argument("--program-only", action="store_true", help="only the real program vs cachegrind")
    args = parser.parse_args()
    if args.program_only:
        _real_program(1 if args.quick else 5)
        return
    if args.advise_only:
        _advise_example(1 if args.quick else 3)
        return
    n = 100_000 if args.quick else 400_000
    repeat = 1 if args.quick else 5
    cores = [core for core in ("c", "python") if core == "python" or native.compiled is not None]
    if native.compiled is None:
        print("the compiled core is not built (pip install -e . with a C compiler): the Python model only")

    print(
        f"trace-driven, {n} accesses each, best of {repeat} alternating runs "
        "(M accesses/s; x = sectormon / pycachesim in the same run)"
    )
    print(
        f"{'trace':<18} {'pycachesim':>10}  "
        + "  ".join(f"{c + ' core: per access / grouped / full':>46}" for c in cores)
    )
    for name, addresses in _traces(n).items():
        per = _records(addresses, grouped=False)
        grouped = _records(addresses, grouped=True)
        runs: list[Callable[[], float]] = [partial(_pycachesim, addresses)]
        for core in cores:
            runs += [
                partial(_ours, per, False, core),
                partial(_ours, grouped, False, core),
                partial(_ours, grouped, True, core),
            ]
        times = _best_alternating(runs, repeat)
        cells = [
            " / ".join(f"{n / t / 1e6:.2f} ({times[0] / t:.2f}x)" for t in times[1 + 3 * k : 4 + 3 * k])
            for k in range(len(cores))
        ]
        print(f"{name:<18} {n / times[0] / 1e6:>10.2f}  " + "  ".join(f"{cell:>46}" for cell in cells))

    print()
    print("built-in kernels, one thread, full model (M simulated accesses/s)")
    kernels = [
        ("scenario-a", {"passes": "100" if args.quick else "400"}, True),
        ("scenario-a", {"passes": "100" if args.quick else "400"}, False),
        ("scenario-b", {"n": "128", "tile_i": "32", "tile_j": "128"}, True),
        ("random", {"accesses": "100000" if args.quick else "300000"}, True),
    ]
    print(f"{'kernel':<28} {'accesses':>10}  " + "  ".join(f"{core + ' core':>10}" for core in cores))
    for name, sizes, prefetch in kernels:
        rates = []
        for core in cores:
            acc, seconds = min(
                (_kernel(name, sizes, prefetch, core) for _ in range(repeat)), key=lambda r: r[1]
            )
            rates.append(acc / seconds / 1e6)
        label = f"{name}{'' if prefetch else ' --no-prefetch'}"
        print(f"{label:<28} {acc:>10}  " + "  ".join(f"{rate:>10.2f}" for rate in rates))

    accesses = 20_000 if args.quick else 100_000
    print()
    print(f"sim --summary of a {accesses}-access trace over N --objects (s, and ms per 1,000 objects)")
    print(f"{'objects':>8}  " + "  ".join(f"{core + ' core':>20}" for core in cores))
    with tempfile.TemporaryDirectory() as folder:
        for count in (256, 1024, 4096):
            seconds = [
                min(_objects(count, accesses, core, folder) for _ in range(min(repeat, 3))) for core in cores
            ]
            print(f"{count:>8}  " + "  ".join(f"{t:>8.2f} ({t / count * 1e6:>6.0f} ms)" for t in seconds))

    print()
    print(f"sim --summary -- ./prog (traced and simulated, full model) vs cachegrind, best of {repeat}")
    _real_program(repeat)

    print()
    _advise_example(1 if args.quick else 3)


if __name__ == "__main__":
    main()
