"""The sector advisor (``sectormon sim --advise``): which data object gets its own sector, with how many ways.

1. **Objects.** Per data object (kernel array, ``--objects`` of a trace, a traced program's
   variables): its accesses, distinct 256-byte lines and reuse (line touches per distinct line)
   from one pass over the workload's streams, and its L1D demand refills and memory reads with the
   sector cache off. The objects with at least :data:`PLACE_SHARE` of the accesses are placed; the
   others stay untagged in sector 0, where Fujitsu's runtime keeps every variable no directive names.
2. **Search.** Assignments of the objects to sector ids, up to relabelings that change nothing
   (ids 0/2 share L2 sector 0 of a set, 1/3 share L2 sector 1), each with every way split: the 4
   L1D ways of a core among the sectors used (0 ways: the sector bypasses L1D), and the usable L2
   ways of a CMG between the set's two sectors (the same split in SET0 and SET1), or the L2 not
   partitioned. Exhaustive when the space fits the budget; else pruned (said in the output): first
   every L1D split with the L2 not partitioned and every L2 split with the L1D not partitioned, then
   the best L1D splits crossed with the best L2 splits of the best assignments. A time limit
   (``--time-limit``, a default for a traced program) stops it starting simulations that would not
   end in time; the output says how many of how many ran.
3. **Prediction.** Each candidate is simulated exactly as ``sectormon sim --summary`` with its
   options (printed with it) simulates it, and ranked by the change of one metric against the
   sector cache off (default IPC); the table shows the changes of the demand refill ratio, the
   stall rates, IPC and energy per instruction.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any, TypeVar

from sectormon.errors import UsageError
from sectormon.sim import native
from sectormon.sim.config import L1_WAYS
from sectormon.sim.directives import fujitsu, registers
from sectormon.sim.stream import FL_SPECIAL, OBJECT_SHIFT, RegionMark, ThreadSpec

# Metric -> which direction is better (a64fx profile). The first is the default ranking.
METRICS: dict[str, str] = {
    "IPC": "higher",
    "total_ld_stall_rate": "lower",
    "mem_stall_rate": "lower",
    "l2_stall_rate": "lower",
    "L1D_demand_refill_ratio": "lower",
    "energy_per_inst": "lower",
}
DEFAULT_BUDGET = 120
# Without --budget, a search spends at most about this many simulated accesses (each candidate
# runs the whole workload), so a built-in kernel's advice stays within a minute on a loaded 2-core
# machine (the advisor in docs/perf-tuning.md, "Fourteenth pass"). Derived from the workload's accesses,
# never from a clock, so the same command always makes the same search.
ACCESS_BUDGET = 1_000_000_000
MIN_BUDGET = 10
# A traced program's search without --time-limit stops starting simulations after this many wall
# seconds: its run time is the program's, not one the access budget above was sized for, and the
# worked example (examples/) then finishes, its trace included, within a minute here.
PROGRAM_TIME_LIMIT = 50.0
DEFAULT_TOP = 10
T = TypeVar("T")
PRUNE_KEEP = 3  # stage 2 of a pruned search: assignments, L1D splits and L2 splits kept from stage 1
# The most objects the search places: their assignments are enumerated (4**objects of them before
# the relabelings are folded), 65,536 at 8.
MAX_OBJECTS = 8
# An object with fewer of the workload's accesses than this share is not placed (it stays in sector
# 0): a traced program's startup variables (``completed.0``, ``_DYNAMIC``) would otherwise multiply
# the assignments by 4 each for nothing a cache can show.
PLACE_SHARE = 0.01
# ``progress(runs, planned, seconds_left)``: how many simulations ran, of how many the search plans,
# and the wall seconds left of the time limit (None: no limit).
Progress = Callable[[int, int, float | None], None]


# ----------------------------------------------------------------------------- the search space
@dataclass(frozen=True, slots=True)
class Candidate:
    """Sector id per object, L1D maxima of sectors 0-3, L2 maxima of sectors 0/1 of each set."""

    assignment: tuple[int, ...]
    l1: tuple[int, int, int, int]
    l2: tuple[int, int]

    def options(self, names: Sequence[str]) -> list[str]:
        """The ``sectormon sim`` options that configure it."""
        assign = ",".join(f"{n}={s}" for n, s in zip(names, self.assignment, strict=True))
        return [
            "--sector-cache",
            "on",
            "--assign",
            assign,
            "--l1-sectors",
            ",".join(map(str, self.l1)),
            "--l2-sectors",
            ",".join(map(str, (*self.l2, *self.l2))),
        ]


# Relabelings of the sector ids that keep the L2 pairing (0/2 and 1/3 share an L2 sector): swap
# within a pair, swap the pairs. They change no cache behaviour.
_SYMMETRIES = tuple(
    perm
    for perm in (
        (0, 1, 2, 3),
        (2, 1, 0, 3),
        (0, 3, 2, 1),
        (2, 3, 0, 1),
        (1, 0, 3, 2),
        (3, 0, 1, 2),
        (1, 2, 3, 0),
        (3, 2, 1, 0),
    )
)


def assignments(objects: int) -> list[tuple[int, ...]]:
    """Assignments of ``objects`` objects to sector ids, one per class of equivalent ones, with at
    least two groups; two groups always on different L2 sectors (the same L2 sector is the
    not-partitioned L2 option of those)."""
    seen: set[tuple[int, ...]] = set()
    out = []
    for raw in product(range(4), repeat=objects):
        canon = min(tuple(perm[s] for s in raw) for perm in _SYMMETRIES)
        if canon in seen:
            continue
        seen.add(canon)
        used = set(canon)
        if len(used) < 2 or (len(used) == 2 and len({s & 1 for s in used}) == 1):
            continue
        out.append(canon)
    return out


def l1_splits(used: Iterable[int]) -> list[tuple[int, int, int, int]]:
    """The 4 L1D ways shared among the sector ids used (each 0-4, summing to 4); others 0."""
    ids = sorted(set(used))
    out = []
    for ways in product(range(L1_WAYS + 1), repeat=len(ids)):
        if sum(ways) == L1_WAYS:
            maxima = [0, 0, 0, 0]
            for sid, w in zip(ids, ways, strict=True):
                maxima[sid] = w
            out.append((maxima[0], maxima[1], maxima[2], maxima[3]))
    return out


def l2_splits(l2_ways: int) -> list[tuple[int, int]]:
    """The usable L2 ways between a set's sectors 0 and 1, then the L2 not partitioned (both all)."""
    return [(w, l2_ways - w) for w in range(l2_ways + 1)] + [(l2_ways, l2_ways)]


