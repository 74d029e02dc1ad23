"""``sectormon check``: can sectormon count here, and what exactly will it see?

Shows the CPU, kernel, perf_event_paranoid and what it allows, the PMUs, the topology (and what
"CMG" means on this host), the profile chosen, and a probe of every event of that profile. Exits 0
when at least one group has an event that counts, 1 (with the reason) when nothing can be counted.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from sectormon.commands.options.output import write_stdout
from sectormon.errors import SectormonError
from sectormon.files.text import clipped, print_message, printable
from sectormon.host import roots
from sectormon.host.facts import HostInfo, collect_hostinfo, paranoid_meaning
from sectormon.host.topology import Topology, format_cpu_list, load_topology
from sectormon.io import strict_json
from sectormon.perf import probe as perf_probe
from sectormon.perf.probe import ProbeResult
from sectormon.perf.syscall import syscall_number
from sectormon.profiles.model import EventDef, Profile
from sectormon.profiles.resolve import resolve_profile

SCHEMA = "sectormon/check/1"
STATE_NOTE = {
    "counts": "opened and counted",
    "zero": "opens but never counted: suspicious, not a measured zero",
    "unsupported": "cannot be opened here",
}


def root_folder(value: str) -> str:
    """A fake sysfs or procfs root (``--sysfs-root``, ``--procfs-root``): an existing folder,
    checked when the option is read, so a bad one is one usage line (a 256-character name raised
    ENAMETOOLONG from deep in the topology reader)."""
    shown = clipped(value)
    try:
        if stat.S_ISDIR(os.stat(value).st_mode):
            return value
        problem = "not a folder"
    except (OSError, ValueError) as exc:
        too_long = isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG
        problem = "the name is too long" if too_long else getattr(exc, "strerror", None) or str(exc)
    raise argparse.ArgumentTypeError(f"{shown}: {printable(problem)} (give an existing folder)")


def add_host_options(parser: argparse.ArgumentParser) -> None:
    """``--profile`` and the (hidden) fake-root options shared by ``check`` and ``events``."""
    parser.add_argument(
        "--profile",
        metavar="NAME|PATH",
        help="a built-in profile (a64fx, generic) or a YAML file (default: the one matching this host)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--sysfs-root", type=root_folder, help=argparse.SUPPRESS)
    parser.add_argument("--procfs-root", type=root_folder, help=argparse.SUPPRESS)


def host_roots(args: argparse.Namespace) -> AbstractContextManager[None]:
    """The host read from the fake trees of the (hidden) ``--sysfs-root``/``--procfs-root``, the
    real ones without them (the event probe always opens events on this host)."""
    return roots.use(procfs=args.procfs_root, sysfs=args.sysfs_root)


def configure(parser: argparse.ArgumentParser) -> None:
    add_host_options(parser)


def syscall_info() -> dict[str, Any]:
    """The perf_event_open syscall number the perf wrapper calls on this machine (or why it has none)."""
    machine = os.uname().machine
    try:
        return {"machine": machine, "perf_event_open": syscall_number(machine), "error": ""}
    except SectormonError as exc:
        return {"machine": machine, "perf_event_open": None, "error": str(exc)}


def run_probe(events: Sequence[EventDef]) -> tuple[dict[str, ProbeResult], str]:
    """(results, "") or ({}, reason the probe could not run)."""
    try:
        return perf_probe.probe_events([(e.name, e.spec) for e in events], exclude_kernel=True), ""
    except (SectormonError, OSError) as exc:
        return {}, f"the event probe failed: {exc}"


def group_status(profile: Profile, probe: Mapping[str, ProbeResult]) -> list[dict[str, Any]]:
    """Per group: which events count, which only open, which cannot open."""
    out = []
    for group in profile.groups:
        states = {e: probe[e].state if e in probe else "unknown" for e in group.events}
        counting = [e for e, s in states.items() if s == "counts"]
        unsupported = [e for e, s in states.items() if s == "unsupported"]
        zero = [e for e, s in states.items() if s == "zero"]
        if not counting:
            status = "dropped"
        elif unsupported:
            status = "partial"
        else:
            status = "ok"
        out.append(
            {
                "group": group.name,
                "events": len(group.events),
                "counting": counting,
                "zero": zero,
                "unsupported": unsupported,
                "status": status,
            }
        )
    return out


def variant_note(topology: Topology, profile: Profile) -> str:
    if not topology.is_a64fx:
        return ""
    if profile.variant:
        return f"energy factors for variant {profile.variant}"
    if topology.variant in ("", "24c"):
        return "part variant unknown: energy factors assume the 48-core part (8/32/256 nJ)"
    return f"energy factors for variant {topology.variant} (profile defaults)"


def build_report(
    host: HostInfo,
    topology: Topology,
    profile: Profile,
    chosen: str,
    probe: Mapping[str, ProbeResult],
    probe_error: str,
    syscall: Mapping[str, Any],
) -> dict[str, Any]:
    """Everything ``check`` knows, as one JSON-able record (the text view renders this)."""
    groups = group_status(profile, probe)
    usable = [g["group"] for g in groups if g["status"] != "dropped"]
    notes: list[str] = list(topology.cmg_notes())
    if not host.has_core_pmu:
        notes.append("no hardware core PMU found: only software events can count (a VM?)")
    cmg_events = [e.name for e in profile.events.values() if e.scope == "cmg"]
    if cmg_events and not host.cpu_wide:
        notes.append(
            f"CMG-scoped events ({', '.join(cmg_events)}) need per-CPU counting, not allowed at "
            f"perf_event_paranoid {host.paranoid} without CAP_PERFMON: they will be n/a "
            "(run as root, grant CAP_PERFMON, or set kernel.perf_event_paranoid=0)"
        )
    note = variant_note(topology, profile)
    if note:
        notes.append(note)
    kernel_only = [name for name, r in probe.items() if r.reason.startswith("user-only")]
    if kernel_only:
        notes.append(
            f"{', '.join(kernel_only)} happen in kernel mode: sectormon counts user space only by default; "
            f"--include-kernel counts them ({_kernel_counting(host)})"
        )
    zero = [name for name, r in probe.items() if r.state == "zero"]
    if zero:
        notes.append(
            f"{len(zero)} event(s) opened but counted nothing during the probe ({', '.join(zero)}): "
            "suspicious, not a measured zero (unsupported code, or nothing happened in the short probe)"
        )
    if probe_error:
        ok, reason = False, f"cannot probe events: {probe_error}"
    elif usable:
        dropped = [g["group"] for g in groups if g["status"] == "dropped"]
        reason = f"groups {', '.join(usable)} can count"
        if dropped:
            reason += f"; {', '.join(dropped)} dropped (no event of theirs counts here)"
        ok = True
    else:
        ok = False
        reason = f"no event of profile {profile.name} counts here"
        if host.paranoid is not None and host.paranoid >= 3 and not host.privileged:
            reason += (
                " (perf_event_paranoid >= 3 forbids perf for unprivileged users: run as root or lower it)"
            )
        elif not host.has_core_pmu and profile.name != "generic":
            reason += " (no hardware PMU: try --profile generic)"
    return {
        "schema": SCHEMA,
        "ok": ok,
        "reason": reason,
        "host": host.to_json(),
        "syscall": dict(syscall),
        "topology": {
            **topology.to_json(),
            "meaning": topology.domain_meaning(),
            "notes": topology.cmg_notes(),
        },
        "profile": {
            "name": profile.name,
            "source": profile.source,
            "variant": profile.variant,
            "chosen": chosen,
            "counters": profile.counters,
        },
        "probe": {
            "exclude_kernel": True,
            "include_kernel_allowed": kernel_counting_allowed(host),
            "error": probe_error,
            "events": {
                name: {"state": r.state, "value": r.value, "reason": r.reason} for name, r in probe.items()
            },
        },
        "groups": groups,
        "notes": notes,
    }


def kernel_counting_allowed(host: HostInfo) -> bool:
    """Whether ``--include-kernel`` may count kernel mode here: privileged (CAP_PERFMON,
    CAP_SYS_ADMIN) or ``perf_event_paranoid <= 1``."""
    return host.privileged or (host.paranoid is not None and host.paranoid <= 1)


def _kernel_counting(host: HostInfo) -> str:
    if host.privileged:
        return "allowed here: " + host.privilege_text().split(":", 1)[0]
    if kernel_counting_allowed(host):
        return f"allowed here: perf_event_paranoid is {host.paranoid}"
    return "not allowed here: it needs perf_event_paranoid <= 1 or CAP_PERFMON"


def table(
    rows: Sequence[Sequence[str]], headers: Sequence[str], *, right: Sequence[int] = (), indent: int = 2
) -> list[str]:
    """Aligned text columns (numbers right-aligned), like ``perf list`` / ``likwid-topology``."""
    all_rows = [list(headers), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(headers))]
    lines = []
    for row in all_rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append((" " * indent + "  ".join(cells)).rstrip())
    return lines


def short_reason(reason: str) -> str:
    """The gist of a probe reason for a table cell: errno and explanation, without the repeated event name."""
    errno_name, sep, rest = reason.partition(": ")
    if sep and errno_name.isupper() and "): " in rest:
        rest = rest.split("): ", 1)[1]
        return f"{errno_name}: {rest.split(' (fix', 1)[0]}"
    return reason


def _event_detail(result: ProbeResult | None) -> tuple[str, str]:
    if result is None:
        return "-", "not probed"
    if result.state == "counts":
        return result.state, f"{result.value:,}"
    return result.state, short_reason(result.reason) or STATE_NOTE.get(result.state, "")


def render_text(
    report: Mapping[str, Any], profile: Profile, topology: Topology, probe: Mapping[str, ProbeResult]
) -> str:
    host = report["host"]
    out: list[str] = ["Host"]
    a64fx = "yes" + (f" ({topology.variant})" if topology.variant else "") if host["is_a64fx"] else "no"
    paranoid = host["perf_event_paranoid"]
    rows = [
        ("Architecture", host["arch"]),
        ("CPU model", host["model"]),
        ("A64FX", a64fx),
        ("Kernel", host["kernel"]),
        (
            "perf_event_paranoid",
            f"{paranoid if paranoid is not None else '?'}: {paranoid_meaning(paranoid)}"
            " (privileged users are exempt)",
        ),
        ("Privileges", host["privilege"]),
        ("perf_event_open", _syscall_text(report["syscall"])),
        (
            "Kernel counting",
            "user space only by default; --include-kernel "
            + (
                "allowed"
                if report["probe"]["include_kernel_allowed"]
                else "not allowed (needs perf_event_paranoid <= 1 or CAP_PERFMON)"
            ),
        ),
        (
            "CPU-wide counting",
            "allowed" if host["cpu_wide_counting"] else "not allowed (CMG-scoped events n/a)",
        ),
    ]
    out += table(rows, ("", ""))[1:]

    out += ["", "PMUs (/sys/bus/event_source/devices)"]
    pmus = host["pmus"]
    if pmus:
        out += table(
            [
                (p["name"], "?" if p["type"] is None else str(p["type"]), "core" if p["core"] else "")
                for p in pmus
            ],
            ("NAME", "TYPE", "KIND"),
            right=(1,),
        )
    else:
        out.append("  (none found)")

    cmgs = topology.cmgs
    out += ["", f"Topology: {len(topology.cpus)} CPUs in {len(cmgs)} domain(s); {topology.domain_meaning()}"]
    out += table(
        [(topology.cmg_label(c), str(len(cpus)), format_cpu_list(cpus)) for c, cpus in sorted(cmgs.items())],
        ("CMG", "NCPU", "CPUS"),
        right=(1,),
    )
    if topology.excluded:
        out.append(f"  assistant cores {format_cpu_list(topology.excluded)} are excluded")

    prof = report["profile"]
    variant = f", variant {prof['variant']}" if prof["variant"] else ""
    out += [
        "",
        f"Profile: {profile.name} ({prof['chosen']}; {profile.source}{variant}): {profile.description}",
    ]

    out += ["", "Event probe (each event opened alone on this thread, user space only)"]
    if report["probe"]["error"]:
        out.append(f"  not run: {report['probe']['error']}")
    else:
        rows2 = []
        for name, event in profile.events.items():
            state, detail = _event_detail(probe.get(name))
            rows2.append((name, _code_text(event), event.scope, state, detail))
        out += table(rows2, ("EVENT", "CODE/SPEC", "SCOPE", "STATE", "DETAIL"))

    out += ["", "Groups"]
    rows3 = []
    for g in report["groups"]:
        parts = []
        if g["unsupported"]:
            parts.append("unsupported: " + ", ".join(g["unsupported"]))
        if g["zero"]:
            parts.append("zero: " + ", ".join(g["zero"]))
        rows3.append((g["group"], g["status"], f"{len(g['counting'])}/{g['events']} count", "; ".join(parts)))
    out += table(rows3, ("GROUP", "STATUS", "EVENTS", "DETAIL"))

    if report["notes"]:
        out += ["", "Notes"] + [f"  - {n}" for n in report["notes"]]
    verdict = "OK: sectormon can count here" if report["ok"] else "NOT OK: sectormon cannot count here"
    out += ["", f"{verdict}: {report['reason']}"]
    return "\n".join(out)


def _syscall_text(syscall: Mapping[str, Any]) -> str:
    if syscall["perf_event_open"] is None:
        return f"not available: {syscall['error']}"
    return f"syscall {syscall['perf_event_open']} on {syscall['machine']}"


def _code_text(event: EventDef) -> str:
    return f"0x{event.code:04x}" if event.code is not None else event.spec


def run(args: argparse.Namespace) -> int:
    with host_roots(args):
        host = collect_hostinfo()
        topology = load_topology()
    profile, chosen = resolve_profile(args.profile, topology)
    probe, probe_error = run_probe(tuple(profile.events.values()))
    report = build_report(host, topology, profile, chosen, probe, probe_error, syscall_info())
    if args.json:
        write_stdout(strict_json.dumps(report) + "\n")
    else:
        write_stdout(render_text(report, profile, topology, probe) + "\n")
    if not report["ok"]:
        print_message(f"check: {report['reason']}")
    return 0 if report["ok"] else 1
