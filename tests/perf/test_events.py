"""Event spec parsing: generic names, raw codes and PMU forms against a fake sysfs tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.perf import abi
from sectormon.perf.errors import BadEventSpec
from sectormon.perf.events import EventSpec, parse_event, parse_format, place_bits


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    """A fake /sys with an arm-like PMU and an x86-like PMU with split fields."""
    arm = tmp_path / "bus/event_source/devices/armv8_pmuv3_0"
    (arm / "format").mkdir(parents=True)
    (arm / "type").write_text("10\n")
    (arm / "format/event").write_text("config:0-15\n")
    (arm / "format/long").write_text("config1:0\n")
    (arm / "events").mkdir()
    (arm / "events/cpu_cycles").write_text("event=0x0011\n")
    cpu = tmp_path / "bus/event_source/devices/cpu"
    (cpu / "format").mkdir(parents=True)
    (cpu / "type").write_text("4\n")
    (cpu / "format/event").write_text("config:0-7\n")
    (cpu / "format/umask").write_text("config:8-15\n")
    (cpu / "format/any").write_text("config:21\n")
    (cpu / "format/ldlat").write_text("config1:0-15\n")
    (cpu / "format/split").write_text("config2:0-3,8-11\n")
    return tmp_path


@pytest.mark.parametrize(
    ("spec", "config"),
    [
        ("cycles", abi.PERF_COUNT_HW_CPU_CYCLES),
        ("cpu-cycles", abi.PERF_COUNT_HW_CPU_CYCLES),
        ("instructions", 1),
        ("cache-references", 2),
        ("cache-misses", 3),
        ("branches", 4),
        ("branch-instructions", 4),
        ("branch-misses", 5),
        ("bus-cycles", 6),
        ("stalled-cycles-frontend", 7),
        ("stalled-cycles-backend", 8),
        ("ref-cycles", 9),
    ],
)
def test_generic_hardware(spec: str, config: int) -> None:
    assert parse_event(spec) == EventSpec(spec, abi.PERF_TYPE_HARDWARE, config)


@pytest.mark.parametrize(
    ("spec", "config"),
    [
        ("cpu-clock", 0),
        ("task-clock", 1),
        ("page-faults", 2),
        ("faults", 2),
        ("context-switches", 3),
        ("cs", 3),
        ("cpu-migrations", 4),
        ("migrations", 4),
        ("minor-faults", 5),
        ("major-faults", 6),
        ("alignment-faults", 7),
        ("emulation-faults", 8),
        ("dummy", 9),
    ],
)
def test_generic_software(spec: str, config: int) -> None:
    assert parse_event(spec) == EventSpec(spec, abi.PERF_TYPE_SOFTWARE, config)


def test_names_are_case_insensitive() -> None:
    assert parse_event("Task-Clock").config == 1


@pytest.mark.parametrize(("spec", "code"), [("r11", 0x11), ("r0308", 0x308), ("r1E0", 0x1E0), ("rff", 0xFF)])
def test_raw(spec: str, code: int) -> None:
    assert parse_event(spec) == EventSpec(spec, abi.PERF_TYPE_RAW, code)


@given(st.integers(min_value=0, max_value=(1 << 64) - 1))
def test_raw_any_u64(code: int) -> None:
    assert parse_event(f"r{code:x}").config == code


def test_raw_too_wide() -> None:
    with pytest.raises(BadEventSpec, match="exceeds 64 bits"):
        parse_event("r1" + "0" * 16)


def test_pmu_form(sysfs: Path) -> None:
    spec = parse_event("armv8_pmuv3_0/event=0x11/", sysfs_root=sysfs)
    assert (spec.type, spec.config, spec.config1) == (10, 0x11, 0)


def test_pmu_form_terms_and_fields(sysfs: Path) -> None:
    spec = parse_event("cpu/event=0x3c,umask=0x1,any,ldlat=30,split=0xab/", sysfs_root=sysfs)
    assert spec.type == 4
    assert spec.config == 0x3C | (0x1 << 8) | (1 << 21)
    assert spec.config1 == 30
    assert spec.config2 == 0xB | (0xA << 8)


def test_pmu_form_direct_config_terms(sysfs: Path) -> None:
    spec = parse_event("cpu/config=0x1234,config1=5,config2=6,config3=7/", sysfs_root=sysfs)
    assert (spec.config, spec.config1, spec.config2, spec.config3) == (0x1234, 5, 6, 7)


def test_pmu_named_alias(sysfs: Path) -> None:
    spec = parse_event("armv8_pmuv3_0/cpu_cycles/", sysfs_root=sysfs)
    assert (spec.type, spec.config) == (10, 0x11)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nopmu/event=1/", "no PMU named 'nopmu'.*armv8_pmuv3_0, cpu"),
        ("cpu/bogus=1/", "PMU 'cpu' has no term 'bogus'.*terms of cpu: any, event"),
        ("cpu/event=0x1ff/", "does not fit in 8 bits"),
        ("cpu/event=zz/", "non-numeric"),
        ("cpu//", "no terms"),
        ("cpu/event=1", "PMU form"),
        ("rxyz", "not hexadecimal"),
        ("cyclez", "unknown event name"),
        ("", "empty"),
    ],
)
def test_errors_name_the_spec_and_problem(sysfs: Path, spec: str, message: str) -> None:
    with pytest.raises(BadEventSpec, match=message) as info:
        parse_event(spec, sysfs_root=sysfs)
    assert f"'{spec}'" in str(info.value)
    assert "(" in str(info.value)  # a fix is offered


def test_real_software_pmu_form() -> None:
    if not Path("/sys/bus/event_source/devices/software/type").exists():
        pytest.skip("no software PMU in sysfs")
    spec = parse_event("software/config=1/")
    assert (spec.type, spec.config) == (abi.PERF_TYPE_SOFTWARE, 1)


@pytest.mark.parametrize(
    ("text", "field", "ranges"),
    [
        ("config:0-15", "config", ((0, 15),)),
        ("config1:0-7\n", "config1", ((0, 7),)),
        ("config:21", "config", ((21, 21),)),
        ("config2:0-3,8-11", "config2", ((0, 3), (8, 11))),
    ],
)
def test_parse_format(text: str, field: str, ranges: tuple[tuple[int, int], ...]) -> None:
    assert parse_format(text) == (field, ranges)


@pytest.mark.parametrize("text", ["cfg:0-3", "config:7-3", "config:0-64", "config", "config:"])
def test_parse_format_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_format(text)


@given(
    st.lists(st.integers(min_value=0, max_value=63), min_size=1, max_size=64, unique=True).map(sorted),
    st.data(),
)
def test_place_bits_scatters_and_gathers(bits: list[int], data: st.DataObject) -> None:
    """Any set of bit positions, as ranges: placing a value and reading those bits back is identity."""
    ranges: list[tuple[int, int]] = []
    for b in bits:
        if ranges and ranges[-1][1] == b - 1:
            ranges[-1] = (ranges[-1][0], b)
        else:
            ranges.append((b, b))
    value = data.draw(st.integers(min_value=0, max_value=(1 << len(bits)) - 1))
    placed = place_bits(value, tuple(ranges))
    gathered = sum(((placed >> b) & 1) << i for i, b in enumerate(bits))
    assert gathered == value
    assert placed & ~sum(1 << b for b in bits) == 0
    with pytest.raises(ValueError):
        place_bits(1 << len(bits), tuple(ranges))


def test_leader_is_first_non_clock() -> None:
    from sectormon.perf.group import leader_index

    def idx(*names: str) -> int:
        return leader_index([parse_event(n) for n in names])

    assert idx("task-clock", "page-faults", "cs") == 1
    assert idx("cpu-clock", "task-clock", "cycles") == 2
    assert idx("cycles", "task-clock") == 0
    assert idx("task-clock", "cpu-clock") == 0


@pytest.mark.parametrize(
    ("spec", "kernel_only"),
    [("cs", True), ("cpu-migrations", True), ("page-faults", False), ("task-clock", False), ("r3", False)],
)
def test_counts_only_in_kernel(spec: str, kernel_only: bool) -> None:
    from sectormon.perf.events import counts_only_in_kernel

    assert counts_only_in_kernel(parse_event(spec)) is kernel_only
