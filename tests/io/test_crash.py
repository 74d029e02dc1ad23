"""A recorder killed with SIGKILL leaves a file readable up to its last whole line (plain and gzip)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sectormon.io import read_recording
from tests.io.recording_synth import slices

WRITER = """
import sys, time
sys.path.insert(0, {here!r})
from recording_synth import header, slices
from sectormon.io import RecordingWriter

w = RecordingWriter({path!r}, header())
for s in slices(10**9):
    w.write_slice(s)
    if s.index == 0:
        print("ready", flush=True)
    time.sleep(0.003)
"""


@pytest.mark.parametrize("name", ["killed.jsonl", "killed.jsonl.gz"])
def test_sigkill_leaves_readable_prefix(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    script = WRITER.format(here=str(Path(__file__).parent), path=str(path))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        while path.stat().st_size < 8000 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    rec = read_recording(path)
    assert len(rec.slices) >= 5
    assert rec.items == tuple(slices(len(rec.items)))
    if name.endswith(".gz"):
        assert any("gzip stream ends early" in w for w in rec.warnings)
