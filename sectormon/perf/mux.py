"""The kernel's multiplexing period per PMU, as sysfs says it (read only, never written).

When more groups are enabled than a PMU has counters, the kernel rotates them every
``perf_event_mux_interval_ms`` of that PMU (a per-PMU sysfs file). sectormon's kernel rotation
relies on it, so the header reports it; changing it is the administrator's call.
"""

from __future__ import annotations

from pathlib import Path

DEVICES = Path("/sys/bus/event_source/devices")


def mux_intervals(devices: Path = DEVICES) -> dict[str, int]:
    """Per PMU name, its rotation period in ms (PMUs without the file, or unreadable, left out)."""
    out: dict[str, int] = {}
    try:
        pmus = sorted(devices.iterdir())
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
