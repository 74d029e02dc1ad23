"""The checks run inside the emulated A64FX that scripts/a64fx-emulated.sh boots (QEMU -cpu a64fx, -icount).

Runs the installed ``sectormon`` command against the guest's own kernel, PMU driver and ``perf``, and
prints one JSON summary between SUMMARY_BEGIN and SUMMARY_END on the serial console, where
read_console.py on the host finds it. Lines starting with "@@ " are progress the host shows live.
The guest runs Debian's python3 with nothing but the standard library and sectormon's own wheels.

What QEMU's A64FX model gives (the checks rely on it): MIDR 0x461f0010; a PMUv3 whose cycle counter
counts at 1 GHz of the virtual clock; INST_RETIRED only under -icount, where each instruction advances
that clock by 2**shift ns; STALL_FRONTEND/BACKEND implemented as always 0; every other event code
opens and never counts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = "sectormon/a64fx-emulated/1"
SUMMARY_BEGIN = "=== sectormon a64fx-emulated summary begin ==="
SUMMARY_END = "=== sectormon a64fx-emulated summary end ==="

# asm-generic/unistd.h, the table arm64 uses: __NR_perf_event_open 241.
AARCH64_PERF_EVENT_OPEN = 241
A64FX_IMPLEMENTER, A64FX_PART = 0x46, 0x001
COUNTED_BY_QEMU = ("CPU_CYCLES", "INST_RETIRED")  # INST_RETIRED needs -icount
AGREEMENT_PCT = 2.0
# sectormon and the command share one vCPU: under -icount QEMU runs the vCPUs round-robin, so every
# perf ioctl or read aimed at a thread on another vCPU (a cross-CPU call) would wait for that vCPU's
# whole turn. Sharing costs the command the CPU time sectormon spends building each frame, inside
# whichever group's timeslice it lands in, and extrapolation from time assumes the command ran evenly;
# a long interval keeps that error (about 40 ms of frame building per frame) well under the limit for
# events counted in a third of the timeslices (docs/perf.md).
CPU = 1
INTERVAL_S = 10
# A deterministic single-threaded busy loop of about 1.1e10 user-space instructions, 23 s of virtual
# time at shift 1: `--count 3` sees two interval frames, then the command's end and the final frame.
LOOPS = 9_000_000
BUSY = ("python3", "-c", f"x = 0\nfor i in range({LOOPS}):\n    x += i * i\nprint(x)")
BUSY_OUTPUT = str((LOOPS - 1) * LOOPS * (2 * LOOPS - 1) // 6)  # what it prints: the sum of i * i
SYSFS = Path("/sys")
# The simulated A64FX in the guest runs its Python model (the guest builds no compiled core); the
# host writes what its own core simulated for the same run (--sim-reference), and the guest must
# reproduce every simulated count.
SIM_ARGS: tuple[str, ...] = ("sim", "--summary", "--kernel", "scenario-a", "--size", "passes=200")
SIM_ARGS += ("--threads", "2", "--warmup", "0")
SIM_REFERENCE = Path("/opt/a64fx/sim_reference.json")
SIMULATED = ("cycles", "counts", "threads", "cmgs")


def progress(message: str) -> None:
    print(f"@@ {message}", flush=True)


@dataclass
class Results:
    """Named pass/fail checks plus the measurements the summary reports."""

    checks: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def check(self, name: str, ok: bool, detail: str) -> bool:
        self.checks.append({"name": name, "ok": bool(ok), "detail": detail})
        progress(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
        return bool(ok)

    def summary(self) -> dict[str, Any]:
        failed = [c["name"] for c in self.checks if not c["ok"]]
        return {
            "schema": SCHEMA,
            "ok": not failed and bool(self.checks),
            "failed": failed,
            "checks": self.checks,
            **self.data,
        }


def run(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """One command with its output captured; the time it reports is the guest's (virtual) time."""
    start = time.monotonic()
    result = subprocess.run(list(argv), capture_output=True, text=True, env=env, timeout=timeout, check=False)
    progress(
        f"{' '.join(argv[:6])}{' ...' if len(argv) > 6 else ''}: exit {result.returncode} "
        f"in {time.monotonic() - start:.1f} s guest time"
    )
    return result


