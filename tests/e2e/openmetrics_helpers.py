"""Start `sectormon ... --openmetrics 0` and scrape it: the port it picked is said on stderr."""

from __future__ import annotations

import re
import subprocess
import time
import urllib.request
from collections.abc import Sequence
from typing import IO, Any

from prometheus_client.openmetrics.parser import text_string_to_metric_families

from sectormon.export.names import exported_metrics
from tests.e2e.helpers import sectormon_command

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]

_URL = re.compile(r"OpenMetrics at (http://\S+/metrics)")


def start_serving(
    args: Sequence[str], *, env: dict[str, str] | None = None, stdout: IO[bytes] | int | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Run sectormon with ``args`` (which include ``--openmetrics 0``); its process and URL."""
    proc = subprocess.Popen(
        [sectormon_command(), *args],
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stderr is not None
    said = []
    while True:  # the URL comes after the probe's warnings
        line = proc.stderr.readline().decode()
        said.append(line)
        match = _URL.search(line)
        if match is not None:
            return proc, match.group(1)
        if not line:
            proc.kill()
            proc.wait()
            raise AssertionError(f"no OpenMetrics URL on stderr: {''.join(said)!r}")


def scrape(url: str) -> Samples:
    request = urllib.request.Request(url, headers={"Accept": "application/openmetrics-text;version=1.0.0"})
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def frame_time(samples: Samples) -> float | None:
    found = [v for (name, _), v in samples.items() if name == "sectormon_frame_time_seconds"]
    return found[0] if found else None


def scrape_after_frames(url: str, frames: int, timeout: float = 60.0) -> Samples:
    """The first scrape that shows at least ``frames`` frames."""
    deadline = time.monotonic() + timeout
    while True:
        samples = scrape(url)
        if samples.get(("sectormon_frames_total", ()), 0) >= frames:
            return samples
        if time.monotonic() > deadline:
            raise AssertionError(f"{url}: fewer than {frames} frames after {timeout} s")
        time.sleep(0.1)


SeriesKey = tuple[str, str, str, str]  # (series name, scope, cmg, core)


def expected_values(header: dict[str, Any], frame: dict[str, Any]) -> dict[SeriesKey, float]:
    """What the endpoint should show for a JSON frame: every metric that is not n/a, per scope,
    in the exported unit (the JSON stream is the reference)."""
    cmg_of = {str(cpu): cmg for cmg, cpus in header["topology"].get("cmgs", {}).items() for cpu in cpus}
    scopes = [("total", "", "", frame["total"])]
    scopes += [("cmg", cmg, "", stats) for cmg, stats in frame["cmgs"].items()]
    scopes += [("core", cmg_of.get(core, ""), core, stats) for core, stats in frame["cores"].items()]
    out: dict[SeriesKey, float] = {}
    for exported in exported_metrics(header["profile"]["metrics"]):
        for scope, cmg, core, stats in scopes:
            value = stats["metrics"].get(exported.metric)
            if value is not None:
                out[(exported.name, scope, cmg, core)] = value * exported.scale
    return out


def metric_series_names(header: dict[str, Any]) -> set[str]:
    return {e.name for e in exported_metrics(header["profile"]["metrics"])}


def observed_values(samples: Samples, names: set[str]) -> dict[SeriesKey, float]:
    out: dict[SeriesKey, float] = {}
    for (name, labels), value in samples.items():
        ls = dict(labels)
        if name in names and not ls.get("region"):  # a marked region's series: the same names, its label
            out[(name, ls["scope"], ls.get("cmg", ""), ls.get("core", ""))] = value
    return out
