"""The emulated-A64FX checks (scripts/a64fx/) on the host: the console reader, and the guest's check
logic fed by real ``sectormon check``/``events`` output on the qemu-a64fx fake tree (QEMU itself is
run by scripts/a64fx-emulated.sh in CI, not by the test suite)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sectormon import cli
from sectormon.commands import check
from sectormon.perf import abi
from sectormon.perf.probe import ProbeResult

REPO = Path(__file__).resolve().parents[2]
TREE = REPO / "tests" / "fixtures" / "sysfs" / "qemu-a64fx"
ROOTS = ["--sysfs-root", str(TREE / "sys"), "--procfs-root", str(TREE / "proc")]


@pytest.fixture
def scripts(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, ModuleType]]:
    monkeypatch.syspath_prepend(str(REPO / "scripts" / "a64fx"))
    import guest_checks
    import read_console

    yield guest_checks, read_console


def console_with(summary: dict[str, Any], begin: str, end: str) -> str:
    return "\n".join(
        [
            "[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x461f0010]",
            "@@ up: 6.1.0-56-arm64, 4 CPUs",
            begin + "\r",
            json.dumps(summary) + "\r",
            end + "\r",
            "[   30.152158] reboot: Power down",
        ]
    )


def summary_of(checks: list[tuple[str, bool, str]]) -> dict[str, Any]:
    failed = [name for name, ok, _ in checks if not ok]
    return {
        "schema": "sectormon/a64fx-emulated/1",
        "ok": not failed,
        "failed": failed,
        "checks": [{"name": n, "ok": ok, "detail": d} for n, ok, d in checks],
    }


def test_reader_finds_the_summary_among_kernel_lines(scripts: tuple[ModuleType, ModuleType]) -> None:
    guest, reader = scripts
    summary = summary_of([("check.exit", True, "exit 0")])
    console = console_with(summary, guest.SUMMARY_BEGIN, guest.SUMMARY_END)
    assert reader.find_summary(console) == summary
    assert reader.verdict(summary, console) == (0, ["a64fx-emulated: 1 passed, 0 failed"])


def test_reader_names_every_failed_check(scripts: tuple[ModuleType, ModuleType]) -> None:
    _, reader = scripts
    summary = summary_of(
        [
            ("check.syscall", False, "sectormon calls perf_event_open as syscall 298"),
            ("events.counts", False, "counting:  (expected CPU_CYCLES, INST_RETIRED)"),
            ("check.a64fx", True, "MIDR 0x461f0010"),
        ]
    )
    status, lines = reader.verdict(summary, "")
    assert status == 1
    assert lines == [
        "a64fx-emulated: FAILED check check.syscall: sectormon calls perf_event_open as syscall 298",
        "a64fx-emulated: FAILED check events.counts: counting:  (expected CPU_CYCLES, INST_RETIRED)",
        "a64fx-emulated: 1 passed, 2 failed",
    ]


def test_no_summary_shows_the_end_of_the_console(scripts: tuple[ModuleType, ModuleType]) -> None:
    guest, reader = scripts
    console = "\n".join(["[ 0.1] Kernel panic - not syncing: Attempted to kill the idle task!", ""])
    assert reader.find_summary(console) is None
    cut = console_with(summary_of([]), guest.SUMMARY_BEGIN, guest.SUMMARY_END).replace('"schema"', '"sch')
    assert reader.find_summary(cut) is None  # a summary cut mid-line is no summary
    status, lines = reader.verdict(None, console)
    assert status == 1 and lines[0].endswith("the guest printed no summary; the console ended with:")
    assert lines[1].endswith("Attempted to kill the idle task!")


def test_an_empty_summary_is_not_a_pass(scripts: tuple[ModuleType, ModuleType]) -> None:
    guest, reader = scripts
    empty = guest.Results().summary()
    assert empty["ok"] is False
    assert reader.verdict(empty, "")[0] == 1


def test_reader_command_prints_the_summary_and_exits_1_on_failure(
    scripts: tuple[ModuleType, ModuleType], tmp_path: Path
) -> None:
    guest, _ = scripts
    summary = summary_of([("agreement.INST_RETIRED", False, "-2.89 % (limit 2.0 %)")])
    log = tmp_path / "console.log"
    log.write_text(console_with(summary, guest.SUMMARY_BEGIN, guest.SUMMARY_END))
    done = subprocess.run(
        ["python3", str(REPO / "scripts" / "a64fx" / "read_console.py"), str(log)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert json.loads(done.stdout) == summary
    assert len(done.stdout.splitlines()) == 2 + len(summary) + len(summary["checks"]) + 1
    assert done.stderr.splitlines() == [
        "a64fx-emulated: FAILED check agreement.INST_RETIRED: -2.89 % (limit 2.0 %)",
        "a64fx-emulated: 0 passed, 1 failed",
    ]


@pytest.mark.parametrize(
    ("text", "cpus"), [("0-3\n", [0, 1, 2, 3]), ("0-1,12-13", [0, 1, 12, 13]), ("5", [5]), ("\n", [])]
)
def test_cpu_list(scripts: tuple[ModuleType, ModuleType], text: str, cpus: list[int]) -> None:
    guest, _ = scripts
    assert guest.cpu_list(text) == cpus


# ---------------------------------------------------------------- the guest's checks on the fake tree


def qemu_probe(events: Sequence[tuple[str, str]], *, exclude_kernel: bool = True) -> dict[str, ProbeResult]:
    return {
        name: ProbeResult(name, "counts", value=1000)
        if name in ("CPU_CYCLES", "INST_RETIRED")
        else ProbeResult(name, "zero", reason="opened and ran but counted nothing", value=0)
        for name, _spec in events
    }


class _Uname:
    def __init__(self, machine: str) -> None:
        self.machine = machine


@pytest.fixture
def guest_on_tree(
    scripts: tuple[ModuleType, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> Iterator[ModuleType]:
    """guest_checks reading the fake tree, its ``sectormon`` commands run in-process on that tree."""
    guest, _ = scripts

    def run(argv: Sequence[str], **_: Any) -> subprocess.CompletedProcess[str]:
        assert argv[0] == "sectormon"
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main([*argv[1:], *ROOTS])
        return subprocess.CompletedProcess(list(argv), code, out.getvalue(), err.getvalue())

    monkeypatch.setattr(guest, "SYSFS", TREE / "sys")
    monkeypatch.setattr(guest, "run", run)
    monkeypatch.setattr(guest, "icount_shift", lambda: 1)
    monkeypatch.setattr("sectormon.perf.probe.probe_events", qemu_probe)
    yield guest


def test_guest_checks_pass_on_what_the_emulator_shows(
    guest_on_tree: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check.os, "uname", lambda: _Uname("aarch64"))
    results = guest_on_tree.Results()
    results.data["guest"] = {}
    guest_on_tree.check_host(results)
    guest_on_tree.check_probe(results)
    assert [c["name"] for c in results.checks if not c["ok"]] == []
    assert [c["name"] for c in results.checks] == [
        "check.exit",
        "check.a64fx",
        "check.auto_profile",
        "check.pmu",
        "check.syscall",
        "check.topology",
        "events.counts",
        "events.never_count",
        "events.metrics_na",
    ]
    assert results.data["probe"]["metrics_ok"] == ["IPC"]


def test_the_wrong_syscall_number_fails_check_syscall(
    guest_on_tree: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check.os, "uname", lambda: _Uname("aarch64"))
    monkeypatch.setitem(abi.SYSCALL_NUMBERS, "aarch64", 298)
    results = guest_on_tree.Results()
    results.data["guest"] = {}
    guest_on_tree.check_host(results)
    (failed,) = [c for c in results.checks if not c["ok"]]
    assert failed["name"] == "check.syscall"
    assert failed["detail"].startswith("sectormon calls perf_event_open as syscall 298 on aarch64; ")
    assert "the arm64 kernel's number is 241" in failed["detail"]


def test_events_that_stop_counting_fail_events_counts(
    guest_on_tree: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    def nothing_counts(
        events: Sequence[tuple[str, str]], *, exclude_kernel: bool = True
    ) -> dict[str, ProbeResult]:
        return {name: ProbeResult(name, "unsupported", reason="ENOSYS: ...") for name, _spec in events}

    monkeypatch.setattr("sectormon.perf.probe.probe_events", nothing_counts)
    results = guest_on_tree.Results()
    guest_on_tree.check_probe(results)
    failed = {c["name"]: c["detail"] for c in results.checks if not c["ok"]}
    assert set(failed) == {"events.counts", "events.never_count", "events.metrics_na"}
    assert failed["events.counts"] == (
        "counting: none (expected CPU_CYCLES, INST_RETIRED); CPU_CYCLES: unsupported, ENOSYS: ..."
    )


def test_the_guests_python_model_must_reproduce_the_hosts_simulation(
    scripts: tuple[ModuleType, ModuleType],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The host writes what its sectormon simulates (``--sim-reference``); the guest, which builds no
    compiled core, runs the same simulation on the Python model and must match every count."""
    guest, _ = scripts
    assert guest.host_reference() == 0
    reference = json.loads(capsys.readouterr().out)

    def run(argv: Sequence[str], **_: Any) -> subprocess.CompletedProcess[str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(list(argv[1:]))
        return subprocess.CompletedProcess(list(argv), code, out.getvalue(), err.getvalue())

    monkeypatch.setattr(guest, "run", run)
    monkeypatch.setenv("SECTORMON_SIM_CORE", "python")
    monkeypatch.setattr(guest, "SIM_REFERENCE", tmp_path / "sim_reference.json")
    guest.SIM_REFERENCE.write_text(json.dumps(reference))
    results = guest.Results()
    guest.check_sim_python_model(results)
    ((name, ok, detail),) = [(c["name"], c["ok"], c["detail"]) for c in results.checks]
    assert (name, ok) == ("sim_python_model", True), detail
    assert detail.endswith("every simulated count equal")

    reference["simulated"]["counts"]["L1D_CACHE_REFILL"] += 1
    guest.SIM_REFERENCE.write_text(json.dumps(reference))
    results = guest.Results()
    guest.check_sim_python_model(results)
    ((check_row),) = results.checks
    assert (check_row["ok"], check_row["detail"].rsplit("; ", 1)[1]) == (False, "differs in counts")
