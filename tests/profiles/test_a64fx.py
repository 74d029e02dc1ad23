"""The a64fx profile against its sources: Linux perf's A64FX tables, the PMU document, the facts sheet."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sectormon.profiles.expr import formula_names
from sectormon.profiles.model import Profile
from sectormon.profiles.resolve import load_profile

# Arm architectural (common) event numbers: perf's a64fx tables list these as ArchStdEvent, without code.
ARM_COMMON_CODES = {
    "CPU_CYCLES": 0x11,
    "INST_RETIRED": 0x08,
    "L1D_CACHE": 0x04,
    "L1D_CACHE_REFILL": 0x03,
    "L1D_CACHE_WB": 0x15,
    "L2D_CACHE": 0x16,
    "L2D_CACHE_REFILL": 0x17,
    "L2D_CACHE_WB": 0x18,
    "STALL_FRONTEND": 0x23,
    "STALL_BACKEND": 0x24,
}

DOC_CODES = {
    # section 2 of the PMU document, plus the PIPE/COMP events of its section 6.2 and the errata events
    0x250,
    0x251,
    0x252,
    0x253,
    0x2A0,
    0x2A1,
    0x240,
    0x241,
    0x260,
    0x261,
    0x04,
    0x03,
    0x200,
    0x202,
    0x49,
    0x15,
    0x208,
    0x16,
    0x17,
    0x300,
    0x302,
    0x59,
    0x18,
    0x308,
    0x309,
    0x325,
    0x326,
    0x184,
    0x182,
    0x180,
    0x11,
    0x08,
    0x23,
    0x24,
    0x1E0,
    0x3E0,
    0x3E8,
    0x396,
    0x370,
}

CMG_CODES = {0x308, 0x309, 0x370, 0x396, 0x3E0, 0x3E8}

METRICS = [
    "L1D_miss_rate",
    "L1D_demand_refill_ratio",
    "L2D_miss_rate",
    "L2D_demand_refill_ratio",
    "mem_stall_rate",
    "l2_stall_rate",
    "total_ld_stall_rate",
    "avg_L1_miss_penalty",
    "avg_L2_miss_penalty",
    "SCE_usage_ratio",
    "non_sec0_ratio",
    "L1D_WB_per_access",
    "L2D_WB_per_access",
    "energy_total",
    "energy_per_inst",
    "mem_energy_ratio",
    "IPC",
    "L2_refill_corrected",
    "L2_demand_refill_corrected",
    "L2_prefetch_refill_corrected",
    "L2_miss_count_corrected",
    "L2D_miss_rate_corrected",
    "other_ld_stall_rate",
    "power_core_W",
    "power_L2_W",
    "power_memory_W",
    "power_total_W",
    "L1_hwprf_refill_per_cycle",
    "L1_prf_refill_per_cycle",
    "L2_hwprf_refill_per_cycle",
    "L2_prf_refill_per_cycle",
    "L2_swap_dm_per_cycle",
    "L2_mibmch_prf_per_cycle",
    "avg_L1_miss_outstanding",
    "frontend_stall_rate",
    "backend_stall_rate",
]


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile("a64fx")


@pytest.fixture(scope="module")
def perf_tables(reference_dir: Path) -> tuple[dict[int, str], set[str]]:
    """(code -> name for coded entries, names of ArchStdEvent entries) from perf's a64fx JSON."""
    coded: dict[int, str] = {}
    arch: set[str] = set()
    for path in sorted((reference_dir / "a64fx-pmu-events").glob("*.json")):
        for entry in json.loads(path.read_text()):
            if "EventCode" in entry:
                coded[int(entry["EventCode"], 16)] = entry["EventName"]
            elif "ArchStdEvent" in entry:
                arch.add(entry["ArchStdEvent"])
    return coded, arch


@pytest.fixture(scope="module")
def pmu_doc(reference_dir: Path) -> str:
    path = reference_dir.parent / "seeds" / "000_4fe741a427ba282d.txt"
    if not path.is_file():
        pytest.skip(f"PMU document not found at {path}")
    return path.read_text()


def test_every_code_and_name_agrees_with_perf_tables(
    profile: Profile, perf_tables: tuple[dict[int, str], set[str]]
) -> None:
    coded, arch = perf_tables
    for name, event in profile.events.items():
        assert event.code is not None, name
        assert event.spec == f"r{event.code:x}"
        if name in ARM_COMMON_CODES:
            assert name in arch, f"{name} is not an ArchStdEvent of the a64fx tables"
            assert event.code == ARM_COMMON_CODES[name], name
            assert event.code not in coded
        else:
            assert coded.get(event.code) == name, (
                f"0x{event.code:x}: profile {name}, perf {coded.get(event.code)}"
            )


def test_catalog_holds_exactly_the_documented_events(profile: Profile) -> None:
    codes = [e.code for e in profile.events.values()]
    assert len(codes) == len(set(codes))
    assert set(codes) == DOC_CODES


