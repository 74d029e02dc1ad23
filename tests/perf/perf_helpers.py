"""Helpers shared by the perf tests (a uniquely named module: conftest names are not unique)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

CHILD = Path(__file__).with_name("perf_child.py")


class Child:
    """A running perf_child.py: ``ask`` sends one command and returns its reply line."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        assert self.read() == "ready"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def read(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def ask(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.read()

    def finish(self, code: int = 0) -> int:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(f"exit {code}\n")
            self.proc.stdin.flush()
        return self.proc.wait(timeout=10)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


@dataclass(frozen=True)
class FakeTopology:
    """Topology stand-in: by default each online CPU of this host is its own CMG."""

    cpus: tuple[int, ...]
    cmg_of: Mapping[int, int]
    cmgs: Mapping[int, tuple[int, ...]]
    is_a64fx: bool = False
    model: str = "test"
    domain: str = "cmg"


def host_topology() -> FakeTopology:
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    return FakeTopology(
        cpus=cpus, cmg_of={c: i for i, c in enumerate(cpus)}, cmgs={i: (c,) for i, c in enumerate(cpus)}
    )


def build_group_read(
    values: Sequence[int], ids: Sequence[int], time_enabled: int, time_running: int
) -> bytes:
    """What the kernel returns to ``read()`` (kernel order = ``ids`` order): parse_group_read's inverse."""
    flat: list[int] = []
    for value, ident in zip(values, ids, strict=True):
        flat += [value, ident]
    return struct.pack(f"=3Q{len(flat)}Q", len(ids), time_enabled, time_running, *flat)
