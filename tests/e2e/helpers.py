"""Run the installed `sectormon` command and read its JSON Lines output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"


def sectormon_command() -> str:
    """The installed console script (next to this interpreter in a venv, else on PATH)."""
    beside = Path(sys.executable).with_name("sectormon")
    if beside.exists():
        return str(beside)
    found = shutil.which("sectormon")
    if not found:
        raise RuntimeError("the sectormon command is not installed (pip install -e .)")
    return found


def workload(name: str, *args: object) -> list[str]:
    return [sys.executable, str(WORKLOADS / name), *map(str, args)]


def read_jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def run_sectormon(*args: str, timeout: float = 120, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sectormon_command(), *args], capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )


def perf_available() -> bool:
    if not shutil.which("perf"):
        return False
    probe = subprocess.run(
        ["perf", "stat", "-e", "page-faults", "true"], capture_output=True, text=True, check=False
    )
    return probe.returncode == 0
