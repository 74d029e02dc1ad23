"""The compiled core under AddressSanitizer and UndefinedBehaviorSanitizer (tests/sanitized.py):
the equivalence, golden, cache-rule and sampling tests run against a sanitized build of it; any
out-of-bounds access, use after free or undefined behaviour (a signed overflow, a bad shift) ends
that run with the sanitizer's report."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sanitized import run_sanitized

TESTS = [
    "tests/sim/test_native.py",
    "tests/sim/test_golden.py",
    "tests/sim/test_sectors.py",
    "tests/sim/test_fast_paths.py",
    "tests/sim/test_marks.py",
    "tests/sources/sim/test_sampling.py",
    # hostile inputs: 10,600 generated traces, objects files and kernel sizes (about 2 min here)
    "tests/sim/test_fuzz_sim_inputs.py",
    "tests/sim/test_hostile_inputs.py::test_kernel_sizes_have_a_stated_maximum_on_both_cores",
    "tests/sim/test_hostile_inputs.py::test_the_widest_addresses_give_the_same_counts_on_both_cores",
]


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_compiled_core_is_clean_under_asan_and_ubsan(tmp_path: Path) -> None:
    run_sanitized(tmp_path, "sectormon.sim._core", TESTS, {"SECTORMON_SIM_CORE": "c"}, timeout=1400)
