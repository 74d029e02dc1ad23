"""Run the installed `sectormon` command and read its JSON Lines output."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

T = TypeVar("T")

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


def wait_until(ready: Callable[[], T | None], what: str, timeout: float = 60.0) -> T:
    """Poll ``ready`` until it returns something true, and return that: a test waits
    for the state it asserts on, never for a fixed time (a loaded machine takes seconds to start)."""
    deadline = time.monotonic() + timeout
    while True:
        value = ready()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout} s")
        time.sleep(0.02)


def jsonl_records(path: Path) -> list[dict[str, Any]]:
    """The whole JSON lines written to ``path`` so far (a line still being written is left out)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return read_jsonl(text[: text.rfind("\n") + 1])


def first_frame(path: Path, accept: Callable[[dict[str, Any]], bool] = lambda _f: True) -> dict[str, Any]:
    """Wait for the first frame in the JSON stream file ``path`` that ``accept`` takes."""

    def found() -> dict[str, Any] | None:
        frames = [r for r in jsonl_records(path) if r.get("schema") == "sectormon/frame/1"]
        return next((f for f in frames if accept(f)), None)

    return wait_until(found, f"a frame in {path}")


def read_records(stream: IO[str], count: int) -> list[dict[str, Any]]:
    """The first ``count`` JSON records of a live stream (blocks until they are written; fewer if
    the stream ends first)."""
    records = []
    while len(records) < count:
        line = stream.readline()
        if not line:
            break
        records.append(json.loads(line))
    return records


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (``SigCgt`` in its status): a Python
    program has reached the code that installs it."""
    return _signal_mask(pid, "SigCgt") >> (signum - 1) & 1 == 1


def in_sigwait(pid: int) -> bool:
    """Whether process ``pid`` sleeps in ``sigwait`` (its ``wchan``); the kernel unblocks the
    awaited signals while it waits, so ``SigBlk`` does not show them."""
    try:
        return "sigtimedwait" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def _signal_mask(pid: int, field: str) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1], 16)
    return 0


def perf_fds(pid: int) -> int:
    """How many perf_event file descriptors process ``pid`` holds (it is counting once > 0)."""
    count = 0
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return 0
    for fd in fds:
        with contextlib.suppress(OSError):
            count += "perf_event" in os.readlink(fd)
    return count
