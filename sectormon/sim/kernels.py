"""Kernels that generate per-thread access streams for the simulator (PMU document section 5).

- ``scenario-a``: a reused array (a lookup table read in a fixed shuffled line order, like a gather)
  and a streamed array read once, interleaved line by line. Reused data in sector 0, the stream in
  sector 1. The default reused size (48 KiB) fits the 64 KiB L1D only if the stream cannot evict it:
  with ``--l1-sectors 3,1,0,0`` it stays in 3 ways and only the stream misses.
- ``scenario-b``: a tiled matrix product C += A x B, A/B/C in sectors 0/1/2. A C tile (16 rows x
  256 doubles = 32 KiB, 2 ways) is read-modified-written for every k while a column block of A
  (rows padded by one line) and a row segment of B stream past; with ``--l1-sectors 1,1,2,0`` the C
  tile stays, so fewer write-backs, fewer demand refills and fewer load stalls.
- ``random``: uniform random reads over a table (no locality; the worst case).

Accesses are SVE vectors (``vec`` bytes, default 64), so a 256-byte line takes 4 accesses in a row;
grouping them into one record is exact (see :mod:`sectormon.sim.stream`). Every thread has its own
arrays at its own addresses. Streams are generated in chunks, never materialised whole.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sectormon.errors import UsageError
from sectormon.sim.config import LINE_BYTES, LINE_SHIFT, format_size, parse_size
from sectormon.sim.stream import FL_EXIT, FL_WRITE, Chunks, Record, flags

KERNELS = ("scenario-a", "scenario-b", "random")

# Size-like parameters accept K/M/G suffixes; the others are plain counts.
_PARAMS: dict[str, dict[str, int]] = {
    "scenario-a": {"reused": 48 << 10, "passes": 200, "vec": 64, "shuffle": 1},
    "scenario-b": {"n": 256, "tile_i": 16, "tile_j": 256, "pad": 32, "vec": 64},
    "random": {"table": 32 << 20, "accesses": 1 << 19, "vec": 64},
}
# The largest value of each parameter. They bound the model's memory (scenario-a keeps its reused
# array's line order, about 100 bytes a line and thread; scenario-b a tile's C rows), keep every
# array inside its own 64 GiB (1 << 36) of the thread's address range, and keep the line numbers
# far inside the compiled core's int64. Sizes beyond them are not what the model is for: 16 MiB is
# twice a CMG's L2, 64 GiB a table no cache holds.
_MAXIMA: dict[str, dict[str, int]] = {
    "scenario-a": {"reused": 16 << 20, "passes": 1 << 20, "vec": LINE_BYTES, "shuffle": 1},
    "scenario-b": {"n": 4096, "tile_i": 1024, "tile_j": 4096, "pad": 4096, "vec": LINE_BYTES},
    "random": {"table": 64 << 30, "accesses": 1 << 32, "vec": LINE_BYTES},
}
_ARRAYS: dict[str, dict[str, int]] = {
    "scenario-a": {"reused": 0, "stream": 1},
    "scenario-b": {"A": 0, "B": 1, "C": 2},
    "random": {"table": 0},
}
# Default sector maxima per kernel: L1D sectors 0-3, L2 SET0 sectors 0/1 (see the module docstring).
_SECTORS: dict[str, tuple[tuple[int, int, int, int], tuple[int, int]]] = {
    "scenario-a": ((3, 1, 0, 0), (12, 2)),  # reused: 3 ways = 48 KiB; the stream passes through 1
    "scenario-b": ((1, 1, 2, 0), (12, 2)),  # C tile: 2 ways; A and B stream through 1 way each
    "random": ((4, 0, 0, 0), (14, 0)),
}
TRACE_SECTORS = ((2, 2, 0, 0), (7, 7))

# Instructions and issue cycles per memory access (the core's work between accesses).
_ISA: dict[str, tuple[float, float]] = {
    "scenario-a": (2.0, 1.0),  # load, FMA, loop overhead amortised
    "scenario-b": (2.0, 1.0),  # load A/B, load/store C, FMA
    "random": (3.0, 1.0),  # index arithmetic, gather, accumulate
}


# The source statement of each array's accesses: what a sampled access's "IP" names.
_STATEMENTS: dict[str, dict[str, str]] = {
    "scenario-a": {"reused": "s += reused[order[i]]", "stream": "s += stream[j]"},
    "scenario-b": {"A": "a = A[i][k]", "B": "C[i][j] += a * B[k][j]", "C": "C[i][j] += a * B[k][j]"},
    "random": {"table": "s += table[rand()]"},
}


def kernel_defaults(kernel: str) -> dict[str, int]:
    return dict(_PARAMS[kernel])


def kernel_maxima(kernel: str) -> dict[str, str]:
    """The largest value of each of the kernel's ``--size`` parameters, as ``--size`` spells it."""
    return {key: format_size(value) for key, value in _MAXIMA[kernel].items()}


