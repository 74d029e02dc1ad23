"""Tests run against a compiled module built with AddressSanitizer and UndefinedBehaviorSanitizer.

The module is built with the sanitizers into a copy of the package and its tests, and the tests
run from there in a child process (so that copy is the one imported, ahead of the editable
install); any out-of-bounds access, use after free or undefined behaviour (a signed overflow, a
bad shift) ends that run with the sanitizer's report, which fails the test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _runtime(name: str) -> str | None:
    """The sanitizer runtime gcc links against, or None where gcc or the runtime is missing."""
    if shutil.which("gcc") is None:
        return None
    out = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True, check=False)
    path = out.stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


def run_sanitized(
    tmp_path: Path,
    module: str,
    pytest_args: Sequence[str],
    env: Mapping[str, str],
    timeout: float,
    data: Sequence[str] = (),
    sources: Sequence[str] = (),
) -> None:
    """Build ``module`` (dotted, e.g. ``sectormon.sim._core``, from the ``.c`` file of that path and
    the repository's other C ``sources`` of the module)
    with the sanitizers and run pytest with ``pytest_args`` (the tests to run) against it, ``env``
    added and the repository's ``data`` folders copied too; skips where gcc or its sanitizer
    runtimes are missing."""
    asan, ubsan = _runtime("libasan.so"), _runtime("libubsan.so")
    if asan is None or ubsan is None:
        pytest.skip("needs gcc with libasan and libubsan (Debian: gcc, libgcc-12-dev)")
    tree = tmp_path / "tree"
    leave_out = shutil.ignore_patterns("*.so", "__pycache__")
    for name in ("sectormon", "tests", *data):
        shutil.copytree(REPO / name, tree / name, ignore=leave_out)
    shutil.copy(REPO / "pyproject.toml", tree)
    relative = Path(*module.split("."))
    built = tree / relative.with_name(relative.name + sysconfig.get_config_var("EXT_SUFFIX"))
    flags = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined"]
    flags += ["-fno-sanitize-recover=undefined", "-std=c11", "-fPIC", "-shared"]
    include = sysconfig.get_paths()["include"]
    source = REPO / relative.with_suffix(".c")
    files = [str(source), *(str(REPO / s) for s in sources)]
    subprocess.run(["gcc", *flags, f"-I{include}", *files, "-o", str(built)], check=True)
    child_env = {
        **os.environ,
        "LD_PRELOAD": f"{asan} {ubsan}",
        "ASAN_OPTIONS": "detect_leaks=0",  # CPython's own allocations are not freed at exit
        "PYTHONMALLOC": "malloc",  # every object its own allocation: ASan sees past its ends and frees
        **env,
    }
    child_env.pop("PYTEST_XDIST_WORKER", None)
    probe = subprocess.run(
        [sys.executable, "-c", f"import {module} as m; print(m.__file__)"],
        cwd=tree,
        env=child_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.stdout.strip() == str(built), probe.stderr  # the sanitized build is the one tested
    run = subprocess.run(
        # -s: a sanitizer reports on fd 2 and aborts, so capturing would lose its report
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-s",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            *pytest_args,
        ],
        cwd=tree,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    report = run.stdout + run.stderr
    assert "AddressSanitizer" not in report and "runtime error" not in report, report[-4000:]
    assert run.returncode == 0, report[-4000:]