def present(assignment: tuple[int, ...], reuse: Sequence[float]) -> tuple[int, ...]:
    """Two groups read as the Fujitsu directives do: sector 1 holds the object with the highest
    reuse (``scache_isolate_assign``), sector 0 the rest."""
    if len(set(assignment)) != 2:
        return assignment
    best = max(range(len(assignment)), key=lambda i: reuse[i])
    if assignment[best] == 1:
        return assignment
    return tuple({0: 1, 1: 0}[s] for s in assignment)


# ----------------------------------------------------------------------------- object profile
@dataclass(frozen=True, slots=True)
class ObjectProfile:
    name: str
    accesses: int
    lines: int
    touches: int

    @property
    def reuse(self) -> float:
        """Line touches per distinct line: 1 for a stream read once, N for data read N times."""
        return self.touches / self.lines if self.lines else 0.0


def profile_objects(specs: Sequence[ThreadSpec]) -> list[ObjectProfile]:
    """One pass over every thread's stream: accesses, distinct lines and line touches per object.
    A touch is an access to a line other than the object's previous one in the thread: a program's
    records of one line are split by the other objects' accesses between them (a stream element,
    then a table read, then the next element), which are not reuse of the streamed line."""
    names = specs[0].objects
    accesses = [0] * len(names)
    touches = [0] * len(names)
    lines: list[set[tuple[int, int]]] = [set() for _ in names]
    for spec in specs:
        last = [-1] * len(names)
        for chunk in spec.stream():
            if isinstance(chunk, RegionMark):  # a traced program's marker call: no access
                continue
            for line, n, fl in chunk:
                if fl & FL_SPECIAL:
                    continue
                obj = fl >> OBJECT_SHIFT
                accesses[obj] += n
                if line != last[obj]:
                    last[obj] = line
                    touches[obj] += 1
                    lines[obj].add((spec.tid, line))
    return [ObjectProfile(names[i], accesses[i], len(lines[i]), touches[i]) for i in range(len(names))]


