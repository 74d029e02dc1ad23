"""Facts about this host that decide what sectormon can count: CPU, kernel, perf permissions, PMUs
and how the kernel multiplexes them.

Read from procfs/sysfs under :mod:`sectormon.host.roots` (tests use fake trees). ``sectormon check``
shows them; the perf source uses :func:`cpu_wide_allowed` to decide whether CMG-scoped events can be
opened.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sectormon.host import roots
from sectormon.host.topology import cpu_model, cpuinfo_fields

CAP_SYS_ADMIN = 21
CAP_PERFMON = 38

# Name prefixes of the PMUs that drive a core's own counters (the others are software or uncore).
_CORE_PMU_NAMES = ("cpu", "cpu_core", "cpu_atom")
_CORE_PMU_PREFIXES = ("armv8_", "armv9_", "armv7_", "arm_cortex", "apple_")

PARANOID_MEANING = {
    -1: "no restrictions: any user may count any process, CPU-wide, and kernel space",
    0: "any user may count CPU-wide (per-CPU) and kernel space; raw tracepoints need privilege",
    1: "users may count their own processes (user and kernel space); CPU-wide counting needs privilege",
    2: "users may count their own processes in user space only; CPU-wide and kernel counting need privilege",
    3: "unprivileged users may not use perf_event_open at all (Debian/Ubuntu kernel setting)",
}
PRIVILEGE_NOTE = "root with CAP_PERFMON or CAP_SYS_ADMIN bypasses perf_event_paranoid"


def paranoid_meaning(level: int | None) -> str:
    """What a ``kernel.perf_event_paranoid`` level allows an unprivileged user."""
    if level is None:
        return "unknown (cannot read /proc/sys/kernel/perf_event_paranoid)"
    return PARANOID_MEANING[max(-1, min(3, level))]


def cpu_wide_allowed(level: int | None, privileged: bool) -> bool:
    """Whether per-CPU counting (``pid=-1``, needed for CMG-scoped events) is allowed."""
    return privileged or (level is not None and level <= 0)


@dataclass(frozen=True, slots=True)
class Pmu:
    """One entry of /sys/bus/event_source/devices: its name, perf ``type`` and whether it is a core PMU."""

    name: str
    type: int | None
    core: bool


@dataclass(frozen=True)
class HostInfo:
    """What ``sectormon check`` reports about the host (JSON via :meth:`to_json`)."""

    arch: str
    model: str
    is_a64fx: bool
    kernel: str
    paranoid: int | None
    privileged: bool
    capabilities: tuple[str, ...]
    euid: int
    pmus: tuple[Pmu, ...] = field(default=())

    @property
    def has_core_pmu(self) -> bool:
        return any(p.core for p in self.pmus)

    @property
    def cpu_wide(self) -> bool:
        return cpu_wide_allowed(self.paranoid, self.privileged)

    def privilege_text(self) -> str:
        """Who we are for perf: privileged users are not limited by perf_event_paranoid."""
        who = "root" if self.euid == 0 else f"uid {self.euid}"
        if self.capabilities:
            return f"{who} with {', '.join(self.capabilities)}: bypasses perf_event_paranoid"
        if self.privileged:
            return f"{who}: bypasses perf_event_paranoid"
        return f"{who} without CAP_PERFMON/CAP_SYS_ADMIN: perf_event_paranoid applies"

    def to_json(self) -> dict[str, Any]:
        return {
            "arch": self.arch,
            "model": self.model,
            "is_a64fx": self.is_a64fx,
            "kernel": self.kernel,
            "perf_event_paranoid": self.paranoid,
            "paranoid_meaning": paranoid_meaning(self.paranoid),
            "paranoid_bypass": PRIVILEGE_NOTE,
            "privileged": self.privileged,
            "capabilities": list(self.capabilities),
            "euid": self.euid,
            "privilege": self.privilege_text(),
            "cpu_wide_counting": self.cpu_wide,
            "pmus": [{"name": p.name, "type": p.type, "core": p.core} for p in self.pmus],
            "has_core_pmu": self.has_core_pmu,
        }


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _capabilities() -> tuple[bool, tuple[str, ...]]:
    """(privileged for perf, names of the perf-relevant effective capabilities)."""
    status = _read(Path(roots.procfs("self/status")))
    if status is None:  # no status (fake procfs): fall back to the effective uid
        return os.geteuid() == 0, ()
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            try:
                mask = int(line.split(":", 1)[1].strip(), 16)
            except ValueError:
                break
            caps = tuple(
                name
                for bit, name in ((CAP_PERFMON, "CAP_PERFMON"), (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"))
                if mask >> bit & 1
            )
            return bool(caps), caps
    return os.geteuid() == 0, ()


def list_pmus() -> tuple[Pmu, ...]:
    """The PMUs perf knows on this host, sorted by name."""
    base = Path(roots.sysfs("bus/event_source/devices"))
    try:
        entries = sorted(base.iterdir(), key=lambda p: p.name)
    except OSError:
        return ()
    return tuple(
        Pmu(
            name=p.name,
            type=_int(_read(p / "type")),
            core=p.name in _CORE_PMU_NAMES or p.name.startswith(_CORE_PMU_PREFIXES),
        )
        for p in entries
    )


def mux_intervals() -> dict[str, int]:
    """Per PMU name, the kernel's multiplexing period in ms (PMUs without the file, or unreadable,
    left out).

    When more groups are enabled than a PMU has counters, the kernel rotates them every
    ``perf_event_mux_interval_ms`` of that PMU. sectormon's kernel rotation relies on it, so the
    header reports it; it is read, never written: changing it is the administrator's call.
    """
    out: dict[str, int] = {}
    try:
        pmus = sorted(Path(roots.sysfs("bus/event_source/devices")).iterdir())
    except OSError:
        return out
    for pmu in pmus:
        try:
            text = (pmu / "perf_event_mux_interval_ms").read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            out[pmu.name] = int(text)
    return out


def collect_hostinfo() -> HostInfo:
    """Gather the host facts."""
    proc = Path(roots.PROCFS_PATH)
    model, is_a64fx = cpu_model(cpuinfo_fields())
    privileged, caps = _capabilities()
    return HostInfo(
        arch=_read(proc / "sys/kernel/arch") or os.uname().machine or "unknown",
        model=model,
        is_a64fx=is_a64fx,
        kernel=_read(proc / "sys/kernel/osrelease") or os.uname().release or "unknown",
        paranoid=_int(_read(proc / "sys/kernel/perf_event_paranoid")),
        privileged=privileged,
        capabilities=caps,
        euid=os.geteuid(),
        pmus=list_pmus(),
    )
