"""Run a program under QEMU with sectormon's plugin and capture its loads and stores per thread.

The program runs as it would alone: its stdin, stdout and stderr are sectormon's (or where the
caller sends them), its exit status is kept for sectormon to return (:class:`Program`). Meanwhile
the compiled consumer drains the plugin's ring in a thread of its own (the GIL released while it
waits), so a program that accesses memory faster than the consumer keeps up waits for it instead
of losing accesses. A :class:`TracedRun` is one such run: :func:`trace_program` waits for its end
(``sim --summary``: every run of the model then reads the same threads again); a *live* one writes
the records to the threads' files as they come and lists its threads as they appear, so the frame
stream simulates the program while it runs (:class:`~sectormon.sim.qemu.workload.LiveProgram`).

The ring is an anonymous shared-memory file (``memfd``) QEMU inherits and the plugin maps and
closes before the program starts: the program never sees it, and nothing is left in /dev/shm.
A capture keeps at most :data:`MAX_RECORDS` records (each 16 bytes on disk, one per run of
accesses to a line); accesses past it are counted as ``truncated``, not simulated.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from sectormon.errors import SectormonError
from sectormon.sim.objects import DataObjects
from sectormon.sim.qemu.heap import NO_SHIM, HeapObjects, Shim, Site, heap_objects
from sectormon.sim.qemu.symbols import symbol_objects
from sectormon.sim.qemu.target import Target, check_built, read_target

RING_WORDS = 1 << 22  # 32 MiB of 8-byte words: some 4 million accesses in flight
MAX_RECORDS = 1 << 28  # 4 GiB of records on disk
POLL_S = 0.05
SYNC_S = 0.02  # a live run writes the records to the threads' files at least this often
STOP_GRACE_S = 2.0  # SIGTERM, then SIGKILL after this, as a session ends its command


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


def _allow_open_files() -> None:
    """Raise the soft limit of open files to the hard one: each traced thread's records are a
    file, open twice (the consumer's and the reader's), so a program of 1,000 threads needs some
    2,000 descriptors, past the usual soft limit of 1,024. The program inherits the raised soft
    limit (its hard limit is the same as without sectormon)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):  # an unlimited hard limit the kernel refuses
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def trace_program(argv: Sequence[str]) -> Program:
    """Run ``argv`` under QEMU with the plugin to its end; its threads' captured records."""
    return TracedRun(argv).result()