def test_scopes_follow_the_facts_sheet(profile: Profile) -> None:
    for event in profile.events.values():
        assert event.scope == ("cmg" if event.code in CMG_CODES else "pe"), event.name


def test_energy_factors_by_variant() -> None:
    default = load_profile("a64fx")
    assert default.variant == ""
    assert {n: default.events[n].nj_per_count for n in ("EA_CORE", "EA_L2", "EA_MEMORY")} == {
        "EA_CORE": 8.0,
        "EA_L2": 32.0,
        "EA_MEMORY": 256.0,
    }
    assert default.constants == {"NJ_EA_CORE": 8.0, "NJ_EA_L2": 32.0, "NJ_EA_MEMORY": 256.0}
    assert load_profile("a64fx", variant="48c").constants == default.constants
    fast = load_profile("a64fx", variant="24c-2.6GHz")
    assert fast.variant == "24c-2.6GHz"
    assert fast.constants == {"NJ_EA_CORE": 9.0, "NJ_EA_L2": 36.0, "NJ_EA_MEMORY": 256.0}
    assert fast.events["EA_L2"].nj_per_count == 36.0
    assert all(e.nj_per_count is None for e in default.events.values() if not e.name.startswith("EA_"))


def _doc_groups(doc: str) -> dict[str, list[tuple[str, int]]]:
    section = doc.split("### 6.2", 1)[1].split("### 6.3", 1)[0]
    groups: dict[str, list[tuple[str, int]]] = {}
    current = ""
    for line in section.splitlines():
        head = re.match(r"#### Group (SC\d):", line)
        if head:
            current = head.group(1)
            groups[current] = []
            continue
        row = re.match(r"\|\s*([A-Z0-9_]+)\s*\|\s*(0x[0-9a-fA-F]+)\s*\|", line)
        if row and current:
            groups[current].append((row.group(1), int(row.group(2), 16)))
    return groups


def test_groups_sc1_to_sc5_are_the_documents(profile: Profile, pmu_doc: str) -> None:
    doc = _doc_groups(pmu_doc)
    assert sorted(doc) == ["SC1", "SC2", "SC3", "SC4", "SC5"]
    for name, rows in doc.items():
        group = profile.group(name)
        assert list(group.events) == [n for n, _ in rows], name
        assert [profile.events[n].code for n in group.events] == [c for _, c in rows], name
    # The fapp scripts of section 6.3 use the same codes in the same order.
    raw = re.findall(
        r"# (SC\d):.*?-Hevent_raw=([0-9a-fx,]+)", pmu_doc.split("#### A)", 1)[1].split("#### B)")[0], re.S
    )
    assert len(raw) == 5
    for name, codes in raw:
        assert [profile.events[n].code for n in profile.group(name).events] == [
            int(c, 16) for c in codes.split(",")
        ]


def test_sc6_adds_what_the_errata_corrections_need(profile: Profile) -> None:
    sc6 = profile.group("SC6")
    assert "sectormon addition" in sc6.description
    assert set(sc6.events) == {
        "CPU_CYCLES",
        "L2_MISS_COUNT",
        "L2D_CACHE_SWAP_LOCAL",
        "L2_PIPE_COMP_PF_L2MIB_MCH",
        "L2D_CACHE_REFILL",
        "L2D_SWAP_DM",
        "L2D_CACHE_MIBMCH_PRF",
        "L2D_CACHE_REFILL_PRF",
    }
    assert [g.name for g in profile.groups] == ["SC1", "SC2", "SC3", "SC4", "SC5", "SC6"]
    assert all(len(g.events) <= profile.counters == 8 and "CPU_CYCLES" in g.events for g in profile.groups)


def test_metric_names(profile: Profile) -> None:
    assert len(profile.metrics) == len(METRICS)
    assert {m.name for m in profile.metrics} == set(METRICS)


def _norm(formula: str) -> str:
    return re.sub(r"\s+", "", formula)


def test_section_3_formulas_are_the_documents(profile: Profile, pmu_doc: str) -> None:
    section = pmu_doc.split("## 3.", 1)[1].split("## 4.", 1)[0]
    blocks = re.findall(r"```\n(.*?)```", section, re.S)
    doc: dict[str, str] = {}
    for block in blocks:
        for statement in re.split(r"\n(?=\w+\s*=)", block.strip()):
            name, sep, formula = statement.partition("=")
            if sep and name.strip() in METRICS:
                doc[name.strip()] = formula
    plain = [n for n in doc if n not in ("energy_total", "mem_energy_ratio")]
    assert len(plain) >= 15
    for name in plain:
        assert _norm(profile.metric(name).formula) == _norm(doc[name]), name
    # The document writes the 48-core nJ factors inline; the profile names them.
    assert "EA_CORE * 8[nJ] + EA_L2 * 32[nJ] + EA_MEMORY * 256[nJ]" in doc["energy_total"]
    assert (
        _norm(profile.metric("energy_total").formula)
        == "EA_CORE*NJ_EA_CORE+EA_L2*NJ_EA_L2+EA_MEMORY*NJ_EA_MEMORY"
    )
    assert _norm(profile.metric("mem_energy_ratio").formula) == "EA_MEMORY*NJ_EA_MEMORY/energy_total"


