"""A running program's threads that wait or end, so that they do not hold the simulated machine.

The model keeps its threads in step: a simulated thread whose stream has nothing to give holds
every other one at the point it has reached. A live run (:class:`~.workload.LiveProgram`) frees
them two ways:

* **A thread that ended** (the plugin's end record, ``SMQ_EV_END`` in ring.h) ends its stream
  there: the engine finishes it as it finishes a kernel's thread, and the session reports the unit
  ended. QEMU gives an ended thread's index to the next thread created, whose records follow in the
  same file: :meth:`LiveThreads.reused` hands such a thread out as a new simulated thread on the
  ended one's CPU (that core is free), reading the file on from the end record. (``--summary``
  reads each index's file through: one simulated thread per index, its threads one after the
  other.) A looping run (the TUI) does not read an ended thread again: its next pass is empty,
  so it stays finished; the threads alive at the program's end loop after it.
* **A waiting thread** (in ``pthread_join``, a barrier's sleep, I/O): once its records file has had
  nothing new for :data:`IDLE_GRACE_S` of wall-clock time while another thread has records to
  simulate, its stream yields :data:`~sectormon.sim.stream.IDLE` and the engine moves its clock
  on without accesses, as an idle core's. When no thread has records left, the streams wait: the
  program is waiting too (or computing without memory accesses), and the machine with it.

Which thread waited when is wall-clock timing, so a live run's results depend on it (how fast
QEMU and the model ran); ``--summary`` simulates the whole capture afterwards and does not.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sectormon.sim.qemu._capture import Reader

IDLE_GRACE_S = 0.05  # a thread's file quiet this long (wall clock) while others have records: it is idle


@dataclass(frozen=True, slots=True)
class Ended:
    """A simulated thread whose traced thread ended: its vCPU, its records file (``fd``), the CPU
    it ran on, and the file's bytes up to its end record (what a later thread given the index
    writes comes after)."""

    vcpu: int
    fd: int
    cpu: int
    offset: int


class LiveThreads:
    """The live streams of one running program: which are read where, and which ended.

    ``waiting`` says whether threads the run has seen but not yet handed to the machine exist
    (they have records, and the machine must come back to add them). Only the thread that
    runs the model calls these methods (the streams run in it)."""

    def __init__(self, waiting: Callable[[], bool]) -> None:
        self._waiting = waiting
        self._reading: dict[int, tuple[int, Reader]] = {}  # simulated thread id: (records fd, its reader)
        self._ended: list[Ended] = []  # not yet reused
        self._finished: set[int] = set()  # simulated threads that met their end record
        self._busy = -1  # the thread others_have_records last found with records

    def reading(self, tid: int, fd: int, reader: Reader) -> None:
        """Thread ``tid``'s stream reads ``fd`` with ``reader``."""
        self._reading[tid] = (fd, reader)

    def stopped(self, tid: int) -> None:
        """Thread ``tid``'s stream is over (its end, the program's, or the machine let it go)."""
        self._reading.pop(tid, None)

    def ended(self, tid: int, thread: Ended) -> None:
        """Thread ``tid`` met its end record: its file is kept for a later thread on its vCPU."""
        self.stopped(tid)
        self._ended.append(thread)
        self._finished.add(tid)

    def finished(self, tid: int) -> bool:
        """Whether thread ``tid`` met its end record (a looping run's next pass of it is empty)."""
        return tid in self._finished

    def others_have_records(self, tid: int) -> bool:
        """Whether a thread other than ``tid`` has records its stream has not read yet (or is
        about to be handed out): then ``tid``, having nothing, must not hold the machine."""
        if self._waiting() or self.pending():
            return True
        # The thread found busy last time first: with many threads waiting on a few busy ones,
        # each asks one file instead of every file.
        if self._busy != tid and self._unread(self._busy):
            return True
        for other in self._reading:
            if other != tid and self._unread(other):
                self._busy = other
                return True
        return False

    def _unread(self, tid: int) -> bool:
        entry = self._reading.get(tid)
        return entry is not None and os.fstat(entry[0]).st_size > entry[1].offset

    def pending(self) -> bool:
        """Whether a later thread was given an ended thread's vCPU (records after its end)."""
        return any(os.fstat(e.fd).st_size > e.offset for e in self._ended)

    def reused(self) -> list[Ended]:
        """The ended threads whose vCPU a later thread now runs on, taken off the list: that
        thread's records start at ``offset`` of the same file."""
        out = [e for e in self._ended if os.fstat(e.fd).st_size > e.offset]
        self._ended = [e for e in self._ended if e not in out]
        return out