class TracedRun:
    """A program running under QEMU with the plugin, its ring pumped by a thread of its own.

    The pump thread drains the ring into the threads' records files (the GIL released while it
    waits) until the program has ended and everything it handed over is kept, then stores the
    threads' last records and sets :attr:`ended`. With ``live``, it also writes the records to
    the files as they come (about every :data:`SYNC_S`) and lists the threads as they appear
    (:meth:`threads_seen`), so a simulation can read them while the program runs
    (:mod:`.workload`). :meth:`stop` ends the program as a session ends a launched command
    (SIGTERM, then SIGKILL after a grace period); :meth:`result` waits for the end. ``stdio``:
    the program's stdin, stdout and stderr descriptors (None: sectormon's own).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        live: bool = False,
        stdio: tuple[int | None, int | None, int | None] = (None, None, None),
    ) -> None:
        check_built()
        from sectormon.sim.qemu._capture import HEADER_BYTES, Capture

        _allow_open_files()

        self.argv = tuple(argv)
        self.target = read_target(argv[0])
        self.live = live
        self.stopped = False  # stop() ended it: its exit code is not the program's own
        self.ended = False
        self.objects: DataObjects | None = None
        # Where the program's code was loaded less its ELF address, once the plugin said (a call
        # site's ELF address is its address less this); known with the objects.
        self.load_bias: int | None = None
        self._objects_read = False
        self._seen: list[tuple[int, int]] = []  # (vcpu, records fd) in the order they appeared
        self._changed = threading.Condition()
        self._program: Program | None = None
        self._error: str | None = None
        self._fd = os.memfd_create("sectormon-qemu-ring", os.MFD_CLOEXEC)
        try:
            os.ftruncate(self._fd, HEADER_BYTES + RING_WORDS * 8)
            self._capture = Capture(self._fd, RING_WORDS, MAX_RECORDS)
            # A live run's readers name heap blocks and stacks from this (its own descriptor:
            # the capture closes its file at the end, the readers may still be reading).
            self.events_fd = self._capture.live_events() if live else -1
            self._shim = self.target.shim() if self.target.dynamic else None
            command = [*self.target.qemu_command(f"ring_fd={self._fd}", self._shim), *argv[1:]]
            self._started = time.monotonic()
            try:
                stdin, stdout, stderr = stdio
                self._process = subprocess.Popen(
                    command, pass_fds=(self._fd,), stdin=stdin, stdout=stdout, stderr=stderr
                )
            except OSError as exc:
                raise SectormonError(
                    f"sim -- {argv[0]}: cannot start {command[0]} ({exc.strerror})"
                ) from None
        except BaseException:
            os.close(self._fd)
            raise
        self._pump = threading.Thread(target=self._run, name="sectormon-qemu-pump", daemon=True)
        self._pump.start()

    # -- the pump thread ------------------------------------------------------------------------
    def _run(self) -> None:
        capture = self._capture
        try:
            code = self._drain()
            rows = capture.threads()  # the threads' last records, written
            if self.live:
                self._publish()  # threads that came since the last look, before the end is said
            if not self._objects_read:
                self._read_objects()
            threads = tuple(
                CapturedThread(vcpu, os.fdopen(tfd, "rb"), accesses, instructions)
                for vcpu, tfd, _records, accesses, instructions in rows
            )
            objects, heap = self._heap_objects(threads)
            thread_of = {t.vcpu: i for i, t in enumerate(threads)}
            regions = tuple((thread_of[v], n, k, c) for v, n, k, c in capture.regions() if v in thread_of)
            self._program = Program(
                self.argv,
                self.target,
                threads,
                code,
                capture.dropped,
                capture.truncated,
                time.monotonic() - self._started,
                objects,
                capture.sve,
                heap,
                _shim_status(self.target, self._shim, capture.shim),
                regions,
            )
        except (OSError, ValueError) as exc:  # the capture's own failures (_capture.c says which)
            simulated = "nothing more was simulated" if self.live else "nothing was simulated"
            self._error = f"sim -- {self.argv[0]}: {exc}; {simulated}"
        finally:
            if self._process.poll() is None:  # a failed capture: the program ends too
                self._process.send_signal(signal.SIGKILL)
                self._process.wait()
            capture.close()
            os.close(self._fd)
            with self._changed:
                self.ended = True
                self._changed.notify_all()

    def _heap_objects(
        self, threads: tuple[CapturedThread, ...]
    ) -> tuple[DataObjects | None, HeapObjects | None]:
        """The program's objects with its heap blocks and stacks when the shim reported them
        (:mod:`.heap`), and the reader's tables for them; else its globals alone."""
        capture = self._capture
        if not capture.shim:
            return self.objects, None
        events_fd = capture.events()
        events = os.fdopen(events_fd, "rb") if events_fd >= 0 else None
        return heap_objects(
            self.target.path,
            capture.start_code - self.target.code_vaddr,
            self.objects,
            [Site(*s) for s in capture.sites()],
            [t.vcpu for t in threads],
            capture.stacks(),
            events,
        )

    def _drain(self) -> int:
        """Consume the ring until the program has ended and everything it handed over is read."""
        pump = self._capture.pump
        process = self._process
        synced = time.monotonic()
        while True:
            consumed = pump(POLL_S)
            if consumed < 0:  # the plugin closed the ring: QEMU is exiting
                return process.wait()
            code = process.poll()
            if code is not None:
                # Ended without closing (killed): what reached the ring is all there is.
                while pump(0.0) > 0:
                    pass
                return code
            if self.live and (consumed == 0 or time.monotonic() - synced >= SYNC_S):
                self._publish()
                synced = time.monotonic()

    def _publish(self) -> None:
        """Write the records so far and name the threads seen for the first time (live runs)."""
        seen = self._capture.sync()
        if len(seen) == len(self._seen):
            with self._changed:
                self._changed.notify_all()  # their files grew
            return
        if not self._objects_read:
            self._read_objects()  # known before the first thread is: the code ran first
        known = {vcpu for vcpu, _fd in self._seen}
        fresh = [(vcpu, self._capture.records_fd(vcpu)) for vcpu in seen if vcpu not in known]
        with self._changed:
            self._seen += fresh
            self._changed.notify_all()

    def _read_objects(self) -> None:
        start_code = self._capture.start_code
        if start_code:
            self.load_bias = start_code - self.target.code_vaddr
            self.objects = symbol_objects(self.target.path, self.load_bias)
        self._objects_read = True

    # -- what the other threads ask ---------------------------------------------------------------
    def threads_seen(self, first: int = 0) -> list[tuple[int, int]]:
        """``(vcpu, fd)`` of the threads seen so far (a live run) from the ``first``-th, in the
        order they appeared; the descriptors belong to this run (:meth:`close` closes them)."""
        with self._changed:
            return self._seen[first:]

    def wait_started(self) -> None:
        """Wait until the first thread is seen (a live run), or the program has ended."""
        with self._changed:
            self._changed.wait_for(lambda: self.ended or bool(self._seen))

    def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for records or threads to come, or the end."""
        with self._changed:
            if not self.ended:
                self._changed.wait(timeout)

    @property
    def exit_code(self) -> int | None:
        """The program's exit code once it has ended (negative: a signal), else None."""
        return self._process.poll() if self.ended else None

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """End a program still running, as a session ends its command: SIGTERM, then SIGKILL
        after ``grace`` seconds; returns when the capture has ended."""
        if not self.ended and self._process.poll() is None:
            self.stopped = True
            self._process.send_signal(signal.SIGTERM)
            self._pump.join(grace)
            if self._pump.is_alive():
                self._process.send_signal(signal.SIGKILL)
        self._pump.join()

    def kill(self) -> None:
        """SIGKILL the program at once, without waiting: sectormon is ending without closing
        its session (:mod:`sectormon.session.stopping`) and leaves no orphan behind."""
        if self._process.poll() is None:
            self.stopped = True
            self._process.send_signal(signal.SIGKILL)

    def result(self) -> Program:
        """The traced run once the program has ended (waits for it)."""
        try:
            self._pump.join()
        except BaseException:  # an interrupt in sectormon: the program ends too
            self._process.send_signal(signal.SIGKILL)
            self._pump.join()
            raise
        if self._program is None:
            raise SectormonError(self._error or f"sim -- {self.argv[0]}: the capture failed")
        return self._program

    def close(self) -> None:
        """Stop the program if it still runs, and close the live records descriptors."""
        self.stop()
        with self._changed:
            seen, self._seen = self._seen, []
        for _vcpu, fd in seen:
            os.close(fd)
        if self.events_fd >= 0:
            os.close(self.events_fd)
            self.events_fd = -1
