"""Topology from fake sysfs/procfs trees: FX1000 (Fugaku layout), FX700, x86, and the fallbacks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.errors import DataError, UsageError
from sectormon.host import roots
from sectormon.host.topology import CpuListError, Topology, format_cpu_list, load_topology, parse_cpu_list

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sysfs"


def tree(name: str) -> tuple[Path, Path]:
    return FIXTURES / name / "sys", FIXTURES / name / "proc"


def load(sys_root: Path, proc: Path) -> Topology:
    """The topology the fake tree ``sys_root``/``proc`` shows."""
    with roots.use(sysfs=sys_root, procfs=proc):
        return load_topology()


def copy_tree(name: str, tmp_path: Path) -> tuple[Path, Path]:
    dest = tmp_path / name
    shutil.copytree(FIXTURES / name, dest)
    return dest / "sys", dest / "proc"


def put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


# ---------------------------------------------------------------- fixtures of real layouts


def test_fx1000_cmgs_from_numa_nodes_4_to_7() -> None:
    topo = load(*tree("fx1000"))
    assert topo.is_a64fx
    assert topo.model == "Fujitsu A64FX"
    assert topo.domain == "cmg"
    assert topo.variant == "48c"
    assert topo.cmgs == {
        0: tuple(range(12, 24)),
        1: tuple(range(24, 36)),
        2: tuple(range(36, 48)),
        3: tuple(range(48, 60)),
    }
    assert topo.cpus == tuple(range(12, 60))
    assert topo.excluded == (0, 1)  # assistant cores
    assert 0 not in topo.cmg_of and 1 not in topo.cmg_of
    assert topo.cmg_of[12] == 0 and topo.cmg_of[59] == 3
    assert [topo.cmg_label(c) for c in range(4)] == ["CMG0", "CMG1", "CMG2", "CMG3"]


def test_fx700_cmgs_from_numa_nodes_0_to_3() -> None:
    topo = load(*tree("fx700"))
    assert topo.is_a64fx and topo.domain == "cmg" and topo.variant == "48c"
    assert topo.cmgs == {n: tuple(range(12 * n, 12 * n + 12)) for n in range(4)}
    assert topo.excluded == ()
    assert topo.cmg_of[47] == 3


def test_x86_uses_the_per_core_l2_domain() -> None:
    topo = load(*tree("x86"))
    assert not topo.is_a64fx
    assert topo.model.startswith("Intel(R) Core(TM)")
    assert topo.domain == "l2"
    assert topo.variant == ""
    assert topo.cmgs == {0: (0,), 1: (1,), 2: (2,), 3: (3,)}
    assert topo.cmg_label(2) == "L2#2"
    assert "L2" in topo.domain_meaning()


def test_x86_without_l2_info_uses_the_llc(tmp_path: Path) -> None:
    sys_root, proc = copy_tree("x86", tmp_path)
    for cpu in range(4):
        shutil.rmtree(sys_root / f"devices/system/cpu/cpu{cpu}/cache/index2")
    topo = load(sys_root, proc)
    assert topo.domain == "llc"
    assert topo.cmgs == {0: (0, 1, 2, 3)}
    assert topo.cmg_label(0) == "LLC#0"


def test_no_cache_info_means_one_domain(tmp_path: Path) -> None:
    sys_root, proc = copy_tree("x86", tmp_path)
    for cpu in range(4):
        shutil.rmtree(sys_root / f"devices/system/cpu/cpu{cpu}/cache")
    topo = load(sys_root, proc)
    assert topo.domain == "single"
    assert topo.cmgs == {0: (0, 1, 2, 3)}
    assert topo.cmg_label(0) == "ALL"


def test_shared_l2_pairs(tmp_path: Path) -> None:
    sys_root, proc = copy_tree("x86", tmp_path)
    for cpu in range(4):
        pair = "0-1" if cpu < 2 else "2-3"
        put(sys_root / f"devices/system/cpu/cpu{cpu}/cache/index2/shared_cpu_list", pair)
    topo = load(sys_root, proc)
    assert topo.domain == "l2"
    assert topo.cmgs == {0: (0, 1), 1: (2, 3)}


def test_fx1000_without_numa_falls_back_to_empty_cache_sysfs(tmp_path: Path) -> None:
    # The cache sysfs is empty on this firmware: no L2 sharing, so one domain (never a guess).
    sys_root, proc = copy_tree("fx1000", tmp_path)
    shutil.rmtree(sys_root / "devices/system/node")
    topo = load(sys_root, proc)
    assert topo.is_a64fx
    assert topo.domain == "single"
    assert topo.cmgs == {0: (0, 1, *range(12, 60))}


def test_a64fx_cache_fallback_names_the_l2_domain_a_cmg(tmp_path: Path) -> None:
    sys_root, proc = copy_tree("fx700", tmp_path)
    shutil.rmtree(sys_root / "devices/system/node")
    for cpu in range(48):
        base = sys_root / f"devices/system/cpu/cpu{cpu}/cache/index2"
        put(base / "level", "2")
        put(base / "type", "Unified")
        first = cpu // 12 * 12
        put(base / "shared_cpu_list", f"{first}-{first + 11}")
    topo = load(sys_root, proc)
    assert topo.domain == "cmg"
    assert topo.cmgs == {n: tuple(range(12 * n, 12 * n + 12)) for n in range(4)}


def test_offline_cpus_keep_cmg_ids_stable(tmp_path: Path) -> None:
    sys_root, proc = copy_tree("fx1000", tmp_path)
    put(sys_root / "devices/system/cpu/online", "0-1,12-23,36-59")  # CMG1 entirely offline
    topo = load(sys_root, proc)
    assert sorted(topo.cmgs) == [0, 2, 3]
    assert topo.cmg_of[36] == 2
    assert topo.variant == "48c"  # the die still has 48 compute cores


def test_24_core_variant_is_the_26ghz_part_unless_cpufreq_says_otherwise(tmp_path: Path) -> None:
    sys_root, proc = copy_tree("fx700", tmp_path)
    for n in (2, 3):
        shutil.rmtree(sys_root / f"devices/system/node/node{n}")
    put(sys_root / "devices/system/cpu/online", "0-23")
    # the only 24-core part runs at 2.6 GHz: without cpufreq its energy factors (9/36) still apply
    assert load(sys_root, proc).variant == "24c-2.6GHz"
    put(sys_root / "devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "2000000")
    assert load(sys_root, proc).variant == "24c"
    put(sys_root / "devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "2600000")
    topo = load(sys_root, proc)
    assert topo.variant == "24c-2.6GHz"
    assert sorted(topo.cmgs) == [0, 1]


def test_a_non_a64fx_arm_host_is_named_by_implementer(tmp_path: Path) -> None:
    sys_root, proc = copy_tree("fx700", tmp_path)
    put(proc / "cpuinfo", "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n")
    topo = load(sys_root, proc)
    assert not topo.is_a64fx
    assert "0x41" in topo.model and "0xd0c" in topo.model
    assert topo.domain == "single"  # no cache sysfs in this tree


def test_bad_sysfs_list_names_the_file(tmp_path: Path) -> None:
    sys_root, proc = copy_tree("x86", tmp_path)
    put(sys_root / "devices/system/cpu/online", "0-x")
    with pytest.raises(DataError, match=r"devices/system/cpu/online:1: bad CPU list"):
        load(sys_root, proc)


def test_missing_sysfs_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="cannot find the online CPUs"):
        load(tmp_path / "sys", tmp_path / "proc")


def test_json_round_trip_and_require_cpus() -> None:
    topo = load(*tree("fx1000"))
    data = topo.to_json()
    assert data["cmgs"]["3"] == list(range(48, 60))
    assert Topology.from_json(data) == topo
    assert topo.require_cpus([13, 12, 12]) == (12, 13)
    with pytest.raises(
        UsageError, match=r"--cpus: CPU 0-1,5 is not an online compute CPU.*assistant cores 0-1"
    ):
        topo.require_cpus([0, 1, 5, 12])
    with pytest.raises(DataError, match="bad topology"):
        Topology.from_json({"cpus": [0]})


def test_host_topology_loads() -> None:
    topo = load_topology()
    assert topo.cpus and set(topo.cpus) == set(topo.cmg_of)
    assert sorted(c for cpus in topo.cmgs.values() for c in cpus) == list(topo.cpus)


# ---------------------------------------------------------------- CPU lists


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("0", (0,)), ("0-3,8,10-11", (0, 1, 2, 3, 8, 10, 11)), (" 3,1-2 \n", (1, 2, 3)), ("5,5,4-5", (4, 5))],
)
def test_parse_cpu_list(text: str, cpus: tuple[int, ...]) -> None:
    assert parse_cpu_list(text) == cpus


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty CPU list"),
        ("3-1", "runs backwards"),
        ("a", "'a' is not a CPU number or range"),
        ("1,,2", "'' is not a CPU number or range"),
        ("-1", "is not a CPU number"),
        ("0-70000", "beyond 65535"),
    ],
)
def test_parse_cpu_list_errors(text: str, message: str) -> None:
    with pytest.raises(CpuListError, match=message) as info:
        parse_cpu_list(text, what="--cpus")
    assert isinstance(info.value, UsageError) and isinstance(info.value, ValueError)
    assert "0-3,8,10-11" in str(info.value)  # every message shows the expected form


@given(st.sets(st.integers(min_value=0, max_value=300), min_size=1))
def test_format_then_parse_round_trips(cpus: set[int]) -> None:
    text = format_cpu_list(cpus)
    assert parse_cpu_list(text) == tuple(sorted(cpus))
    assert len(text.split(",")) <= len(cpus)


@given(st.text(alphabet="0123456789-, x", max_size=20))
def test_parse_cpu_list_fails_only_with_cpu_list_error(text: str) -> None:
    try:
        cpus = parse_cpu_list(text, allow_empty=True)
    except CpuListError:
        return
    assert list(cpus) == sorted(set(cpus))
