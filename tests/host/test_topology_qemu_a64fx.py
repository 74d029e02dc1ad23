"""The A64FX as QEMU ``-cpu a64fx -smp 4`` shows it to Debian's arm64 kernel (fake tree ``qemu-a64fx``).

The tree is what scripts/a64fx-emulated.sh found in its guest: A64FX MIDR, 4 CPUs in one NUMA node
(fewer than a CMG), a PMU named ``armv8_pmuv3`` (device tree) and perf_event_paranoid 3.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from sectormon import cli
from sectormon.commands import check
from sectormon.host import roots
from sectormon.host.facts import collect_hostinfo
from sectormon.host.topology import Topology, load_topology
from sectormon.perf import abi
from sectormon.perf.events import parse_event
from sectormon.perf.probe import ProbeResult
from sectormon.perf.syscall import syscall_number

TREE = Path(__file__).resolve().parent.parent / "fixtures" / "sysfs" / "qemu-a64fx"
SYS, PROC = TREE / "sys", TREE / "proc"
ROOTS = ["--sysfs-root", str(SYS), "--procfs-root", str(PROC)]
# What QEMU's PMU counts under -icount; every other event of the a64fx profile opens and reads 0.
QEMU_COUNTS = {"CPU_CYCLES", "INST_RETIRED"}


def qemu_probe(events: Sequence[tuple[str, str]], *, exclude_kernel: bool = True) -> dict[str, ProbeResult]:
    return {
        name: ProbeResult(name, "counts", value=1000)
        if name in QEMU_COUNTS
        else ProbeResult(name, "zero", reason="opened and ran but counted nothing", value=0)
        for name, _spec in events
    }


def qemu_topology(tree: Path = TREE) -> Topology:
    with roots.use(sysfs=tree / "sys", procfs=tree / "proc"):
        return load_topology()


@pytest.fixture
def probed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sectormon.perf.probe.probe_events", qemu_probe)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(args)
    return code, capsys.readouterr().out


def test_four_cpus_form_one_cmg_and_say_so() -> None:
    topo = qemu_topology()
    assert topo.is_a64fx and topo.model == "Fujitsu A64FX"
    assert topo.domain == "cmg" and topo.cmgs == {0: (0, 1, 2, 3)} and topo.excluded == ()
    assert topo.variant == ""  # 4 compute CPUs match no A64FX part
    (note,) = topo.cmg_notes()
    assert note.startswith("CMG0 = CPUs 0-3: fewer CPUs than the 12 cores of an A64FX CMG")


def test_whole_cmgs_need_no_note() -> None:
    fx700 = TREE.parent / "fx700"
    assert qemu_topology(fx700).cmg_notes() == []


def test_the_device_tree_pmu_name_is_a_core_pmu() -> None:
    with roots.use(sysfs=SYS, procfs=PROC):
        host = collect_hostinfo()
    assert host.is_a64fx and host.arch == "aarch64" and host.paranoid == 3
    assert [(p.name, p.type) for p in host.pmus if p.core] == [("armv8_pmuv3", 8)]


@pytest.mark.parametrize(
    ("spec", "config"), [("armv8_pmuv3/event=0x11/", 0x11), ("armv8_pmuv3/event=0x3e8/", 0x3E8)]
)
def test_pmu_form_takes_type_and_bits_from_sysfs(spec: str, config: int) -> None:
    event = parse_event(spec, sysfs_root=SYS)
    assert (event.type, event.config) == (8, config)


def test_raw_codes_go_to_perf_type_raw() -> None:
    event = parse_event("r3e8", sysfs_root=SYS)
    assert (event.type, event.config) == (abi.PERF_TYPE_RAW, 0x3E8)


def test_aarch64_uses_the_generic_syscall_table() -> None:
    assert syscall_number("aarch64") == 241
    assert syscall_number("x86_64") == 298


def test_check_reports_the_syscall_the_notes_and_the_auto_profile(
    probed: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check.os, "uname", lambda: _Uname("aarch64"))
    code, out = run(["check", "--json", *ROOTS], capsys)
    assert code == 0
    report = json.loads(out)
    assert report["syscall"] == {"machine": "aarch64", "perf_event_open": 241, "error": ""}
    assert report["profile"]["name"] == "a64fx" and report["profile"]["chosen"] == "auto: A64FX detected"
    assert report["topology"]["notes"] == qemu_topology().cmg_notes()
    assert report["topology"]["notes"][0] in report["notes"]
    zero = [n for n, e in report["probe"]["events"].items() if e["state"] == "zero"]
    assert sorted(set(report["probe"]["events"]) - set(zero)) == sorted(QEMU_COUNTS)


def test_check_text_names_the_syscall(
    probed: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check.os, "uname", lambda: _Uname("riscv64"))
    code, out = run(["check", *ROOTS], capsys)
    assert code == 0
    line = next(line for line in out.splitlines() if "perf_event_open" in line.split()[:1])
    assert "not available: perf_event_open is not wired up for architecture 'riscv64'" in line


def test_events_probe_marks_metrics_of_never_counting_events_na(
    probed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(["events", "--probe", "--json", *ROOTS], capsys)
    assert code == 0
    metrics = {m["name"]: m["probe"] for m in json.loads(out)["metrics"]}
    assert metrics["IPC"] == {"state": "ok", "not_counting": []}
    assert metrics["mem_stall_rate"] == {"state": "n/a", "not_counting": ["LD_COMP_WAIT_L2_MISS"]}
    # energy_per_inst reads INST_RETIRED and, through energy_total, the three energy counters
    assert metrics["energy_per_inst"]["state"] == "n/a"
    assert set(metrics["energy_per_inst"]["not_counting"]) == {"EA_CORE", "EA_L2", "EA_MEMORY"}
    assert [n for n, m in metrics.items() if m["state"] == "ok"] == ["IPC"]


def test_events_probe_text_lists_the_na_metrics(probed: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["events", "--probe", *ROOTS], capsys)
    assert code == 0
    line = out.splitlines()[-1]
    assert line.startswith("Metrics n/a here (an input does not count): L1D_miss_rate, ")
    assert "IPC" not in line.split(": ", 1)[1].split(", ")


class _Uname:
    def __init__(self, machine: str) -> None:
        self.machine = machine
