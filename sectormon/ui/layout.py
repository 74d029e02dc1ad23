"""Which metrics go in which panel: a small declarative table per profile, nothing hard-wired.

Each known profile lists, per panel, the metrics to show and their short column labels. Only the
metrics the session's profile really defines are kept, so a profile variant without (say) energy
events just loses those columns. An unknown profile falls back to "every metric of the profile"
in the core and CMG tables and hides the panels that need named metrics (sectors, stalls, energy).
``region_counts`` names events, not metrics: the counts the Regions view shows for each region
(kept when the profile defines the event; an unknown profile shows its first few).
"""

from __future__ import annotations

from dataclasses import dataclass

from sectormon.ui.header_info import ProfileView


@dataclass(frozen=True, slots=True)
class Column:
    """One metric column: the metric name and the short label in the column header."""

    metric: str
    label: str


@dataclass(frozen=True, slots=True)
class Panels:
    """The resolved layout for one session."""

    profile: str
    cmg_title: str
    cmg: tuple[Column, ...]
    core: tuple[Column, ...]
    sector: tuple[Column, ...]
    stall: tuple[Column, ...]
    energy: tuple[Column, ...]
    history: tuple[Column, ...]
    fallback: bool = False
    region_counts: tuple[str, ...] = ()
    """Events whose counts the Regions view shows beside the core table's metrics."""

    def panel(self, name: str) -> tuple[Column, ...]:
        return tuple(getattr(self, name))


LABELS: dict[str, str] = {
    # Column labels fit a 7-column cell where they can: the CMG table of the a64fx profile must fit
    # 80 columns. The help's legend spells out each label a layout shows (ui/legend.py).
    "IPC": "IPC",
    "L1D_miss_rate": "L1 miss",
    "L1D_demand_refill_ratio": "L1D dm",
    "L1D_WB_per_access": "L1D WB",
    "L2D_miss_rate": "L2 raw",
    "L2D_miss_rate_corrected": "L2 miss",
    "L2D_demand_refill_ratio": "L2 dm",
    "L2D_WB_per_access": "L2 WB",
    "L2_swap_dm_per_cycle": "SWAP/cyc",
    "avg_L1_miss_penalty": "L1 pen",
    "avg_L2_miss_penalty": "L2 pen",
    "mem_stall_rate": "mem st",
    "l2_stall_rate": "L2 st",
    "other_ld_stall_rate": "oth st",
    "total_ld_stall_rate": "ld st",
    "SCE_usage_ratio": "SCE",
    "non_sec0_ratio": "¬sec0",
    "energy_total": "energy",
    "energy_per_inst": "nJ/inst",
    "mem_energy_ratio": "mem E",
    "power_core_W": "core W",
    "power_L2_W": "L2 W",
    "power_memory_W": "mem W",
    "power_total_W": "total W",
    "L2_miss_count_corrected": "L2 misses",
    "cache_miss_rate": "cache miss",
    "branch_miss_rate": "br miss",
    "cpu_utilization": "cores",
    "page_fault_rate": "faults/s",
    "context_switch_rate": "ctxsw/s",
    "migration_rate": "migr/s",
    "major_fault_rate": "maj flt/s",
}

# Per profile: panel -> metric names, in display order. Edit here to change what a panel shows.
LAYOUTS: dict[str, dict[str, tuple[str, ...]]] = {
    "a64fx": {
        "cmg": (
            "L2D_miss_rate_corrected",
            "L2D_miss_rate",
            "L2D_demand_refill_ratio",
            "L2D_WB_per_access",
            "L2_swap_dm_per_cycle",
            "avg_L2_miss_penalty",
            "mem_stall_rate",
            "power_L2_W",
            "power_memory_W",
        ),
        "core": (
            "IPC",
            "L1D_miss_rate",
            "L1D_demand_refill_ratio",
            "SCE_usage_ratio",
            "non_sec0_ratio",
            "L1D_WB_per_access",
            "mem_stall_rate",
            "l2_stall_rate",
            "other_ld_stall_rate",
            "power_core_W",
        ),
        "sector": ("SCE_usage_ratio", "non_sec0_ratio"),
        "stall": ("mem_stall_rate", "l2_stall_rate", "other_ld_stall_rate"),
        "energy": (
            "power_core_W",
            "power_L2_W",
            "power_memory_W",
            "power_total_W",
            "energy_per_inst",
            "mem_energy_ratio",
        ),
        "history": (
            "IPC",
            "L1D_miss_rate",
            "L2D_miss_rate_corrected",
            "mem_stall_rate",
            "SCE_usage_ratio",
            "power_total_W",
            "energy_per_inst",
        ),
        "region_counts": ("CPU_CYCLES", "INST_RETIRED", "L1D_CACHE_REFILL", "L2D_CACHE_REFILL"),
    },
    "generic": {
        "cmg": ("IPC", "cache_miss_rate", "branch_miss_rate", "cpu_utilization", "page_fault_rate"),
        "core": (
            "IPC",
            "cache_miss_rate",
            "branch_miss_rate",
            "cpu_utilization",
            "page_fault_rate",
            "context_switch_rate",
            "migration_rate",
            "major_fault_rate",
        ),
        "sector": (),
        "stall": (),
        "energy": (),
        "history": ("IPC", "cpu_utilization", "cache_miss_rate", "page_fault_rate", "context_switch_rate"),
        "region_counts": ("INSTRUCTIONS", "CYCLES", "PAGE_FAULTS"),
    },
}

CMG_TITLES = {"a64fx": "CMGs"}
DEFAULT_CMG_TITLE = "Cache domains (the CMG's role on this CPU)"
HISTORY_FALLBACK = 6
REGION_COUNTS_FALLBACK = 3


def label(metric: str) -> str:
    return LABELS.get(metric, metric)


def _columns(names: tuple[str, ...] | list[str], profile: ProfileView) -> tuple[Column, ...]:
    return tuple(Column(name, label(name)) for name in names if name in profile.metrics)


def resolve_panels(profile: ProfileView) -> Panels:
    """The layout for ``profile``: its table filtered to defined metrics, or the fallback."""
    layout = LAYOUTS.get(profile.name)
    title = CMG_TITLES.get(profile.name, DEFAULT_CMG_TITLE)
    if layout is not None:

        def panel(name: str) -> tuple[Column, ...]:
            return _columns(layout.get(name, ()), profile)

        return Panels(
            profile=profile.name,
            cmg_title=title,
            cmg=panel("cmg"),
            core=panel("core"),
            sector=panel("sector"),
            stall=panel("stall"),
            energy=panel("energy"),
            history=panel("history"),
            region_counts=tuple(e for e in layout.get("region_counts", ()) if e in profile.events),
        )
    names = list(profile.metrics)
    core = [n for n in names if profile.metrics[n].scope in ("any", "core")]
    cmg = [n for n in names if profile.metrics[n].scope in ("any", "cmg")]
    return Panels(
        profile=profile.name,
        cmg_title=title,
        cmg=_columns(cmg, profile),
        core=_columns(core, profile),
        sector=(),
        stall=(),
        energy=(),
        history=_columns(names[:HISTORY_FALLBACK], profile),
        fallback=True,
        region_counts=tuple(profile.events)[:REGION_COUNTS_FALLBACK],
    )