def no_traceback(r: Results, name: str, result: subprocess.CompletedProcess[str]) -> bool:
    if "Traceback (most recent call last)" in result.stderr:
        last = result.stderr.strip().splitlines()[-1]
        return r.check(name, False, f"traceback on stderr: {last}")
    return True


def load_json(r: Results, name: str, result: subprocess.CompletedProcess[str]) -> Any:
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as exc:
        r.check(
            name,
            False,
            f"exit {result.returncode}, stdout is not JSON ({exc}); stderr: {result.stderr.strip()[-300:]}",
        )
        return None


def sysfs_pmus() -> dict[str, int]:
    """The armv8 core PMUs as the kernel lists them, with their perf type (read here, not by sectormon)."""
    base = SYSFS / "bus/event_source/devices"
    return {p.name: int((p / "type").read_text()) for p in sorted(base.glob("armv8_pmuv3*"))}


def midr() -> int:
    return int((SYSFS / "devices/system/cpu/cpu0/regs/identification/midr_el1").read_text(), 16)


def cpu_list(text: str) -> list[int]:
    cpus: list[int] = []
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def numa_nodes() -> list[list[int]]:
    nodes = sorted(SYSFS.glob("devices/system/node/node[0-9]*"), key=lambda p: int(p.name[4:]))
    return [cpus for cpus in (cpu_list((n / "cpulist").read_text()) for n in nodes) if cpus]


def icount_shift() -> int | None:
    match = re.search(r"\bsectormon\.icount_shift=(\d+)", Path("/proc/cmdline").read_text())
    return int(match.group(1)) if match else None


# ---------------------------------------------------------------- sectormon check --json


def check_host(r: Results) -> None:
    result = run(["sectormon", "check", "--json"])
    report = load_json(r, "check", result)
    if report is None or not no_traceback(r, "check", result):
        return
    r.check("check.exit", result.returncode == 0, f"exit {result.returncode}: {report['reason']}")
    host = report["host"]
    value = midr()
    implementer, part = value >> 24 & 0xFF, value >> 4 & 0xFFF
    r.check(
        "check.a64fx",
        host["is_a64fx"]
        and host["model"] == "Fujitsu A64FX"
        and (implementer, part) == (A64FX_IMPLEMENTER, A64FX_PART),
        f"MIDR {value:#010x} (implementer {implementer:#x}, part {part:#05x}); sectormon says "
        f"{host['model']!r}, is_a64fx {host['is_a64fx']}",
    )
    profile = report["profile"]
    r.check(
        "check.auto_profile",
        profile["name"] == "a64fx" and profile["chosen"].startswith("auto"),
        f"profile {profile['name']} ({profile['chosen']})",
    )
    pmus = sysfs_pmus()
    found = {p["name"]: p for p in host["pmus"] if p["core"]}
    r.check(
        "check.pmu",
        bool(pmus) and all(found.get(n, {}).get("type") == t for n, t in pmus.items()),
        f"sysfs has {pmus}; sectormon's core PMUs: {[(p['name'], p['type']) for p in found.values()]}",
    )
    syscall = report["syscall"]
    r.check(
        "check.syscall",
        syscall["machine"] == "aarch64" and syscall["perf_event_open"] == AARCH64_PERF_EVENT_OPEN,
        f"sectormon calls perf_event_open as syscall {syscall['perf_event_open']} on {syscall['machine']}; "
        f"the arm64 kernel's number is {AARCH64_PERF_EVENT_OPEN} (asm-generic/unistd.h)"
        + (f" ({syscall['error']})" if syscall["error"] else ""),
    )
    topo = report["topology"]
    online = cpu_list((SYSFS / "devices/system/cpu/online").read_text())
    nodes = numa_nodes()
    cmgs = [topo["cmgs"][k] for k in sorted(topo["cmgs"], key=int)]
    r.check(
        "check.topology",
        topo["cpus"] == online
        and cmgs == nodes
        and topo["domain"] == "cmg"
        and any("fewer CPUs than the 12 cores" in n for n in topo["notes"]),
        f"online CPUs {online}, NUMA nodes {nodes}; sectormon: CMGs {cmgs} ({topo['domain']}), "
        f"notes {topo['notes']}",
    )
    r.data["check"] = {
        "model": host["model"],
        "kernel": host["kernel"],
        "pmus": pmus,
        "syscall": syscall,
        "profile": profile,
        "topology": {"cmgs": topo["cmgs"], "notes": topo["notes"]},
        "notes": report["notes"],
    }
    r.data["guest"].update(
        {"midr": f"{value:#010x}", "online_cpus": online, "numa_nodes": nodes, "icount_shift": icount_shift()}
    )


