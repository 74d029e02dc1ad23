"""The compiled row check under AddressSanitizer and UndefinedBehaviorSanitizer (tests/sanitized.py):
the recording tests (every reader, round trip, damage fuzz and hostile-input test, and the
property tests that hold it to the Python check) run against a sanitized build of ``_rows.c``;
any out-of-bounds access, use after free, overflow or leaked reference read from freed memory ends
that run with the sanitizer's report."""

from __future__ import annotations

from pathlib import Path

import pytest

from sectormon.io import native_rows
from tests.sanitized import run_sanitized


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_compiled_row_check_is_clean_under_asan_and_ubsan(tmp_path: Path) -> None:
    tests = ["-m", "not slow", "tests/io"]  # not slow: this test would run itself
    env = {native_rows.ENV: "c"}
    run_sanitized(tmp_path, "sectormon.io._rows", tests, env, timeout=1400, data=["recordings"])
