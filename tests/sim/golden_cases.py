"""Model runs whose every counter (and final cache contents) is pinned in ``golden/model.json``.

The simulator's speed work must not change a single simulated number; these cases cover every path of
the model (hits, misses through both levels, the prefetcher and its refill-buffer meetings, sectors on,
off, bypassing and changed mid-run, write-backs, loop exits, ifetches, several threads sharing an L2).
``python -m tests.sim.golden_cases --write`` regenerates the file; only do that for a deliberate
change of the model, and say so in the commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sectormon.sim.config import ModelConfig, Prefetch, SectorConfig
from sectormon.sim.engine import Machine
from sectormon.sim.kernels import make_kernel
from sectormon.sim.stream import FL_EXIT, FL_IFETCH, FLAG_SLOTS, Record, ThreadSpec, flags
from sectormon.sim.thread import SimThread
from sectormon.sim.workload import kernel_workload

GOLDEN = Path(__file__).resolve().parent / "golden" / "model.json"
LINE = 256

THREAD_COUNTERS = (
    "cyc",
    "acc",
    "passes",
    "l1_refill_dm",
    "l1_refill_pf",
    "l1_wb",
    "l1_miss_wait",
    "l2_other",
    "l2_refill_dm",
    "l2_refill_pf",
    "l2_wb",
    "swap_dm",
    "mibmch_prf",
    "wait_l1",
    "wait_l2",
    "fe_stall",
    "exits",
    "ifetch",
)


def _traces(n: int) -> dict[str, list[Record]]:
    """The benchmark's trace kinds (smaller), plus writes, sector ids, loop exits and ifetches."""
    rng = random.Random(7)
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
    kinds = {
        "sequential": [(i * 8) % (64 << 20) for i in range(n)],
        "hot": [rng.randrange(48 << 10) for _ in range(n)],
        "mixed": mixed[:n],
        "random": [rng.randrange(64 << 20) for _ in range(n)],
    }
    out = {name: _grouped(addresses, lambda a: 0) for name, addresses in kinds.items()}
    out["mixed-rw-sectors"] = _grouped(
        kinds["mixed"],
        lambda a: flags((a >> 12) & 3, (a >> 9) & 1 == 1, (a >> 14) & 1 == 0, (a >> 15) & 1 == 1),
    )
    specials = list(out["mixed-rw-sectors"])
    for i in range(0, len(specials), 97):
        specials.insert(i, (-1 - (i % 5 + 1), 0, FL_IFETCH) if i % 2 else (-2, 0, FL_EXIT))
    out["specials"] = specials
    return out


def _grouped(addresses: list[int], flag_of: Callable[[int], int]) -> list[Record]:
    out: list[Record] = []
    for a in addresses:
        line = a // LINE
        fl = flag_of(a)
        if out and out[-1][0] == line and out[-1][2] == fl:
            out[-1] = (line, out[-1][1] + 1, fl)
        else:
            out.append((line, 1, fl))
    return out


def _stream(records: list[Record]) -> Callable[[], Iterator[list[Record]]]:
    def make() -> Iterator[list[Record]]:
        for i in range(0, len(records), 1000):
            yield records[i : i + 1000]

    return make


def _configs() -> dict[str, ModelConfig]:
    off = SectorConfig(enabled=False)
    return {
        "full": ModelConfig(),
        "plain": ModelConfig(prefetch=Prefetch(enabled=False), sectors=off),
        "sectors-no-prefetch": ModelConfig(prefetch=Prefetch(enabled=False)),
        "prefetch-no-sectors": ModelConfig(sectors=off),
        "bypass": ModelConfig(sectors=SectorConfig(l1=(2, 0, 2, 0), l2=(10, 0, 0, 7)), l2_ways=12),
        "overcommitted": ModelConfig(sectors=SectorConfig(l1=(3, 3, 3, 3), l2=(14, 14, 3, 3))),
    }


def cache_digest(thread: SimThread) -> str:
    """The final L1D and L2 contents: per set, lines in LRU order with their packed state."""
    h = hashlib.sha256()
    for cache in (thread.l1, thread.cmg.l2):
        tags = cache.tags
        for s in cache.sets:
            h.update(repr([(line, tags[line]) for line in s]).encode())
        counts = [n for per_set in cache.counts for n in per_set] if cache.enabled else None
        h.update(repr(counts).encode())
    h.update(repr(list(thread.recent)).encode())
    return h.hexdigest()


def machine_state(machine: Machine) -> dict[str, Any]:
    threads = {}
    for t in machine.threads:
        row: dict[str, Any] = {name: getattr(t, name) for name in THREAD_COUNTERS}
        folded = [0] * FLAG_SLOTS  # per access flags, whatever the data object
        for fl, c in enumerate(t.fcount):
            folded[fl % FLAG_SLOTS] += c
        row["fcount"] = {str(fl): c for fl, c in enumerate(folded) if c}
        row["cache"] = cache_digest(t)
        threads[str(t.tid)] = row
    cmgs = {
        str(c.ident): {
            "l2_miss_count": c.l2_miss_count(),
            "l2_refills": c.l2_refills(),
            "l2_accesses": c.l2_accesses(),
            "mem_writes": c.mem_writes(),
            "tick": c.tick,
        }
        for c in machine.cmgs.values()
    }
    return {"tick": machine.tick, "threads": threads, "cmgs": cmgs}