# ---------------------------------------------------------------- sectormon events --probe --json


def check_probe(r: Results) -> None:
    result = run(["sectormon", "events", "--probe", "--json"])
    record = load_json(r, "events", result)
    if record is None or not no_traceback(r, "events", result):
        return
    states = {e["name"]: e["probe"] for e in record["events"]}
    counting = sorted(n for n, p in states.items() if p["state"] == "counts")
    zero = sorted(n for n, p in states.items() if p["state"] == "zero" and p["value"] == 0)
    other = sorted(set(states) - set(counting) - set(zero))
    expected = sorted(COUNTED_BY_QEMU if icount_shift() is not None else COUNTED_BY_QEMU[:1])
    why = f"; {other[0]}: {states[other[0]]['state']}, {states[other[0]]['reason']}" if other else ""
    r.check(
        "events.counts",
        counting == expected,
        f"counting: {', '.join(counting) or 'none'} (expected {', '.join(expected)}){why}",
    )
    r.check(
        "events.never_count",
        not other and len(zero) == len(states) - len(expected),
        f"{len(zero)} events open and never count (state 'zero', value 0); other states: "
        + (", ".join(f"{n}={states[n]['state']}" for n in other) or "none"),
    )
    metrics = {m["name"]: m["probe"] for m in record["metrics"]}
    computable = sorted(n for n, m in metrics.items() if m["state"] == "ok")
    r.check(
        "events.metrics_na",
        computable == ["IPC"] and len(metrics) > 1,
        f"computable here: {computable}; n/a: {len(metrics) - len(computable)} of {len(metrics)} metrics",
    )
    r.data["probe"] = {
        "counts": {n: states[n]["value"] for n in counting},
        "zero": len(zero),
        "other": {n: states[n]["state"] for n in other},
        "metrics_ok": computable,
        "metrics_na": len(metrics) - len(computable),
    }


