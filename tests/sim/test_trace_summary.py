"""A din trace is the measured region: ``sim --trace F --summary`` counts every access it holds."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from sectormon import cli

ACCESSES = 120_000  # far more simulated time than the kernels' 5e-05 s warm-up


def _trace(tmp_path: Path) -> Path:
    rng = random.Random(3)
    path = tmp_path / "app.din"
    with path.open("w") as handle:
        for i in range(ACCESSES):
            address = rng.randrange(1 << 22) if i % 3 else 0x10000 + 8 * i
            handle.write(f"{i % 5 == 0:d} {address:x}\n")
            if i % 7 == 0:
                handle.write(f"2 {0x400000 + i:x}\n")
    return path


def _summary(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert cli.main(["sim", "--summary", *args]) == 0
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    return data


def test_a_trace_summary_counts_every_access_of_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _summary(capsys, "--trace", str(_trace(tmp_path)))
    counts = data["counts"]
    assert isinstance(counts, dict)
    assert counts["L1D_CACHE"] == ACCESSES
    assert data["warmup_s"] == 0
    assert data["accesses"] == {"counted": ACCESSES, "skipped": 0, "warmup_s": 0.0}


def test_an_explicit_warmup_on_a_trace_says_what_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _summary(capsys, "--trace", str(_trace(tmp_path)), "--warmup", "20e-6")
    accesses = data["accesses"]
    counts = data["counts"]
    assert isinstance(accesses, dict) and isinstance(counts, dict)
    assert accesses["skipped"] > 0
    assert accesses["counted"] + accesses["skipped"] == ACCESSES
    assert counts["L1D_CACHE"] == accesses["counted"]


def test_kernels_keep_their_warmup(capsys: pytest.CaptureFixture[str]) -> None:
    data = _summary(capsys, "--threads", "1", "--size", "passes=100")
    accesses = data["accesses"]
    counts = data["counts"]
    assert isinstance(accesses, dict) and isinstance(counts, dict)
    assert data["warmup_s"] == 5e-05
    assert accesses["skipped"] > 0 and accesses["counted"] == counts["L1D_CACHE"]
    assert accesses["counted"] + accesses["skipped"] == 100 * 192 * 2 * 4