def default_sectors(kernel: str) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    """(L1D maxima, L2 SET0 maxima) that make the kernel's sector assignment work."""
    return _SECTORS.get(kernel, TRACE_SECTORS)


def kernel_arrays(kernel: str) -> dict[str, int]:
    return dict(_ARRAYS[kernel])


@dataclass(frozen=True, slots=True)
class KernelSpec:
    """A kernel with its parameters and the sector of each array."""

    name: str
    params: Mapping[str, int]
    sectors: Mapping[str, int]
    seed: int = 1
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def objects(self) -> tuple[str, ...]:
        """The arrays, in the order of their object ids in the access flags."""
        return tuple(self.sectors)

    @property
    def inst_per_access(self) -> float:
        return _ISA[self.name][0]

    @property
    def cycles_per_access(self) -> float:
        return _ISA[self.name][1]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": dict(self.params),
            "array_sectors": dict(self.sectors),
            "inst_per_access": self.inst_per_access,
            "cycles_per_access": self.cycles_per_access,
            "seed": self.seed,
            **self.extra,
        }

    @property
    def statements(self) -> tuple[tuple[str, int], ...]:
        """Per array (in :attr:`objects` order): the statement that accesses it, and its number
        in the kernel (what a sample names as its IP and source line)."""
        texts = _STATEMENTS[self.name]
        numbers = {text: i + 1 for i, text in enumerate(dict.fromkeys(texts.values()))}
        return tuple((texts[name], numbers[texts[name]]) for name in self.objects)

    def stream_factory(self, thread: int, tag_override: bool, pfe: bool) -> Callable[[], Chunks]:
        """A callable making a fresh stream for ``thread`` (called again when the demo loops)."""
        fl = {a: flags(s, False, tag_override, pfe, obj) for obj, (a, s) in enumerate(self.sectors.items())}
        base = (thread + 1) << 40
        if self.name == "scenario-a":
            return lambda: _scenario_a(self.params, fl, base, self.seed + thread)
        if self.name == "scenario-b":
            return lambda: _scenario_b(self.params, fl, base)
        return lambda: _random(self.params, fl, base, self.seed + thread)


def make_kernel(
    name: str, sizes: Mapping[str, str] | None = None, assign: Mapping[str, str] | None = None, seed: int = 1
) -> KernelSpec:
    """Validate ``--size key=value`` and ``--assign array=sector`` against the kernel's names."""
    if name not in _PARAMS:
        raise UsageError(f"--kernel {name!r}: unknown kernel; choose one of {', '.join(KERNELS)}")
    params = kernel_defaults(name)
    for key, text in (sizes or {}).items():
        if key not in params:
            raise UsageError(f"--size {key}={text}: {name} has no parameter {key!r}; use {', '.join(params)}")
        params[key] = parse_size(text, f"--size {key}", _MAXIMA[name][key])
    sectors = kernel_arrays(name)
    for array, text in (assign or {}).items():
        if array not in sectors:
            raise UsageError(
                f"--assign {array}={text}: {name} has no array {array!r}; use {', '.join(sectors)}"
            )
        if text not in ("0", "1", "2", "3"):
            raise UsageError(f"--assign {array}={text}: a sector id is 0, 1, 2 or 3")
        sectors[array] = int(text)
    _check(name, params)
    return KernelSpec(name, params, sectors, seed)


def _check(name: str, p: Mapping[str, int]) -> None:
    vec = p["vec"]
    if vec < 1 or vec > LINE_BYTES or LINE_BYTES % vec:
        raise UsageError(f"--size vec={vec}: the access size must divide the 256-byte line (e.g. 8, 64, 256)")
    positive = [k for k, v in p.items() if v < 1 and k not in ("pad", "shuffle")]
    if positive:
        raise UsageError(f"--size {positive[0]}=0: must be at least 1")
    if name == "scenario-a" and p["reused"] < LINE_BYTES:
        raise UsageError("--size reused: the reused array needs at least one 256-byte line")
    if name == "scenario-b":
        if p["n"] % p["tile_j"] or p["n"] % p["tile_i"]:
            raise UsageError(
                f"--size: n={p['n']} must be a multiple of tile_i={p['tile_i']} and tile_j={p['tile_j']}"
            )
        if p["tile_j"] * 8 % LINE_BYTES or p["pad"] * 8 % LINE_BYTES:
            raise UsageError(
                "--size: tile_j and pad must be multiples of 32 elements (one 256-byte line of doubles)"
            )
    if name == "random" and p["table"] < LINE_BYTES:
        raise UsageError("--size table: the table needs at least one 256-byte line")


