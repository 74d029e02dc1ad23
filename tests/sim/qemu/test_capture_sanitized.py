"""The ring's consumer and the record reader (_capture.c and reader.c, with blocks.h and marks.h) under
AddressSanitizer and UndefinedBehaviorSanitizer (tests/sanitized.py): the capture tests - known
batches, the shim's events, hostile and cut-short events, random allocations and frees, 200,000
blocks, the live reader naming sites as it meets them - run against a sanitized build; any
out-of-bounds access, use after free or undefined behaviour ends that run with the sanitizer's
report."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sanitized import run_sanitized


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_capture_is_clean_under_asan_and_ubsan(tmp_path: Path) -> None:
    tests = ["tests/sim/qemu/test_capture.py", "tests/sim/qemu/test_live_objects.py", "-m", "not e2e"]
    reader = ["sectormon/sim/qemu/reader.c"]
    run_sanitized(tmp_path, "sectormon.sim.qemu._capture", tests, {}, timeout=500, sources=reader)
