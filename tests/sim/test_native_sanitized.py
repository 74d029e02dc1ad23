"""The compiled core under AddressSanitizer and UndefinedBehaviorSanitizer: built here with the
sanitizers into a copy of the package and its tests (run from there, so that copy is the one
imported, ahead of the editable install), the equivalence, golden, cache-rule and sampling tests run
against it in a child process; any out-of-bounds access, use after free or undefined behaviour
(a signed overflow, a bad shift) ends that run with the sanitizer's report."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TESTS = [
    "tests/sim/test_native.py",
    "tests/sim/test_golden.py",
    "tests/sim/test_sectors.py",
    "tests/sim/test_fast_paths.py",
    "tests/sources/sim/test_sampling.py",
    # hostile inputs: 10,600 generated traces, objects files and kernel sizes (about 2 min here)
    "tests/sim/test_fuzz_sim_inputs.py",
    "tests/sim/test_hostile_inputs.py::test_kernel_sizes_have_a_stated_maximum_on_both_cores",
    "tests/sim/test_hostile_inputs.py::test_the_widest_addresses_give_the_same_counts_on_both_cores",
]


def _runtime(name: str) -> str | None:
    """The sanitizer runtime gcc links against, or None where gcc or the runtime is missing."""
    if shutil.which("gcc") is None:
        return None
    out = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True, check=False)
    path = out.stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_compiled_core_is_clean_under_asan_and_ubsan(tmp_path: Path) -> None:
    asan, ubsan = _runtime("libasan.so"), _runtime("libubsan.so")
    if asan is None or ubsan is None:
        pytest.skip("needs gcc with libasan and libubsan (Debian: gcc, libgcc-12-dev)")
    tree = tmp_path / "tree"
    leave_out = shutil.ignore_patterns("*.so", "__pycache__")
    for name in ("sectormon", "tests"):
        shutil.copytree(REPO / name, tree / name, ignore=leave_out)
    shutil.copy(REPO / "pyproject.toml", tree)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    built = tree / "sectormon" / "sim" / f"_core{suffix}"
    flags = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined"]
    flags += ["-fno-sanitize-recover=undefined", "-std=c11", "-fPIC", "-shared"]
    include = sysconfig.get_paths()["include"]
    source = REPO / "sectormon" / "sim" / "_core.c"
    subprocess.run(["gcc", *flags, f"-I{include}", str(source), "-o", str(built)], check=True)
    env = {
        **os.environ,
        "LD_PRELOAD": f"{asan} {ubsan}",
        "ASAN_OPTIONS": "detect_leaks=0",  # CPython's own allocations are not freed at exit
        "SECTORMON_SIM_CORE": "c",
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    probe = subprocess.run(
        [sys.executable, "-c", "import sectormon.sim._core as c; print(c.__file__)"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.stdout.strip() == str(built), probe.stderr  # the sanitized build is the one tested
    run = subprocess.run(
        # -s: a sanitizer reports on fd 2 and aborts, so capturing would lose its report
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "no:xdist", *TESTS],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=1400,
        check=False,
    )
    report = run.stdout + run.stderr
    assert "AddressSanitizer" not in report and "runtime error" not in report, report[-4000:]
    assert run.returncode == 0, report[-4000:]
