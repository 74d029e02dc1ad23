"""`--openmetrics` end to end: the installed command serves what its JSON stream says."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from tests.e2e.helpers import read_jsonl, run_sectormon
from tests.e2e.openmetrics_helpers import (
    expected_values,
    frame_time,
    metric_series_names,
    observed_values,
    scrape,
    scrape_after_frames,
    start_serving,
)

pytestmark = pytest.mark.e2e


def _frame_at(frames: list[dict[str, object]], t: float) -> dict[str, object]:
    found = [f for f in frames if f.get("t") == t and not f.get("final")]
    assert len(found) == 1, f"no frame at t={t!r} in the JSON stream"
    return found[0]


def test_sim_serves_the_frames_its_json_stream_writes(tmp_path: Path) -> None:
    """Same run, two sinks: every metric of the scraped frame equals the JSON frame with its t
    (exactly: both print the same float); n/a metrics are absent from the scrape."""
    out = tmp_path / "frames.jsonl"
    env = {**os.environ, "SECTORMON_HOST": "simnode7"}
    args = ["sim", "--json", "-o", str(out), "--loop", "--openmetrics", "0"]
    proc, url = start_serving(args, env=env)
    try:
        scrapes = [scrape_after_frames(url, 2), scrape_after_frames(url, 4)]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    assert proc.stdout is not None and proc.stdout.read() == b""  # -o: the stream went to the file
    records = read_jsonl(out.read_text())
    header, frames = records[0], records[1:]
    names = metric_series_names(header)
    for samples in scrapes:
        t = frame_time(samples)
        assert t is not None
        expected = expected_values(header, _frame_at(frames, t))
        assert observed_values(samples, names) == expected
        hosts = {dict(labels).get("host") for (_, labels) in samples if labels}
        assert hosts == {"simnode7"}
    # The simulated cores have no CMG-wide energy: n/a in JSON, absent here.
    frame = _frame_at(frames, frame_time(scrapes[-1]) or 0.0)
    assert frame["cores"]["0"]["metrics"]["energy_per_inst"] is None  # type: ignore[index]
    assert ("sectormon_energy_per_inst_joules_per_instruction", "core", "0", "0") not in observed_values(
        scrapes[-1], names
    )
    assert ("sectormon_energy_per_inst_joules_per_instruction", "cmg", "0", "") in observed_values(
        scrapes[-1], names
    )


def test_headless_writes_nothing_to_stdout(tmp_path: Path) -> None:
    record = tmp_path / "run.jsonl.gz"
    proc, url = start_serving(
        ["sim", "--headless", "--openmetrics", "0", "--count", "3", "--record", str(record)]
    )
    samples = scrape(url)  # start-up: what is known
    assert ("sectormon_info", ()) not in samples
    assert any(name == "sectormon_info" for name, _ in samples)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert stdout == b""
    assert record.stat().st_size > 0


def test_replay_serves_a_recording_paced(tmp_path: Path) -> None:
    record = tmp_path / "run.jsonl.gz"
    done = run_sectormon(
        "sim", "--json", "--count", "8", "--record", str(record), env={**os.environ, "SECTORMON_HOST": "rec1"}
    )
    assert done.returncode == 0, done.stderr
    replayed = read_jsonl(run_sectormon("replay", str(record), "--json").stdout)
    header, frames = replayed[0], replayed[1:]
    proc, url = start_serving(["replay", str(record), "--headless", "--openmetrics", "0", "--speed", "4"])
    try:
        samples = scrape_after_frames(url, 3)
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert stdout == b""
    t = frame_time(samples)
    assert t is not None
    assert observed_values(samples, metric_series_names(header)) == expected_values(
        header, _frame_at(frames, t)
    )
    assert {dict(labels).get("source") for (_, labels) in samples if labels} == {"replay"}
    assert {dict(labels).get("host") for (_, labels) in samples if labels} == {"rec1"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sim", "--headless"], "--headless shows nothing by itself: add --openmetrics"),
        (["sim", "--headless", "--json", "--openmetrics", "0"], "--headless writes nothing to stdout"),
        (["sim", "--openmetrics-threads"], "--openmetrics-threads adds series to --openmetrics"),
        (["sim", "--openmetrics", "99999"], "--openmetrics 99999: the port must be a number from 0 to 65535"),
        (
            ["sim", "--summary", "--openmetrics", "0"],
            "--summary prints one JSON object at the end; --openmetrics",
        ),
        (["--source", "sim", "--headless"], "--headless shows nothing by itself"),
        (["replay", "x.jsonl", "--headless"], "add --openmetrics [HOST:]PORT$"),
    ],
)
def test_bad_openmetrics_options_are_one_line(args: list[str], message: str) -> None:
    done = run_sectormon(*args, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("sectormon: ")
    assert re.search(re.escape(message.rstrip("$")) + ("$" if message.endswith("$") else ""), lines[0])


def test_a_headless_service_sends_a_commands_output_to_stderr() -> None:
    """A per-node service writes nothing to stdout, not even what the counted command prints."""
    done = run_sectormon(
        "--headless", "--openmetrics", "0", "--", "sh", "-c", "echo to-stdout; echo to-stderr >&2"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "to-stdout" in done.stderr and "to-stderr" in done.stderr
    assert "sectormon: OpenMetrics at http://127.0.0.1:" in done.stderr
