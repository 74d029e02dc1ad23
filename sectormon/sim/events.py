"""Which A64FX events the model counts, by raw code, and how each is derived from the model's state.

Matched by code, never by name (names drift between sources). PE-scoped events read one thread's
counters; CMG-scoped events (0x308, 0x309, 0x370, 0x396, 0x3e0, 0x3e8) read the CMG's, whichever
unit opened them, as on the hardware. Any other code is "not modelled by the simulator".

Model notes (docs/sim.md has the full story):
- the L1D pipelines take accesses alternately, so pipe 0 gets the odd one of each count; VAL = COMP
  (the model has no pipeline replays); SCE/PFE/NOT_SEC0 count the tagged accesses the same way;
- LD_COMP_WAIT = _L1_MISS + _L2_MISS (L1D-hit latency is always hidden by the window);
  STALL_BACKEND = LD_COMP_WAIT; STALL_FRONTEND = loop-exit mispredict penalties;
- refill counts include the refill-buffer meetings (L2D_SWAP_DM, L2D_CACHE_MIBMCH_PRF), as the
  hardware does per errata 1.0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sectormon.sim.config import TICKS, Energy
from sectormon.sim.counters import Cmg, ThreadTotals
from sectormon.sim.stream import FL_PFE, FL_SCE

NOT_MODELLED = "not modelled by the simulator"


def _half(total: int, pipe: int) -> int:
    """Alternating pipes: pipe 0 takes the odd one out."""
    return (total + 1) // 2 if pipe == 0 else total // 2


def _ld_wait(t: ThreadTotals) -> int:
    return (t.wait_l1 + t.wait_l2) // TICKS


def ea_core(t: ThreadTotals, e: Energy) -> int:
    nj = (
        t.cycles() * e.core_per_cycle
        + t.inst() * e.core_per_inst
        + t.acc * e.core_per_l1d_access
        + (t.l1_refill_dm + t.l1_refill_pf) * e.core_per_l1d_refill
    )
    return int(nj / e.nj_ea_core)


def ea_l2(c: Cmg, e: Energy) -> int:
    nj = (
        (c.tick // TICKS) * e.l2_per_cycle
        + c.l2_accesses() * e.l2_per_access
        + c.l2_refills() * e.l2_per_refill
    )
    return int(nj / e.nj_ea_l2)


def ea_memory(c: Cmg, e: Energy) -> int:
    nj = (c.tick // TICKS) * e.memory_per_cycle + (c.l2_refills() + c.mem_writes()) * e.memory_per_line
    return int(nj / e.nj_ea_memory)


PeReader = Callable[[ThreadTotals, Energy], int]
CmgReader = Callable[[Cmg, Energy], int]


@dataclass(frozen=True, slots=True)
class SimEvent:
    code: int
    name: str
    model: str


PE_EVENTS: dict[int, tuple[SimEvent, PeReader]] = {}
CMG_EVENTS: dict[int, tuple[SimEvent, CmgReader]] = {}


def _pe(code: int, name: str, model: str, reader: PeReader) -> None:
    PE_EVENTS[code] = (SimEvent(code, name, model), reader)


def _cmg(code: int, name: str, model: str, reader: CmgReader) -> None:
    CMG_EVENTS[code] = (SimEvent(code, name, model), reader)


_pe(0x0011, "CPU_CYCLES", "the core's simulated clock", lambda t, e: t.cycles())
_pe(0x0008, "INST_RETIRED", "accesses x instructions per access (+ din ifetches)", lambda t, e: t.inst())
_pe(0x0004, "L1D_CACHE", "demand data accesses", lambda t, e: t.acc)
_pe(0x0003, "L1D_CACHE_REFILL", "demand + prefetch L1D refills", lambda t, e: t.l1_refill_dm + t.l1_refill_pf)
_pe(0x0200, "L1D_CACHE_REFILL_DM", "demand L1D refills", lambda t, e: t.l1_refill_dm)
_pe(0x0202, "L1D_CACHE_REFILL_HWPRF", "stream-prefetcher L1D refills", lambda t, e: t.l1_refill_pf)
_pe(
    0x0049,
    "L1D_CACHE_REFILL_PRF",
    "prefetch L1D refills (no software prefetch in the model)",
    lambda t, e: t.l1_refill_pf,
)
_pe(0x0015, "L1D_CACHE_WB", "dirty L1D victims written to L2", lambda t, e: t.l1_wb)
_pe(
    0x0208, "L1_MISS_WAIT", "sum over L1D refills of cycles outstanding", lambda t, e: t.l1_miss_wait // TICKS
)
_pe(0x0016, "L2D_CACHE", "L2 requests: refills, prefetches, write-backs", lambda t, e: t.l2_access())
_pe(
    0x0017,
    "L2D_CACHE_REFILL",
    "L2 refills incl. refill-buffer meetings (errata 1.0)",
    lambda t, e: t.l2_refill_dm + t.l2_refill_pf,
)
_pe(0x0300, "L2D_CACHE_REFILL_DM", "demand L2 refills incl. L2D_SWAP_DM", lambda t, e: t.l2_refill_dm)
_pe(
    0x0302,
    "L2D_CACHE_REFILL_HWPRF",
    "prefetch L2 refills incl. L2D_CACHE_MIBMCH_PRF",
    lambda t, e: t.l2_refill_pf,
)
_pe(
    0x0059,
    "L2D_CACHE_REFILL_PRF",
    "prefetch L2 refills incl. L2D_CACHE_MIBMCH_PRF",
    lambda t, e: t.l2_refill_pf,
)
_pe(
    0x0018,
    "L2D_CACHE_WB",
    "dirty L2 victims written to memory (by this core's requests)",
    lambda t, e: t.l2_wb,
)
_pe(0x0325, "L2D_SWAP_DM", "demand meets an in-flight prefetch refill", lambda t, e: t.swap_dm)
_pe(0x0326, "L2D_CACHE_MIBMCH_PRF", "prefetch meets an in-flight demand refill", lambda t, e: t.mibmch_prf)
_pe(
    0x0180,
    "LD_COMP_WAIT_L2_MISS",
    "stall cycles waiting for data from memory",
    lambda t, e: t.wait_l2 // TICKS,
)
_pe(0x0182, "LD_COMP_WAIT_L1_MISS", "stall cycles waiting for data from L2", lambda t, e: t.wait_l1 // TICKS)
_pe(0x0184, "LD_COMP_WAIT", "all load stall cycles (= _L1_MISS + _L2_MISS)", lambda t, e: _ld_wait(t))
_pe(0x0024, "STALL_BACKEND", "load stall cycles (the model's only backend stall)", lambda t, e: _ld_wait(t))
_pe(0x0023, "STALL_FRONTEND", "loop-exit mispredict penalties", lambda t, e: t.fe_stall // TICKS)
_pe(0x0240, "L1_PIPE0_VAL", "accesses on pipe 0 (alternating)", lambda t, e: _half(t.acc, 0))
_pe(0x0241, "L1_PIPE1_VAL", "accesses on pipe 1 (alternating)", lambda t, e: _half(t.acc, 1))
_pe(0x0260, "L1_PIPE0_COMP", "completed accesses on pipe 0 (= VAL)", lambda t, e: _half(t.acc, 0))
_pe(0x0261, "L1_PIPE1_COMP", "completed accesses on pipe 1 (= VAL)", lambda t, e: _half(t.acc, 1))
_pe(
    0x0250,
    "L1_PIPE0_VAL_IU_TAG_ADRS_SCE",
    "tagged accesses on pipe 0",
    lambda t, e: _half(t.flag_total(FL_SCE), 0),
)
_pe(
    0x0252,
    "L1_PIPE1_VAL_IU_TAG_ADRS_SCE",
    "tagged accesses on pipe 1",
    lambda t, e: _half(t.flag_total(FL_SCE), 1),
)
_pe(
    0x0251,
    "L1_PIPE0_VAL_IU_TAG_ADRS_PFE",
    "tagged accesses with prefetch enabled, pipe 0",
    lambda t, e: _half(t.flag_total(FL_PFE), 0),
)
_pe(
    0x0253,
    "L1_PIPE1_VAL_IU_TAG_ADRS_PFE",
    "tagged accesses with prefetch enabled, pipe 1",
    lambda t, e: _half(t.flag_total(FL_PFE), 1),
)
_pe(
    0x02A0,
    "L1_PIPE0_VAL_IU_NOT_SEC0",
    "accesses with sector id != 0, pipe 0",
    lambda t, e: _half(t.not_sec0(), 0),
)
_pe(
    0x02A1,
    "L1_PIPE1_VAL_IU_NOT_SEC0",
    "accesses with sector id != 0, pipe 1",
    lambda t, e: _half(t.not_sec0(), 1),
)
_pe(0x01E0, "EA_CORE", "core energy model / 8 nJ", ea_core)

_cmg(0x0308, "L2_MISS_WAIT", "sum over L2 misses of the memory latency", lambda c, e: c.l2_miss_wait())
_cmg(
    0x0309,
    "L2_MISS_COUNT",
    "L2 misses incl. refill-buffer meetings (errata 1.0)",
    lambda c, e: c.l2_miss_count(),
)
_cmg(
    0x0396,
    "L2D_CACHE_SWAP_LOCAL",
    "demand meets an in-flight prefetch refill (CMG)",
    lambda c, e: c.swap_local(),
)
_cmg(
    0x0370,
    "L2_PIPE_COMP_PF_L2MIB_MCH",
    "prefetch meets an in-flight demand refill (CMG)",
    lambda c, e: c.pf_mib_mch(),
)
_cmg(0x03E0, "EA_L2", "L2 energy model / 32 nJ", ea_l2)
_cmg(0x03E8, "EA_MEMORY", "memory energy model / 256 nJ", ea_memory)

MODELLED_CODES = frozenset(PE_EVENTS) | frozenset(CMG_EVENTS)


def is_modelled(code: int | None) -> bool:
    return code is not None and code in MODELLED_CODES


def read_pe(code: int, thread: ThreadTotals | None, energy: Energy) -> int:
    """A PE-scoped event on a core (0 on a core without a simulated thread)."""
    if thread is None:
        return 0
    return PE_EVENTS[code][1](thread, energy)


def read_cmg(code: int, cmg: Cmg, energy: Energy) -> int:
    return CMG_EVENTS[code][1](cmg, energy)


def catalog() -> list[dict[str, object]]:
    """Every modelled event (docs, ``describe()``)."""
    rows: list[dict[str, object]] = []
    for code, (ev, _) in sorted(PE_EVENTS.items()):
        rows.append({"code": f"0x{code:04x}", "name": ev.name, "scope": "pe", "model": ev.model})
    for code, (ev, _) in sorted(CMG_EVENTS.items()):
        rows.append({"code": f"0x{code:04x}", "name": ev.name, "scope": "cmg", "model": ev.model})
    return rows
