"""``sectormon check``: report contents, exit codes, text layout (probe faked), and the real command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from sectormon import cli
from sectormon.perf.probe import ProbeResult
from tests.e2e.helpers import sectormon_command

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sysfs"


def roots(name: str) -> list[str]:
    return ["--sysfs-root", str(FIXTURES / name / "sys"), "--procfs-root", str(FIXTURES / name / "proc")]


ProbeFn = Callable[..., dict[str, ProbeResult]]
Install = Callable[..., None]


def fake_probe(states: dict[str, str], default: str = "counts") -> ProbeFn:
    def probe(events: Sequence[tuple[str, str]], *, exclude_kernel: bool = True) -> dict[str, ProbeResult]:
        out = {}
        for name, _spec in events:
            state = states.get(name, default)
            reason = (
                "ENOENT: event x (y) is not supported (ENOENT): no such event (fix: drop it)"
                if state == "unsupported"
                else ""
            )
            out[name] = ProbeResult(name, state, reason=reason, value=123 if state == "counts" else 0)
        return out

    return probe


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Install:
    def install(states: dict[str, str], default: str = "counts") -> None:
        monkeypatch.setattr("sectormon.perf.probe.probe_events", fake_probe(states, default))

    return install


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_fx1000_all_counting(probe: Install, capsys: pytest.CaptureFixture[str]) -> None:
    probe({})
    code, out, err = run(["check", "--json", *roots("fx1000")], capsys)
    assert code == 0 and err == ""
    report = json.loads(out)
    assert report["schema"] == "sectormon/check/1"
    assert report["ok"] is True
    assert report["host"]["is_a64fx"] and report["host"]["arch"] == "aarch64"
    assert report["host"]["perf_event_paranoid"] == 2
    assert report["topology"]["cmgs"]["0"] == list(range(12, 24))
    assert report["topology"]["domain"] == "cmg" and "12 A64FX cores" in report["topology"]["meaning"]
    assert report["profile"]["name"] == "a64fx" and report["profile"]["chosen"] == "auto: A64FX detected"
    assert [g["status"] for g in report["groups"]] == ["ok"] * 6
    assert report["probe"]["events"]["L2_MISS_COUNT"] == {"state": "counts", "value": 123, "reason": ""}
    assert report["reason"] == "groups SC1, SC2, SC3, SC4, SC5, SC6 can count"


def test_fx1000_text_layout(probe: Install, capsys: pytest.CaptureFixture[str]) -> None:
    probe({"L1_PIPE0_VAL": "zero", "EA_CORE": "unsupported"})
    code, out, _ = run(["check", *roots("fx1000")], capsys)
    assert code == 0
    lines = out.splitlines()
    assert "  A64FX                yes (48c)" in lines
    assert "  CPU model            Fujitsu A64FX" in lines
    assert any(
        line.startswith("  perf_event_paranoid  2: users may count their own processes in user space only")
        for line in lines
    )
    assert "  armv8_pmuv3_0     8  core" in lines
    assert "  CMG0    12  12-23" in lines and "  CMG3    12  48-59" in lines
    assert "  assistant cores 0-1 are excluded" in lines
    assert any(line.split()[:5] == ["L2_MISS_COUNT", "0x0309", "cmg", "counts", "123"] for line in lines)
    assert any(
        line.split()[:4] == ["EA_CORE", "0x01e0", "pe", "unsupported"] and "ENOENT: no such event" in line
        for line in lines
    )
    assert any(
        line.split()[:3] == ["SC5", "partial", "7/8"] and "unsupported: EA_CORE" in line for line in lines
    )
    assert any(line.split()[:3] == ["SC3", "ok", "7/8"] and "zero: L1_PIPE0_VAL" in line for line in lines)
    assert any("suspicious, not a measured zero" in line for line in lines)
    assert lines[-1].startswith("OK: sectormon can count here: groups SC1")
    # Columns line up: every probe row starts its STATE column at the same offset as the header.
    header = next(line for line in lines if line.lstrip().startswith("EVENT"))
    col = header.index("STATE")
    rows = [line for line in lines if line.split()[:1] and line.split()[0] in ("CPU_CYCLES", "EA_MEMORY")]
    assert rows and all(line[col:].split()[0] in ("counts", "zero", "unsupported") for line in rows)


def test_nothing_counts_exits_1_with_the_reason(probe: Install, capsys: pytest.CaptureFixture[str]) -> None:
    probe({}, default="unsupported")
    code, out, err = run(["check", *roots("fx1000")], capsys)
    assert code == 1
    assert "NOT OK" in out.splitlines()[-1]
    assert err.strip() == "sectormon: check: no event of profile a64fx counts here"


def test_probe_unavailable_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(events: Sequence[tuple[str, str]], *, exclude_kernel: bool = True) -> dict[str, ProbeResult]:
        raise OSError("no perf here")

    monkeypatch.setattr("sectormon.perf.probe.probe_events", broken)
    code, out, err = run(["check", "--json", *roots("x86")], capsys)
    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False and report["probe"]["error"]
    assert "cannot probe events" in err


def test_pmu_less_generic_host_rotates_the_software_groups(
    probe: Install, capsys: pytest.CaptureFixture[str]
) -> None:
    hw = ("CYCLES", "INSTRUCTIONS", "CACHE_REFERENCES", "CACHE_MISSES", "BRANCHES", "BRANCH_MISSES")
    probe({name: "unsupported" for name in hw})
    code, out, _ = run(["check", "--json", *roots("x86")], capsys)
    assert code == 0
    report = json.loads(out)
    assert report["profile"]["name"] == "generic" and report["profile"]["chosen"] == "auto: not an A64FX"
    assert {g["group"]: g["status"] for g in report["groups"]} == {
        "HW1": "dropped",
        "HW2": "dropped",
        "SW1": "ok",
        "SW2": "ok",
        "SW3": "ok",
    }
    assert (
        report["reason"]
        == "groups SW1, SW2, SW3 can count; HW1, HW2 dropped (no event of theirs counts here)"
    )
    assert report["topology"]["domain"] == "l2"


def test_unprivileged_user_is_told_cmg_events_are_unavailable(
    probe: Install,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    probe({})
    proc = tmp_path / "proc"
    shutil.copytree(FIXTURES / "fx1000" / "proc", proc)
    (proc / "self").mkdir()
    (proc / "self" / "status").write_text("CapEff:\t0000000000000000\n")
    code, out, _ = run(
        ["check", "--json", "--sysfs-root", str(FIXTURES / "fx1000" / "sys"), "--procfs-root", str(proc)],
        capsys,
    )
    assert code == 0
    report = json.loads(out)
    assert report["host"]["cpu_wide_counting"] is False
    assert any(n.startswith("CMG-scoped events (L2_MISS_WAIT, L2_MISS_COUNT") for n in report["notes"])


def test_profile_option_and_bad_profile(
    probe: Install, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    probe({})
    code, out, _ = run(["check", "--json", "--profile", "generic", *roots("fx700")], capsys)
    assert code == 0 and json.loads(out)["profile"]["chosen"] == "--profile"
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncounters: 2\nevents: {A: {code: 1}}\ngroups: {G: {events: [B]}}\n")
    code, out, err = run(["check", "--profile", str(bad), *roots("fx700")], capsys)
    assert code == 2 and out == ""
    assert err.splitlines()[0] == f"sectormon: {bad}:4: group G: unknown event 'B' (define it under events:)"


# ---------------------------------------------------------------- the installed command (real probe)


@pytest.mark.e2e
def test_e2e_check_text() -> None:
    proc = subprocess.run([sectormon_command(), "check"], capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    out = proc.stdout
    for section in (
        "Host",
        "PMUs (/sys/bus/event_source/devices)",
        "Topology: ",
        "Profile: ",
        "Event probe",
        "Groups",
    ):
        assert any(line.startswith(section) for line in out.splitlines()), section
    assert "perf_event_paranoid" in out
    last = out.splitlines()[-1]
    assert last.startswith("OK:") == (proc.returncode == 0)


@pytest.mark.e2e
def test_e2e_check_json_matches_the_host() -> None:
    proc = subprocess.run(
        [sectormon_command(), "check", "--json"], capture_output=True, text=True, timeout=120
    )
    report = json.loads(proc.stdout)
    assert report["ok"] == (proc.returncode == 0)
    assert report["host"]["kernel"] == Path("/proc/sys/kernel/osrelease").read_text().strip()
    assert report["host"]["perf_event_paranoid"] == int(
        Path("/proc/sys/kernel/perf_event_paranoid").read_text()
    )
    assert "software" in {p["name"] for p in report["host"]["pmus"]}
    events = report["probe"]["events"]
    assert events and all(e["state"] in ("counts", "zero", "unsupported") for e in events.values())
    if report["profile"]["name"] == "generic" and report["host"]["privileged"]:
        # Software events exist on every Linux host: task-clock must count, so check must say OK.
        assert events["TASK_CLOCK"]["state"] == "counts" and events["TASK_CLOCK"]["value"] > 0
        assert proc.returncode == 0


@pytest.mark.e2e
def test_e2e_bad_profile_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncounters: 2\nevents:\n  A: {code: 1, scope: core}\ngroups: {G: {events: [A]}}\n")
    proc = subprocess.run(
        [sectormon_command(), "check", "--profile", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"sectormon: {bad}:4: event A: unknown scope 'core' (use pe or cmg)"


@pytest.mark.e2e
def test_e2e_check_as_an_unprivileged_user(tmp_path: Path) -> None:
    """The permission path as users meet it: no capabilities, perf_event_paranoid applies."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to drop to an unprivileged user")
    command = [
        setpriv,
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        sectormon_command(),
        "check",
        "--json",
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    if proc.returncode not in (0, 1) or not proc.stdout.startswith("{"):
        pytest.skip(f"cannot run sectormon as uid 65534 here: {proc.stderr.strip()[:200]}")
    report = json.loads(proc.stdout)
    assert report["host"]["privileged"] is False and report["host"]["capabilities"] == []
    paranoid = report["host"]["perf_event_paranoid"]
    assert report["host"]["cpu_wide_counting"] == (paranoid is not None and paranoid <= 0)
    assert report["ok"] == (proc.returncode == 0)
    if paranoid is not None and paranoid >= 3:
        assert not report["ok"]


@pytest.mark.parametrize(("cap_eff", "allowed"), [("000001ffffffffff", True), ("0000000000000000", False)])
def test_kernel_mode_events_name_include_kernel_and_whether_it_is_allowed(
    cap_eff: str,
    allowed: bool,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`check` said root with CAP_PERFMON bypasses perf_event_paranoid, then marked context switches
    unsupported because they "need perf_event_paranoid <= 1 or CAP_PERFMON": what is true is that
    counting is user space only by default, and --include-kernel is the switch (allowed or not)."""
    from sectormon.perf import probe as perf_probe

    def probe(events: Sequence[tuple[str, str]], *, exclude_kernel: bool = True) -> dict[str, ProbeResult]:
        return {name: perf_probe.probe_event(name, "context-switches") for name, _spec in events}

    monkeypatch.setattr("sectormon.perf.probe.probe_events", probe)
    proc = tmp_path / "proc"
    shutil.copytree(FIXTURES / "x86" / "proc", proc)
    (proc / "self").mkdir(exist_ok=True)
    (proc / "self" / "status").write_text(f"CapEff:\t{cap_eff}\n")
    sysfs = ["--sysfs-root", str(FIXTURES / "x86" / "sys"), "--procfs-root", str(proc)]
    _, out, _ = run(["check", *sysfs], capsys)
    assert "CAP_PERFMON" not in "".join(line for line in out.splitlines() if "user-only" in line)
    assert "--include-kernel counts kernel mode" in out
    host_line = next(line for line in out.splitlines() if "Kernel counting" in line)
    assert ("--include-kernel allowed" in host_line) == allowed, host_line
    _, out, _ = run(["check", "--json", *sysfs], capsys)
    report = json.loads(out)
    assert report["probe"]["include_kernel_allowed"] is allowed
    note = next(n for n in report["notes"] if "--include-kernel counts them" in n)
    assert ("not allowed here" in note) != allowed, note
