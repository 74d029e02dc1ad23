"""Host facts (arch, model, kernel, paranoid level, privileges, PMUs) from fake and real roots."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sectormon.host import roots
from sectormon.host.facts import (
    HostInfo,
    collect_hostinfo,
    cpu_wide_allowed,
    list_pmus,
    mux_intervals,
    paranoid_meaning,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sysfs"


def tree(name: str) -> tuple[Path, Path]:
    return FIXTURES / name / "sys", FIXTURES / name / "proc"


def facts(sys_root: Path, proc: Path) -> HostInfo:
    """The host facts the fake tree ``sys_root``/``proc`` shows."""
    with roots.use(sysfs=sys_root, procfs=proc):
        return collect_hostinfo()


def test_fx1000_host_facts() -> None:
    host = facts(*tree("fx1000"))
    assert host.arch == "aarch64"
    assert host.model == "Fujitsu A64FX" and host.is_a64fx
    assert host.kernel == "4.18.0-305.el8.aarch64"
    assert host.paranoid == 2
    assert [(p.name, p.type, p.core) for p in host.pmus] == [
        ("armv8_pmuv3_0", 8, True),
        ("breakpoint", 5, False),
        ("software", 1, False),
        ("tracepoint", 2, False),
    ]
    assert host.has_core_pmu


def test_x86_host_facts() -> None:
    host = facts(*tree("x86"))
    assert host.arch == "x86_64" and not host.is_a64fx
    assert host.paranoid == 2
    assert {p.name for p in host.pmus if p.core} == {"cpu"}
    data = host.to_json()
    assert data["perf_event_paranoid"] == 2
    assert "user space only" in data["paranoid_meaning"]
    assert "CAP_PERFMON" in data["paranoid_bypass"]


@pytest.mark.parametrize(
    ("level", "needle"),
    [
        (-1, "no restrictions"),
        (0, "CPU-wide (per-CPU)"),
        (1, "their own processes (user and kernel space)"),
        (2, "user space only"),
        (3, "may not use perf_event_open at all"),
        (4, "may not use perf_event_open at all"),
        (-5, "no restrictions"),
        (None, "unknown"),
    ],
)
def test_paranoid_meaning(level: int | None, needle: str) -> None:
    assert needle in paranoid_meaning(level)


def test_cpu_wide_needs_paranoid_0_or_privilege() -> None:
    assert cpu_wide_allowed(0, False) and cpu_wide_allowed(-1, False)
    assert not cpu_wide_allowed(1, False) and not cpu_wide_allowed(None, False)
    assert cpu_wide_allowed(2, True)


@pytest.mark.parametrize(
    ("cap_eff", "privileged", "caps"),
    [
        ("0000000000000000", False, ()),
        ("0000004000000000", True, ("CAP_PERFMON",)),  # bit 38
        ("0000000000200000", True, ("CAP_SYS_ADMIN",)),  # bit 21
        ("000001ffffffffff", True, ("CAP_PERFMON", "CAP_SYS_ADMIN")),
    ],
)
def test_capabilities_from_status(
    tmp_path: Path, cap_eff: str, privileged: bool, caps: tuple[str, ...]
) -> None:
    proc = tmp_path / "proc"
    shutil.copytree(FIXTURES / "x86" / "proc", proc)
    (proc / "self").mkdir()
    (proc / "self" / "status").write_text(f"Name:\tpython\nCapInh:\t0000000000000000\nCapEff:\t{cap_eff}\n")
    host = facts(FIXTURES / "x86" / "sys", proc)
    assert host.privileged is privileged
    assert host.capabilities == caps
    assert ("bypasses" in host.privilege_text()) is privileged


def test_missing_pmu_dir_gives_no_pmus(tmp_path: Path) -> None:
    with roots.use(sysfs=tmp_path):
        assert list_pmus() == ()


def test_mux_intervals_per_pmu(tmp_path: Path) -> None:
    devices = tmp_path / "bus/event_source/devices"
    for pmu, interval in (("cpu", "4\n"), ("software", "1"), ("odd", "x"), ("none", None)):
        (devices / pmu).mkdir(parents=True)
        if interval is not None:
            (devices / pmu / "perf_event_mux_interval_ms").write_text(interval)
    with roots.use(sysfs=tmp_path):
        assert mux_intervals() == {"cpu": 4, "software": 1}
    with roots.use(sysfs=tmp_path / "missing"):
        assert mux_intervals() == {}


def test_real_host_has_the_software_pmu() -> None:
    host = collect_hostinfo()
    assert "software" in {p.name for p in host.pmus}
    assert host.arch and host.kernel
