"""Run a program under QEMU with sectormon's plugin and capture its loads and stores per thread.

The program runs as it would alone: its stdin, stdout and stderr are sectormon's, its exit status
is kept for sectormon to return (:class:`Program`). Meanwhile the compiled consumer drains the
plugin's ring (the GIL released while it waits), so a program that accesses memory faster than
the consumer keeps up waits for it instead of losing accesses. The capture is taken once, before
the model runs: every run of the model (a summary, each configuration of ``--advise``, a looping
TUI) reads the same threads again.

The ring is an anonymous shared-memory file (``memfd``) QEMU inherits and the plugin maps and
closes before the program starts: the program never sees it, and nothing is left in /dev/shm.
A capture keeps at most :data:`MAX_RECORDS` records (each 16 bytes on disk, one per run of
accesses to a line); accesses past it are counted as ``truncated``, not simulated.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from sectormon.errors import SectormonError
from sectormon.sim.objects import DataObjects
from sectormon.sim.qemu.heap import NO_SHIM, HeapObjects, Shim, Site, heap_objects
from sectormon.sim.qemu.symbols import symbol_objects
from sectormon.sim.qemu.target import Target, check_built, read_target

if TYPE_CHECKING:
    from sectormon.sim.qemu._capture import Capture

RING_WORDS = 1 << 22  # 32 MiB of 8-byte words: some 4 million accesses in flight
MAX_RECORDS = 1 << 28  # 4 GiB of records on disk
POLL_S = 0.05


@dataclass(frozen=True, slots=True)
class CapturedThread:
    """One traced thread (a QEMU vCPU, numbered as QEMU numbers them) and its records file."""

    vcpu: int
    records: IO[bytes]
    accesses: int
    instructions: int

    def to_json(self) -> dict[str, int]:
        return {"vcpu": self.vcpu, "accesses": self.accesses, "instructions": self.instructions}


@dataclass(frozen=True, slots=True)
class Program:
    """A traced run: the command, how QEMU ran it, its threads and how it ended (``exit_code``
    as :mod:`subprocess` gives it: negative for a signal); ``objects`` its global variables where
    its symbols say (:mod:`.symbols`), then its heap blocks by allocation site and its threads'
    stacks (:mod:`.heap`: ``heap`` the reader's tables for them, ``shim`` whether they were seen)."""

    argv: tuple[str, ...]
    target: Target
    threads: tuple[CapturedThread, ...]
    exit_code: int
    dropped: int
    truncated: int
    wall_s: float
    objects: DataObjects | None = None
    sve: tuple[int, int] = (0, 0)  # SVE memory instructions executed, accesses QEMU reported for them
    heap: HeapObjects | None = None
    shim: Shim = NO_SHIM
    # The marked regions each traced thread entered: (thread, name, number, calls); name None for
    # the entries of a thread's regions past the capture's list (1,024 a thread).
    regions: tuple[tuple[int, str | None, int, int], ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "kind": "program",
            "argv": list(self.argv),
            "arch": self.target.arch,
            "dynamic": self.target.dynamic,
            "exit_code": self.exit_code,
            "traced_threads": [t.to_json() for t in self.threads],
            "accesses_not_kept": self.dropped + self.truncated,
            "trace_wall_s": round(self.wall_s, 3),
            "objects_from": self._objects_from(),
            "heap_shim": self.shim.to_json(),
            **({"heap_objects": self.heap.to_json()} if self.heap is not None else {}),
            **({"regions": [_region_json(*r) for r in self.regions]} if self.regions else {}),
            **(
                {"sve_memory": {"instructions": self.sve[0], "accesses_reported": self.sve[1]}}
                if self.sve[0]
                else {}
            ),
        }

    def _objects_from(self) -> str | None:
        if self.heap is not None:
            return "ELF symbols, heap allocation sites, thread stacks"
        return "ELF symbols" if self.objects is not None else None

    def unnamed_heap(self) -> str | None:
        """Why the heap blocks and stacks are ``[other]``, when the shim did not report them."""
        if self.shim.loaded:
            return None
        return (
            f"{self.argv[0]}: heap blocks and stacks are [other], only global variables are named: "
            f"the shim (sectormon/sim/qemu/shim.c) was {self.shim.to_json()}"
        )

    def untraced_sve(self) -> str | None:
        """Why the counts miss accesses, when SVE loads and stores ran that QEMU did not report (a
        contiguous SVE load or store with an active element makes at least one access)."""
        executed, reported = self.sve
        if reported >= executed:
            return None
        return (
            f"{self.argv[0]} executed {executed:,} SVE loads/stores and QEMU reported {reported:,} accesses "
            "for them: QEMU 7.2 does not report SVE contiguous loads and stores to plugins, so the counts "
            "miss them (build without SVE vectorization, e.g. -march=armv8.2-a or -fno-tree-vectorize)"
        )


def trace_program(argv: Sequence[str]) -> Program:
    """Run ``argv`` under QEMU with the plugin to its end; its threads' captured records."""
    check_built()
    from sectormon.sim.qemu._capture import HEADER_BYTES, Capture

    target = read_target(argv[0])
    shim = target.shim() if target.dynamic else None
    fd = os.memfd_create("sectormon-qemu-ring", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, HEADER_BYTES + RING_WORDS * 8)
        capture = Capture(fd, RING_WORDS, MAX_RECORDS)
        command = [*target.qemu_command(f"ring_fd={fd}", shim), *argv[1:]]
        started = time.monotonic()
        try:
            process = subprocess.Popen(command, pass_fds=(fd,))
        except OSError as exc:
            raise SectormonError(f"sim -- {argv[0]}: cannot start {command[0]} ({exc.strerror})") from None
        try:
            code = _drain(capture, process)
            threads = tuple(
                CapturedThread(vcpu, os.fdopen(tfd, "rb"), accesses, instructions)
                for vcpu, tfd, _records, accesses, instructions in capture.threads()
            )
        except (OSError, ValueError) as exc:  # the capture's own failures (_capture.c says which)
            raise SectormonError(f"sim -- {argv[0]}: {exc}; nothing was simulated") from None
        finally:
            if process.poll() is None:  # an error or an interrupt in sectormon: the program ends too
                process.send_signal(signal.SIGKILL)
                process.wait()
        dropped, truncated, start_code, sve = (
            capture.dropped,
            capture.truncated,
            capture.start_code,
            capture.sve,
        )
        events_fd, sites, stacks, shim_seen = (
            capture.events(),
            capture.sites(),
            capture.stacks(),
            capture.shim,
        )
        events = os.fdopen(events_fd, "rb") if events_fd >= 0 else None
        thread_of = {t.vcpu: i for i, t in enumerate(threads)}
        regions = tuple((thread_of[v], n, k, c) for v, n, k, c in capture.regions() if v in thread_of)
        capture.close()
        wall = time.monotonic() - started
        bias = start_code - target.code_vaddr
        objects = symbol_objects(target.path, bias) if start_code else None
        heap = None
        if shim_seen:
            objects, heap = heap_objects(
                target.path,
                bias,
                objects,
                [Site(*s) for s in sites],
                [t.vcpu for t in threads],
                stacks,
                events,
            )
        status = _shim_status(target, shim, shim_seen)
        return Program(
            tuple(argv), target, threads, code, dropped, truncated, wall, objects, sve, heap, status, regions
        )
    finally:
        os.close(fd)


def _region_json(thread: int, name: str | None, number: int, calls: int) -> dict[str, object]:
    return {"thread": thread, "name": name, "number": number, "calls": calls}


def _shim_status(target: Target, shim: object, seen: bool) -> Shim:
    """Whether the shim named the heap blocks and stacks, and why not."""
    if seen:
        return Shim(True)
    if not target.dynamic:
        return Shim(False, "a static binary (LD_PRELOAD does not apply: link it dynamically to name them)")
    if shim is None:
        return Shim(False, f'the {target.arch} shim is not built (docs/sim.md, "Real programs")')
    return Shim(False, "the program did not load it")


def _drain(capture: Capture, process: subprocess.Popen[bytes]) -> int:
    """Consume the ring until the program has ended and everything it handed over is read."""
    pump = capture.pump
    while True:
        if pump(POLL_S) < 0:  # the plugin closed the ring: QEMU is exiting
            return process.wait()
        code = process.poll()
        if code is not None:
            # Ended without closing (killed): what reached the ring is all there is.
            while pump(0.0) > 0:
                pass
            return code
