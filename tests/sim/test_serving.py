"""A headless simulator serving OpenMetrics keeps serving: the kernel loops until SIGINT/SIGTERM.

Run once, a kernel ends after a few frames, and an endpoint that exits then cannot be scraped.
"""

from __future__ import annotations

import signal

import pytest

from sectormon.cli import build_parser
from sectormon.commands.options.sim import sim_source
from tests.e2e.helpers import run_sectormon
from tests.e2e.openmetrics_helpers import scrape_after_frames, start_serving


def _one_pass_frames() -> int:
    """Frames of one pass of the default kernel (``sim --json`` runs it once)."""
    done = run_sectormon("sim", "--json")
    assert done.returncode == 0, done.stderr
    return len(done.stdout.splitlines()) - 1  # the header


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_headless_endpoint_keeps_serving_until_stopped(stop: signal.Signals) -> None:
    once = _one_pass_frames()
    proc, url = start_serving(["sim", "--headless", "--openmetrics", "127.0.0.1:0", "--pace", "0.05"])
    try:
        samples = scrape_after_frames(url, once + 3)  # past the end of one pass: it loops
        assert samples[("sectormon_frames_total", ())] > once
        assert proc.poll() is None
        proc.send_signal(stop)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    assert b"Traceback" not in proc.stderr.read()


@pytest.mark.parametrize(
    ("args", "loop"),
    [
        (["--headless", "--openmetrics", "0"], True),
        (["--headless", "--openmetrics", "0", "--once"], False),  # asked for: one pass, then exit
        (["--headless", "--openmetrics", "0", "--count", "3"], True),
        (["--json"], False),
    ],
)
def test_a_served_endpoint_loops_unless_once_is_asked(args: list[str], loop: bool) -> None:
    source = sim_source(build_parser("sim").parse_args(args), headless=True)
    assert source.loop is loop
    served = "--openmetrics" in args and "--count" not in args
    assert (source.pace > 0) is served  # a served endpoint is paced like the TUI, not flat out