def check_pmu_form(r: Results) -> None:
    """The sysfs PMU form (``armv8_pmuv3/event=0x11/``): type and config bits taken from sysfs."""
    pmus = sysfs_pmus()
    if not pmus:
        r.check("events.pmu_form", False, "no armv8_pmuv3* PMU in sysfs")
        return
    pmu = next(iter(pmus))
    profile = (
        "name: pmu-form\ndescription: the a64fx profile's cycles and instructions in the sysfs PMU form\n"
        "counters: 8\nmatch: {}\nconstants: {}\nevents:\n"
        f"  CYCLES: {{spec: '{pmu}/event=0x11/', scope: pe, unit: cycles, desc: CPU_CYCLES}}\n"
        f"  INSTRUCTIONS: {{spec: '{pmu}/event=0x8/', scope: pe, unit: instructions, desc: INST_RETIRED}}\n"
        "groups:\n  G: {desc: both, events: [CYCLES, INSTRUCTIONS]}\n"
        "metrics:\n"
        "  IPC: {formula: INSTRUCTIONS / CYCLES, unit: inst/cycle, better: higher, scope: any, desc: IPC}\n"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(profile)
    result = run(["sectormon", "events", "--probe", "--json", "--profile", f.name])
    record = load_json(r, "events.pmu_form", result)
    if record is None:
        return
    states = {e["name"]: e["probe"]["state"] for e in record["events"]}
    r.check(
        "events.pmu_form",
        states == {"CYCLES": "counts", "INSTRUCTIONS": "counts"},
        f"{pmu}/event=0x11/ and {pmu}/event=0x8/ (type {pmus[pmu]}): {states}",
    )


# ---------------------------------------------------------------- the monitor against perf stat


def perf_stat(r: Results, env: Mapping[str, str]) -> dict[str, float] | None:
    out = Path(tempfile.mkdtemp()) / "perf.csv"
    result = run(
        [
            "taskset",
            "-c",
            str(CPU),
            "perf",
            "stat",
            "-x,",
            "-o",
            str(out),
            "-e",
            "cycles:u,instructions:u",
            "--",
            *BUSY,
        ],
        env=env,
    )
    counts: dict[str, float] = {}
    for line in out.read_text().splitlines() if out.exists() else []:
        cells = line.split(",")
        if len(cells) > 2 and cells[2] in ("cycles:u", "instructions:u") and cells[0].isdigit():
            counts[cells[2]] = float(cells[0])
    if result.returncode != 0 or len(counts) != 2:
        r.check(
            "perf_stat", False, f"exit {result.returncode}, counted {counts}: {result.stderr.strip()[-300:]}"
        )
        return None
    return counts


def check_monitor(r: Results) -> None:
    env = dict(os.environ, PYTHONHASHSEED="0")  # the same instruction stream in both runs
    argv = [
        "taskset",
        "-c",
        str(CPU),
        "sectormon",
        "--json",
        "--interval",
        str(INTERVAL_S),
        "--count",
        "3",
        "--",
        *BUSY,
    ]
    result = run(argv, env=env)
    stdout, stderr = result.stdout, result.stderr
    if not no_traceback(r, "monitor", result):
        return
    try:
        records = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        r.check("monitor", False, f"stdout is not JSON Lines ({exc}); stderr: {stderr.strip()[-300:]}")
        return
    header, frames = (records[0], records[1:]) if records else ({}, [])
    finished = BUSY_OUTPUT in stderr
    said = [line for line in stderr.splitlines() if line.startswith("sectormon: ")]
    r.check(
        "monitor.exit",
        result.returncode == 0 and finished,
        f"exit {result.returncode}; the command {'ran to its end' if finished else 'did not finish'} "
        "(its output goes to stderr under --json)"
        + (f"; {said[-1]}" if result.returncode != 0 and said else ""),
    )
    profile = header.get("profile", {}).get("name")
    r.check(
        "monitor.header",
        profile == "a64fx" and header.get("cpu") == "Fujitsu A64FX",
        f"header: profile {profile}, cpu {header.get('cpu')!r}, "
        f"target {header.get('target', {}).get('mode')}",
    )
    interval = [f for f in frames if not f.get("final")]
    final = frames[-1] if frames and frames[-1].get("final") else None
    r.check(
        "monitor.frames",
        len(interval) >= 2 and final is not None,
        f"{len(interval)} interval frame(s) and {'a' if final else 'no'} final frame",
    )
    if final is None:
        return
    bad_ipc = []
    for f in frames:
        c, m = f["total"]["counts"], f["total"]["metrics"]
        cyc, inst, ipc = c.get("CPU_CYCLES"), c.get("INST_RETIRED"), m.get("IPC")
        expected = inst / cyc if cyc and inst is not None else None
        if ipc is None or expected is None:
            if ipc != expected:
                bad_ipc.append((f["t"], ipc))
        elif abs(ipc - expected) > 1e-9 * abs(expected):
            bad_ipc.append((f["t"], ipc))
    run_total = final["run"]["total"]
    ipc = run_total["metrics"].get("IPC")
    r.check(
        "monitor.ipc",
        ipc is not None and not bad_ipc,
        f"run IPC {ipc} = INST_RETIRED / CPU_CYCLES; frames where IPC disagrees with its counts: {bad_ipc}",
    )
    peer = perf_stat(r, env)
    if peer is None:
        return
    pairs = {"CPU_CYCLES": "cycles:u", "INST_RETIRED": "instructions:u"}
    agreement = {}
    for event, perf_name in pairs.items():
        ours = run_total["counts"].get(event)
        diff = None if ours is None else 100.0 * (ours - peer[perf_name]) / peer[perf_name]
        agreement[event] = diff
        r.check(
            f"agreement.{event}",
            diff is not None and abs(diff) <= AGREEMENT_PCT,
            f"sectormon {ours:.6g} vs perf stat {perf_name} {peer[perf_name]:.6g}: "
            + (f"{diff:+.2f} %" if diff is not None else "not counted")
            + f" (limit {AGREEMENT_PCT} %; coverage {run_total['coverage'].get(event)})",
        )
    r.data["monitor"] = {
        "frames": len(frames),
        "final_t_s": final["t"],
        "overhead": final["overhead"],
        "counts": {e: run_total["counts"].get(e) for e in pairs},
        "coverage": {e: run_total["coverage"].get(e) for e in pairs},
        "IPC": ipc,
        "warnings": [ln for ln in stderr.splitlines() if ln.startswith("sectormon:")],
    }
    r.data["perf_stat"] = peer
    r.data["agreement_pct"] = agreement


NATIVE_WHEELS = r"""
import gzip
from prometheus_client.utils import floatToGoString
from sectormon.export.scrape import gzip_body
from sectormon.export.values import go_floats
values = (0.5, 3.0, 1234567.0, 2.5e17, 1e-7, -42.25)
assert go_floats(values) == [floatToGoString(v) for v in values], go_floats(values)
body = b"sectormon_probe_ratio{cmg=\"0\"} 0.25\n" * 1000
assert gzip.decompress(gzip_body(body)) == body
print("ok")
"""
"""The compiled runtime dependencies on aarch64: the scrape's value formatting (orjson) and gzip
(ISA-L), each against the reference it must equal."""


def check_native_wheels(r: Results) -> None:
    result = run([sys.executable, "-c", NATIVE_WHEELS])
    detail = result.stdout.strip() or (result.stderr.strip().splitlines() or ["no output"])[-1]
    r.check("native_wheels", result.returncode == 0 and result.stdout.strip() == "ok", detail)


def _simulated(summary: Mapping[str, Any]) -> dict[str, Any]:
    return {key: summary[key] for key in SIMULATED}


def check_sim_python_model(r: Results) -> None:
    name = "sim_python_model"
    result = run(["sectormon", *SIM_ARGS])
    if not no_traceback(r, name, result):
        return
    summary = load_json(r, name, result)
    if summary is None:
        return
    core = summary.get("core")
    if not SIM_REFERENCE.exists():
        r.check(name, core == "python", f"ran on core {core}; no host reference (the host had no .venv)")
        return
    reference = json.loads(SIM_REFERENCE.read_text())
    mine = _simulated(summary)
    differ = [key for key in SIMULATED if mine[key] != reference["simulated"][key]]
    detail = f"core {core} here, {reference['core']} on the host; {mine['cycles']} cycles; " + (
        f"differs in {', '.join(differ)}" if differ else "every simulated count equal"
    )
    r.check(name, core == "python" and not differ, detail)


def host_reference() -> int:
    """On the host: what its sectormon simulates for SIM_ARGS, as JSON for the guest's check."""
    sectormon = Path(sys.executable).with_name("sectormon")
    result = subprocess.run([str(sectormon), *SIM_ARGS], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        print(result.stderr, file=sys.stderr)
        return 1
    summary = json.loads(result.stdout)
    print(json.dumps({"core": summary["core"], "simulated": _simulated(summary)}))
    return 0


def main() -> int:
    results = Results()
    results.data["guest"] = {"kernel": os.uname().release, "machine": os.uname().machine}
    steps: list[Callable[[Results], None]] = [
        check_host,
        check_native_wheels,
        check_probe,
        check_pmu_form,
        check_monitor,
        check_sim_python_model,
    ]
    for step in steps:
        try:
            step(results)
        except Exception as exc:  # any failure of the checks themselves is a failed check, never a hang
            results.check(step.__name__, False, f"{type(exc).__name__}: {exc}")
            traceback.print_exc(file=sys.stdout)
    perf = subprocess.run(["perf", "--version"], capture_output=True, text=True, check=False)
    results.data["guest"]["perf"] = perf.stdout.strip()
    summary = results.summary()
    print(SUMMARY_BEGIN, json.dumps(summary, sort_keys=False), SUMMARY_END, sep="\n", flush=True)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(host_reference() if sys.argv[1:] == ["--sim-reference"] else main())