@pytest.mark.parametrize(
    ("metric", "formula"),
    [
        ("L2_refill_corrected", "L2D_CACHE_REFILL-L2D_SWAP_DM-L2D_CACHE_MIBMCH_PRF"),
        ("L2_demand_refill_corrected", "L2D_CACHE_REFILL_DM-L2D_SWAP_DM"),
        ("L2_prefetch_refill_corrected", "L2D_CACHE_REFILL_PRF-L2D_CACHE_MIBMCH_PRF"),
        ("L2_miss_count_corrected", "L2_MISS_COUNT-L2D_CACHE_SWAP_LOCAL-L2_PIPE_COMP_PF_L2MIB_MCH"),
        ("L2D_miss_rate_corrected", "L2_refill_corrected/L2D_CACHE"),
        ("other_ld_stall_rate", "max(0,LD_COMP_WAIT-LD_COMP_WAIT_L2_MISS-LD_COMP_WAIT_L1_MISS)/CPU_CYCLES"),
        ("power_core_W", "EA_CORE*NJ_EA_CORE/1e9/SECONDS"),
        ("power_total_W", "energy_total/1e9/SECONDS"),
        ("avg_L1_miss_outstanding", "L1_MISS_WAIT/CPU_CYCLES"),
        ("frontend_stall_rate", "STALL_FRONTEND/CPU_CYCLES"),
    ],
)
def test_errata_and_derived_formulas(profile: Profile, metric: str, formula: str) -> None:
    assert _norm(profile.metric(metric).formula) == formula


def _inputs(profile: Profile, name: str) -> set[str]:
    out: set[str] = set()
    for ref in formula_names(profile.metric(name).formula):
        if ref in profile.events:
            out.add(ref)
        elif any(m.name == ref for m in profile.metrics):
            out |= _inputs(profile, ref)
    return out


def test_metric_scope_is_cmg_exactly_when_all_inputs_are_cmg_wide(profile: Profile) -> None:
    for metric in profile.metrics:
        inputs = _inputs(profile, metric.name)
        all_cmg = bool(inputs) and all(profile.events[e].scope == "cmg" for e in inputs)
        assert metric.scope == ("cmg" if all_cmg else "any"), metric.name
    assert {m.name for m in profile.metrics if m.scope == "cmg"} == {
        "avg_L2_miss_penalty",
        "L2_miss_count_corrected",
        "power_L2_W",
        "power_memory_W",
    }


def test_better_conventions(profile: Profile) -> None:
    for metric in profile.metrics:
        name = metric.name
        if name == "IPC":
            expected = "higher"
        elif metric.unit in ("count", "1/cycle", "requests") or name in ("SCE_usage_ratio", "non_sec0_ratio"):
            expected = "none"
        else:
            expected = "lower"  # miss/stall rates, penalties, write-backs, energy, power
        assert metric.better == expected, name
        assert metric.unit and metric.description, name


def test_group_hints_point_at_the_group_that_counts_all_inputs(profile: Profile) -> None:
    assert profile.metric("IPC").group_hint == "SC1"
    assert profile.metric("SCE_usage_ratio").group_hint == "SC3"
    assert profile.metric("L2_miss_count_corrected").group_hint == "SC6"
    assert profile.metric("non_sec0_ratio").group_hint == ""  # L1_PIPE1_COMP is only in SC5


def test_formulas_evaluate_with_the_metrics_engine_parser(profile: Profile) -> None:
    from sectormon.profiles import expr

    env: dict[str, float | None] = {name: 1000.0 for name in profile.events}
    env.update(profile.constants)
    env.update(EA_CORE=10.0, EA_L2=2.0, EA_MEMORY=1.0, INST_RETIRED=50.0, SECONDS=2.0)
    values: dict[str, float | None] = {}
    for metric in profile.metrics:
        parsed = expr.parse(metric.formula)
        assert set(parsed.names) == set(formula_names(metric.formula)), metric.name
        values[metric.name] = parsed.evaluate({**env, **values})
    assert values["energy_total"] == 10 * 8 + 2 * 32 + 1 * 256
    assert values["energy_per_inst"] == 400 / 50
    assert values["mem_energy_ratio"] == 256 / 400
    assert values["power_total_W"] == pytest.approx(400 / 1e9 / 2)
    assert values["L2_miss_count_corrected"] == 1000 - 1000 - 1000  # plain formulas: no clamping to 0
    # Division by zero is n/a, never a made-up 0.
    zero_env = {**env, "CPU_CYCLES": 0.0}
    assert expr.parse(profile.metric("IPC").formula).evaluate(zero_env) is None