def _trace_cases() -> dict[str, Callable[[], Machine]]:
    cases: dict[str, Callable[[], Machine]] = {}
    traces = _traces(20_000)
    for cname, config in _configs().items():
        for tname, records in traces.items():

            def build(config: ModelConfig = config, records: list[Record] = records) -> Machine:
                machine = Machine(config, [ThreadSpec(0, 0, _stream(records))])
                machine.run_to_completion()
                return machine

            cases[f"trace/{tname}/{cname}"] = build

    def shared_l2() -> Machine:
        # Three threads on one CMG (one L2), one on another; sectors switched off and on mid-run.
        config = ModelConfig(sectors=SectorConfig(l2_sets=(0, 1)))
        specs = [
            ThreadSpec(0, 0, _stream(traces["mixed-rw-sectors"])),
            ThreadSpec(1, 1, _stream(traces["random"]), 1.5, 3.0),
            ThreadSpec(2, 2, _stream(traces["specials"])),
            ThreadSpec(3, 12, _stream(traces["sequential"])),
        ]
        machine = Machine(config, specs)
        machine.run_until(20_000)
        machine.request_sectors(SectorConfig(enabled=False))
        machine.run_until(60_000)
        machine.request_sectors(SectorConfig(l1=(1, 3, 0, 0), l2=(2, 12, 7, 7), l2_sets=(0, 1)))
        machine.run_to_completion()
        return machine

    def meetings() -> Machine:
        # One core demand-misses every third line that the other core's prefetcher streams through:
        # prefetches meet in-flight demand refills and demands meet in-flight prefetch refills.
        strided = [(1000 + i, 1, 0) for i in range(0, 20_000, 3)]
        streamed = [(1000 + i, 4, 0) for i in range(20_000)]
        machine = Machine(
            ModelConfig(), [ThreadSpec(0, 0, _stream(strided)), ThreadSpec(1, 1, _stream(streamed))]
        )
        machine.run_to_completion()
        return machine

    cases["trace/shared-l2/changing-sectors"] = shared_l2
    cases["trace/shared-l2/refill-buffer-meetings"] = meetings
    return cases


def _kernel_cases() -> dict[str, Callable[[], Machine]]:
    runs: dict[str, tuple[str, dict[str, str], dict[str, str], int, ModelConfig]] = {
        "scenario-a/on": ("scenario-a", {"passes": "40"}, {}, 2, ModelConfig()),
        "scenario-a/off": ("scenario-a", {"passes": "40"}, {}, 2, ModelConfig(sectors=SectorConfig(False))),
        "scenario-a/no-prefetch": (
            "scenario-a",
            {"passes": "40"},
            {},
            1,
            ModelConfig(prefetch=Prefetch(enabled=False)),
        ),
        "scenario-a/l2": (
            "scenario-a",
            {"reused": "4M", "passes": "2"},
            {},
            1,
            ModelConfig(sectors=SectorConfig(l1=(3, 1, 0, 0), l2=(12, 2, 7, 7))),
        ),
        "scenario-a/swapped": (
            "scenario-a",
            {"passes": "20"},
            {"reused": "1", "stream": "0"},
            1,
            ModelConfig(),
        ),
        "scenario-b/on": (
            "scenario-b",
            {"n": "128", "tile_j": "128"},
            {},
            2,
            ModelConfig(sectors=SectorConfig(l1=(1, 1, 2, 0))),
        ),
        "scenario-b/off": (
            "scenario-b",
            {"n": "128", "tile_j": "128"},
            {},
            1,
            ModelConfig(sectors=SectorConfig(False)),
        ),
        "random/on": (
            "random",
            {"accesses": "20000", "table": "8M"},
            {},
            5,
            ModelConfig(sectors=SectorConfig(l1=(4, 0, 0, 0), l2=(14, 0, 7, 7))),
        ),
    }
    cases: dict[str, Callable[[], Machine]] = {}
    for name, (kernel, sizes, assign, threads, config) in runs.items():

        def build(
            kernel: str = kernel,
            sizes: dict[str, str] = sizes,
            assign: dict[str, str] = assign,
            threads: int = threads,
            config: ModelConfig = config,
        ) -> Machine:
            spec = make_kernel(kernel, sizes, assign)
            workload = kernel_workload(spec, threads, True, config.prefetch.enabled)
            machine = Machine(config, list(workload.specs))
            machine.run_to_completion()
            return machine

        cases[f"kernel/{name}"] = build
    return cases


def cases() -> dict[str, Callable[[], Machine]]:
    return {**_trace_cases(), **_kernel_cases()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"regenerate {GOLDEN}")
    args = parser.parse_args()
    states = {name: machine_state(build()) for name, build in cases().items()}
    if args.write:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(states, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(states)} cases to {GOLDEN}")
        return
    golden = json.loads(GOLDEN.read_text())
    bad = [name for name, state in states.items() if golden.get(name) != json.loads(json.dumps(state))]
    print("identical" if not bad else f"DIFFERENT: {', '.join(bad)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