def _scenario_a(p: Mapping[str, int], fl: Mapping[str, int], base: int, seed: int) -> Chunks:
    per_line = LINE_BYTES // p["vec"]
    lines = p["reused"] >> LINE_SHIFT
    reused0 = base >> LINE_SHIFT
    stream0 = (base + (1 << 36)) >> LINE_SHIFT
    order = list(range(lines))
    if p["shuffle"]:
        random.Random(seed).shuffle(order)
    fa = fl["reused"]
    fb = fl["stream"]
    a_records = [(reused0 + i, per_line, fa) for i in order]
    exit_record = (-2, 0, FL_EXIT)  # one loop exit per pass
    b = stream0
    for _ in range(p["passes"]):
        chunk: list[Record] = []
        append = chunk.append
        for rec in a_records:
            append(rec)
            append((b, per_line, fb))
            b += 1
        append(exit_record)
        yield chunk


def _scenario_b(p: Mapping[str, int], fl: Mapping[str, int], base: int) -> Chunks:
    """for ii, jj tiles: for k: for i in ii-tile: a = A[i,k]; C[i, jj-tile] += a * B[k, jj-tile].

    The C tile stays in use for the whole k loop (read-modify-write every k); the A column block and
    the B row segment stream past it.
    """
    n = p["n"]
    ti = p["tile_i"]
    tj = p["tile_j"]
    ld = n  # leading dimension of B and C, in doubles
    lda = n + p["pad"]  # A's rows are padded so the column walk does not hit the same sets
    per_line = LINE_BYTES // p["vec"]
    a0 = base
    b0 = base + (1 << 36)
    c0 = base + (2 << 36)
    fa = fl["A"]
    fb = fl["B"]
    fc = fl["C"] | FL_WRITE
    j_lines = tj * 8 // LINE_BYTES
    exit_record = (-2, 0, FL_EXIT)
    rows = range(ti)
    for ii in range(0, n, ti):
        for jj in range(0, n, tj):
            # Row r of the C tile interleaved with the B row segment: B's records (even slots)
            # change with k, C's (odd slots) stay for the tile, so each k only fills the even
            # slots and copies the row (records are tuples: one object can stand in many places).
            c_tile = []
            for i in range(ii, ii + ti):
                c_line0 = (c0 + (i * ld + jj) * 8) >> LINE_SHIFT
                row: list[Record] = [exit_record] * (2 * j_lines)
                row[1::2] = [(c_line0 + j, 2 * per_line, fc) for j in range(j_lines)]
                c_tile.append(row)
            a_rows = [a0 + (i * lda) * 8 for i in range(ii, ii + ti)]
            chunk: list[Record] = []
            append = chunk.append
            extend = chunk.extend
            for k in range(n):
                b_line0 = (b0 + (k * ld + jj) * 8) >> LINE_SHIFT
                b_row = [(b_line0 + j, per_line, fb) for j in range(j_lines)]
                k8 = k * 8
                for r in rows:
                    append(((a_rows[r] + k8) >> LINE_SHIFT, 1, fa))
                    row = c_tile[r]
                    row[0::2] = b_row
                    extend(row)
                append(exit_record)
                if len(chunk) >= 4096:
                    yield chunk
                    chunk = []
                    append = chunk.append
                    extend = chunk.extend
            if chunk:
                yield chunk


def _random(p: Mapping[str, int], fl: Mapping[str, int], base: int, seed: int) -> Chunks:
    rng = random.Random(seed)
    lines = max(1, p["table"] >> LINE_SHIFT)
    line0 = base >> LINE_SHIFT
    f = fl["table"]
    left = p["accesses"]
    rand = rng.random
    while left > 0:
        size = min(left, 4096)
        left -= size
        yield [(line0 + int(rand() * lines), 1, f) for _ in range(size)]


def chunks_of(records: Iterator[Record], size: int = 4096) -> Chunks:
    """Group a record iterator into lists (the engine's unit of work)."""
    chunk: list[Record] = []
    for rec in records:
        chunk.append(rec)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