# ----------------------------------------------------------------------------- evaluation
class TimeLimit:
    """The wall time a search may take, from its start: another simulation starts only while the
    time left is at least the longest simulation so far, so the search ends within the limit
    unless one run is slower than every earlier one (the baseline always runs: without it nothing
    can be ranked). ``seconds`` None: no limit."""

    def __init__(self, seconds: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self.started = clock()
        self.longest = 0.0

    def left(self) -> float | None:
        """Wall seconds left (negative once past the limit); None without a limit."""
        return None if self.seconds is None else self.seconds - (self.clock() - self.started)

    def allows_another(self) -> bool:
        left = self.left()
        return left is None or left >= self.longest

    def timed(self, run: Callable[[], T]) -> T:
        """``run()``, its duration kept for the estimate of the next one."""
        began = self.clock()
        out = run()
        self.longest = max(self.longest, self.clock() - began)
        return out


@dataclass(frozen=True, slots=True)
class Outcome:
    candidate: Candidate | None  # None: the baseline, sector cache off
    metrics: Mapping[str, float | None]
    objects: Mapping[str, Mapping[str, int]]


Evaluate = Callable[[list[str]], dict[str, Any]]


def score(outcome: Outcome, baseline: Outcome, metric: str) -> float | None:
    """The change of ``metric`` against the baseline, positive = better."""
    new = outcome.metrics.get(metric)
    old = baseline.metrics.get(metric)
    if new is None or old is None:
        return None
    return new - old if METRICS[metric] == "higher" else old - new


def _key(metric: str, baseline: Outcome) -> Callable[[Outcome], tuple[float, float, str]]:
    def key(o: Outcome) -> tuple[float, float, str]:
        main = score(o, baseline, metric)
        energy = score(o, baseline, "energy_per_inst")
        return (
            -(main if main is not None else float("-inf")),
            -(energy if energy is not None else float("-inf")),
            repr(o.candidate),
        )

    return key


@dataclass(frozen=True, slots=True)
class Search:
    baseline: Outcome
    ranked: list[Outcome]
    space: int
    pruned: bool
    how: str
    planned: int  # the simulations the budget allowed, the baseline aside
    cut_short: bool  # the time limit stopped it before ``planned``


def spread(items: Sequence[T]) -> list[T]:
    """``items`` from the middle out, coarse to fine (midpoints of ever smaller halves), so the
    first few taken cover the range: a search cut short by the budget still sees both ends of a
    way split and its middle, not one end only."""
    out: list[T] = []
    spans = [(0, len(items))]
    while spans:
        halves = []
        for lo, hi in spans:
            if lo >= hi:
                continue
            mid = (lo + hi) // 2
            out.append(items[mid])
            halves += [(lo, mid), (mid + 1, hi)]
        spans = halves
    return out


def round_robin(lists: Sequence[Sequence[T]]) -> list[T]:
    """The first of every list, then the second of every list, ...: a budget cut short still
    spreads its runs over every list (assignment) instead of spending them on the first."""
    out: list[T] = []
    for i in range(max((len(x) for x in lists), default=0)):
        out += [x[i] for x in lists if i < len(x)]
    return out


def search(
    n_objects: int,
    reuse: Sequence[float],
    l2_ways: int,
    simulate: Callable[[Candidate | None], Outcome],
    metric: str,
    budget: int,
    progress: Progress | None = None,
    limit: TimeLimit | None = None,
) -> Search:
    """Simulate the baseline and the candidates: all of them when they fit the budget (middle
    splits first, so a search the time limit cuts short has seen the range), else at most
    ``budget`` in stages (the baseline is not counted):

    1. the L1D splits of every assignment with the L2 not partitioned, middle splits first and
       spread over the assignments, until two thirds of the budget are used;
    2. the L2 splits (not partitioned first, then from the middle out) of the best
       :data:`PRUNE_KEEP` assignments, each with its best L1D split of stage 1;
    3. the best L1D splits crossed with the best L2 splits of those assignments;
    4. while the budget lasts, the other configurations, best assignments first.

    ``progress(runs, planned, seconds_left)`` is called after every simulation, the baseline's
    included. ``limit``: no simulation starts once :meth:`TimeLimit.allows_another` says no.
    """
    if n_objects > MAX_OBJECTS:
        raise UsageError(
            f"--advise places at most {MAX_OBJECTS} data objects (4 sector ids each: the assignments "
            f"grow as 4**objects); the workload accesses {n_objects}: merge the small ones in --objects"
        )
    groups = [present(a, reuse) for a in assignments(n_objects)]
    if not groups:
        raise UsageError(
            f"--advise needs at least two data objects with {PLACE_SHARE * 100:g} % or more of the accesses "
            "each to put in different sectors (a trace names them with --objects FILE; a program's "
            "are its global variables, or --objects FILE)"
        )
    full = [Candidate(a, l1, l2) for a in groups for l1 in l1_splits(a) for l2 in l2_splits(l2_ways)]
    planned = min(budget, len(full))
    clock = limit if limit is not None else TimeLimit(None)
    runs = 0
    cut_short = False

    def run(c: Candidate | None) -> Outcome:
        nonlocal runs
        outcome = clock.timed(lambda: simulate(c))
        runs += 1
        if progress is not None:
            progress(runs, planned + 1, clock.left())
        return outcome

    baseline = run(None)
    key = _key(metric, baseline)
    done: dict[Candidate, Outcome] = {}

    def stage(candidates: Iterable[Candidate], most: int) -> int:
        """Simulate the candidates not yet done, up to ``most`` runs in all and while the time
        limit allows; how many ran."""
        nonlocal cut_short
        before = len(done)
        for c in candidates:
            if len(done) >= most or cut_short:
                break
            if c in done:
                continue
            if not clock.allows_another():
                cut_short = True
                break
            done[c] = run(c)
        return len(done) - before

    def cut(how: str) -> str:
        if not cut_short:
            return how
        return (
            f"cut short by the time limit ({clock.seconds:g} s) after {len(done)} of the {planned} "
            f"simulations planned; {how}"
        )

    if len(full) <= budget:
        stage(spread(full), budget)
        ranked = sorted(done.values(), key=key)
        how = f"exhaustive: all {len(full)} configurations"
        if cut_short:
            how = cut(f"an exhaustive search, middle splits first, of {len(full)} configurations")
        return Search(baseline, ranked, len(full), False, how, planned, cut_short)

    flat_l2 = (l2_ways, l2_ways)
    splits2 = l2_splits(l2_ways)
    l2_order = [splits2[-1], *spread(splits2[:-1])]  # not partitioned first
    stage1 = round_robin([[Candidate(a, l1, flat_l2) for l1 in spread(l1_splits(a))] for a in groups])
    ran1 = stage(stage1, budget - budget // 3)

    def best_of(outcomes: Iterable[Outcome]) -> list[Candidate]:
        return [o.candidate for o in sorted(outcomes, key=key) if o.candidate is not None]

    kept: dict[tuple[int, ...], tuple[int, int, int, int]] = {}  # assignment -> its best L1D split
    for c in best_of(done.values()):
        if c.assignment not in kept and len(kept) < PRUNE_KEEP:
            kept[c.assignment] = c.l1
    ran2 = stage(round_robin([[Candidate(a, l1, l2) for l2 in l2_order] for a, l1 in kept.items()]), budget)
    crossed = []
    for a in kept:
        mine = best_of(o for c, o in done.items() if c.assignment == a)
        l1s = list(dict.fromkeys(c.l1 for c in mine))[:PRUNE_KEEP]
        l2s = list(dict.fromkeys(c.l2 for c in mine))[:PRUNE_KEEP]
        crossed.append([Candidate(a, l1, l2) for l1, l2 in product(l1s, l2s)])
    ran3 = stage(round_robin(crossed), budget)
    by_best = list(dict.fromkeys([*(c.assignment for c in best_of(done.values())), *groups]))
    ran4 = stage(round_robin([[c for c in full if c.assignment == a] for a in by_best]), budget)
    how = (
        f"pruned: {len(done)} of {len(full)} configurations simulated (budget {budget}): {ran1} L1D "
        f"splits with the L2 not partitioned over {len(groups)} assignment(s), then {ran2} L2 splits "
        f"of the best {len(kept)} with their best L1D split, then {ran3} of their best "
        f"{PRUNE_KEEP} L1D x {PRUNE_KEEP} L2 splits combined"
        + (f", then {ran4} more, best assignments first" if ran4 else "")
    )
    return Search(baseline, sorted(done.values(), key=key), len(full), True, cut(how), planned, cut_short)


# ----------------------------------------------------------------------------- the advice
def advise(
    threads: Sequence[ThreadSpec],
    summarize: Callable[[Candidate | None, Sequence[str]], dict[str, Any]],
    *,
    l2_ways: int,
    rank_by: str,
    budget: int | None,
    time_limit: float | None = None,
    progress: Progress | None = None,
    command: Sequence[str] = (),
    caveats: Sequence[str] = (),
    region: str | None = None,
) -> dict[str, Any]:
    """Run the advisor for the workload of ``threads``. ``summarize(candidate, names)`` is exactly
    what ``sectormon sim --summary`` prints for the workload in that configuration (``None``: the
    sector cache off); ``names`` are the objects the candidate's assignment places, in order.
    ``budget`` ``None``: :func:`default_budget` of the workload's accesses. ``time_limit``: wall
    seconds for everything from here (:class:`TimeLimit`). ``command``: the traced program's
    command line, which the rows' options go with; ``caveats``: what the capture missed (SVE
    accesses QEMU did not report), said with the advice as well as on stderr. ``region``: the
    marked region ``summarize`` reports (``--region``), which every row's options carry; the object
    profile that picks the objects to place covers the whole run."""
    limit = TimeLimit(time_limit)
    started = time.perf_counter()
    cpu = time.process_time()
    objects = profile_objects(threads)
    total = sum(o.accesses for o in objects)
    # An object the workload never accesses (a trace's [other] when the file maps every address)
    # has nothing to place, nor one with a sliver of the accesses: they stay in sector 0.
    active = [o for o in objects if o.accesses and o.accesses >= PLACE_SHARE * total]
    names = tuple(o.name for o in active)
    if budget is None:
        budget = default_budget(total)

    def run(c: Candidate | None) -> Outcome:
        summary = summarize(c, names)
        return Outcome(c, {m: summary["metrics"].get(m) for m in METRICS}, summary["objects"])

    found = search(len(names), [o.reuse for o in active], l2_ways, run, rank_by, budget, progress, limit)
    base = found.baseline
    rows = []
    for rank, o in enumerate(found.ranked, 1):
        assert o.candidate is not None
        c = o.candidate
        rows.append(
            {
                "rank": rank,
                "assignment": dict(zip(names, c.assignment, strict=True)),
                "l1_max_ways": list(c.l1),
                "l2_max_ways": list(c.l2),
                "options": [*c.options(names), *(("--region", region) if region is not None else ())],
                "metrics": dict(o.metrics),
                "change": {m: _change(o.metrics.get(m), base.metrics.get(m)) for m in METRICS},
                "objects": {n: dict(v) for n, v in o.objects.items()},
                "registers": registers(c),
                "fujitsu": fujitsu(c, names, l2_ways),
            }
        )
    return {
        "schema": "sectormon/advice/1",
        "simulated": True,
        "rank_by": rank_by,
        "better": METRICS[rank_by],
        "search": {
            "configurations": found.space,
            "simulated": len(found.ranked),
            "pruned": found.pruned,
            "how": found.how,
            "planned": found.planned,
            "cut_short": found.cut_short,
            "time_limit_s": time_limit,
            "l2_split": "the same in SET0 and SET1 (sectors 0/1 of a set; ids 0/2 and 1/3 share them)",
            "seconds": round(time.perf_counter() - started, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2),
            "core": native.choose(),
        },
        "objects": [
            {
                "name": o.name,
                "accesses": o.accesses,
                "lines": o.lines,
                "reuse": round(o.reuse, 2),
                "placed": o.name in names,
                **dict(base.objects.get(o.name, {})),
            }
            for o in objects
        ],
        **({"command": list(command)} if command else {}),
        **({"region": region} if region is not None else {}),
        **({"caveats": list(caveats)} if caveats else {}),
        "baseline": {
            "options": ["--sector-cache", "off", *(("--region", region) if region is not None else ())],
            "metrics": dict(base.metrics),
        },
        "rows": rows,
    }


def default_budget(accesses: int) -> int:
    """The simulations a search without ``--budget`` may run for a workload of ``accesses``
    accesses: :data:`DEFAULT_BUDGET`, fewer for a large workload (:data:`ACCESS_BUDGET`)."""
    return max(MIN_BUDGET, min(DEFAULT_BUDGET, ACCESS_BUDGET // max(1, accesses)))


def _change(new: float | None, old: float | None) -> dict[str, float | None]:
    if new is None or old is None:
        return {"delta": None, "percent": None}
    return {"delta": new - old, "percent": (new - old) / old * 100 if old else None}


# ----------------------------------------------------------------------------- text output
_COLUMNS = (
    ("L1D_demand_refill_ratio", "dm refill ratio"),
    ("total_ld_stall_rate", "ld stall rate"),
    ("mem_stall_rate", "mem stall rate"),
    ("l2_stall_rate", "L2 stall rate"),
    ("IPC", "IPC"),
    ("energy_per_inst", "nJ/inst"),
)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _delta(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def render(advice: Mapping[str, Any], top: int) -> str:
    """The advice as text: objects, the search, the baseline, then the ranked table, best first."""
    out = ["Sector advisor (simulated A64FX: a model, not a measurement)", ""]
    for caveat in advice.get("caveats", ()):
        out += [f"Caveat: {caveat}", ""]
    out.append("Data objects (sector cache off; refills and memory reads counted after the warm-up):")
    shown = [o for o in advice["objects"] if o["accesses"] or o["placed"]]
    width = max([16, *(len(o["name"]) for o in shown)])
    head = f"  {'object':<{width}} {'accesses':>10} {'lines':>8} {'reuse':>7}"
    out.append(head + f" {'L1D dm refills':>15} {'mem reads':>10}")
    for o in shown:
        out.append(
            f"  {o['name']:<{width}} {o['accesses']:>10} {o['lines']:>8} {o['reuse']:>7.1f} "
            f"{o.get('l1d_demand_refills', 'n/a'):>15} {o.get('memory_reads', 'n/a'):>10}"
            + (
                ""
                if o["placed"]
                else f"   not placed (under {PLACE_SHARE * 100:g} % of the accesses: sector 0)"
            )
        )
    if len(shown) < len(advice["objects"]):
        out.append(f"  ({len(advice['objects']) - len(shown)} more object(s) without accesses)")
    s = advice["search"]
    out += [
        "",
        f"Search: {s['how']}; {s['simulated']} simulations + the baseline in {s['seconds']} s "
        f"({s['cpu_seconds']} s CPU, {native.DESCRIPTIONS[s['core']]}).",
    ]
    rows = advice["rows"]
    ties = sum(1 for r in rows if rows and r["metrics"] == rows[0]["metrics"])
    if ties > 1:
        out.append(f"{ties} configurations predict the same numbers as the best (listed in search order).")
    out.append(f"L2 split: {s['l2_split']}.")
    out.append(
        f"Ranked by the change of {advice['rank_by']} ({advice['better']} is better) against sectors off."
    )
    base = advice["baseline"]["metrics"]
    out.append(
        "Baseline (--sector-cache off): " + ", ".join(f"{label} {_fmt(base.get(m))}" for m, label in _COLUMNS)
    )
    out.append("")
    head = f"{'#':>3}  " + "  ".join(f"{label:>15}" for _, label in _COLUMNS)
    out.append(head + "   (change against sectors off)")
    if not rows:
        out.append(
            f"No configuration was simulated within the time limit ({s['time_limit_s']:g} s): "
            "give a longer --time-limit"
        )
    program = f" -- {shlex.join(advice['command'])}" if "command" in advice else ""
    for row in rows[:top]:
        cells = "  ".join(f"{_delta(row['change'][m]['delta']):>15}" for m, _ in _COLUMNS)
        ipc = row["change"]["IPC"]["percent"]
        out.append(f"{row['rank']:>3}  {cells}   IPC {_fmt(ipc, 1)} %")
        out.append(f"     sectormon sim ... {shlex.join(row['options'])}{program}")
        f = row["fujitsu"]
        if f["expressible"]:
            out.append(f"     Fujitsu: {' '.join(f['environment'])}")
            for line in f["directives"]:
                out.append(f"              {line}")
            for line in f["fortran"]:
                out.append(f"              {line}  (Fortran)")
            if f["not_variables"]:
                out.append(
                    f"              and the variables holding {', '.join(f['not_variables'])} "
                    "(not variable names: name the array or the pointer that holds them)"
                )
        else:
            out.append(f"     Fujitsu: no directive form ({f['why']})")
        regs = ", ".join(f"{k}={v}" for k, v in row["registers"].items())
        out.append(f"     registers: {regs}")
    if len(advice["rows"]) > top:
        out.append(f"... {len(advice['rows']) - top} more (--top N, or --json for all)")
    return "\n".join(out)
