"""A running program's heap sites and stacks, named as its threads meet them (docs/sim.md).

After a run, :func:`~.heap.heap_objects` names every allocation site at once. While the program
runs its sites are not known ahead: the compiled reader (``_capture.Reader(live=...)``) asks
:class:`LiveObjects` for the object of a call site the first time it replays an allocation from
it, and for the object of each thread's stack. The names are the summary's
(:func:`~.heap.site_name`: ``heap:FUNCTION:LINE``, ``heap:lib``, ``stack:T``), symbolized when
the site first comes and cached per site; sites with one name are one object. Each new name gets
the next object id and is appended to :attr:`LiveObjects.names`, the list every simulated thread's
spec shares: a name is there before any record carries its id, so a reader of the list (the
samples' labels) never meets an id it cannot name.

The simulated threads' per-object counters are sized when a thread starts (flag slots per
object, :mod:`sectormon.sim.thread`, and the compiled core alike), so the ids are bounded:
:data:`LIVE_OBJECTS` names past the globals. A site or stack met after that is ``[other]`` and
the run's note says how many were (:meth:`LiveObjects.note`); the summary, which names sites
after the run, keeps the sites that allocated the most bytes instead.

``stack:T``: T is the thread's vCPU index, the summary's thread number (QEMU numbers the threads
from 0 as they start, and a thread that ends hands its number to the next one).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from sectormon.attribution.elf import ElfImage
from sectormon.errors import UsageError
from sectormon.sim.qemu.call_lines import inlined_call_lines
from sectormon.sim.qemu.heap import HEAP_PREFIX, STACK_PREFIX, image_of, site_name

# Object ids for heap sites and stacks past the globals: each costs every simulated thread 128
# flag slots of per-object counters (a few KiB), whether the program allocates or not.
LIVE_OBJECTS = 64


def check_live_assign(assign: Mapping[str, str]) -> None:
    """Refuse ``--assign`` of a heap site or stack in a live run: its object does not exist
    when the run starts (its flags, sector included, are fixed by then)."""
    for name, text in assign.items():
        if name.startswith((HEAP_PREFIX, STACK_PREFIX)):
            raise UsageError(
                f"--assign {name}={text}: heap sites and stacks are named only as a running program "
                "meets them; assign them with sim --summary or --advise, which trace it first"
            )


class LiveObjects:
    """The object ids of a running program's heap sites and stacks (see the module docstring).

    ``path`` is the program, ``bias`` its load bias (a call site's ELF address is its return
    address less ``bias``, less one: the call itself), ``base`` the names the ids start after (the
    globals, ``[other]`` first)."""

    def __init__(self, path: str, bias: int | None, base: Sequence[str]) -> None:
        self.path = path
        self.bias = bias
        self.names: list[str] = list(base)
        self.capacity = len(base) + LIVE_OBJECTS
        self.unnamed = 0  # sites and stacks past the capacity: [other]
        self._sites: dict[int, int] = {}  # call site -> object id
        self._ids: dict[str, int] = {}  # name -> object id
        self._image: ElfImage | None = None
        self._image_read = False
        self._lock = threading.Lock()  # each simulated thread's reader asks; one names at a time

    def site(self, address: int) -> int:
        """The object id of the heap blocks allocated by the call returning to ``address``."""
        with self._lock:
            known = self._sites.get(address)
            if known is None:
                known = self._sites[address] = self._id(self._site_name(address))
            return known

    def stack(self, vcpu: int) -> int:
        """The object id of the stack of the thread on ``vcpu``."""
        with self._lock:
            return self._id(f"{STACK_PREFIX}{vcpu}")

    def note(self) -> str | None:
        """What was not named for want of ids (None: everything was)."""
        if not self.unnamed:
            return None
        return (
            f"{self.unnamed:,} heap allocation site(s) and stacks met after the first {LIVE_OBJECTS} were "
            "counted as [other] while the program ran (sim --summary names them all after the run)"
        )

    def _id(self, name: str) -> int:
        known = self._ids.get(name)
        if known is not None:
            return known
        if len(self.names) >= self.capacity:
            self.unnamed += 1
            self._ids[name] = 0
            return 0
        self._ids[name] = len(self.names)
        self.names.append(name)  # after the id is known, before any record carries it
        return self._ids[name]

    def _site_name(self, address: int) -> str:
        if not self._image_read:
            self._image = image_of(self.path)
            self._image_read = True
        image = self._image
        if image is None or self.bias is None:
            return site_name(None, 0)
        vaddr = address - self.bias - 1  # the call instruction, on the caller's line
        call_line = inlined_call_lines(self.path, [vaddr]).get(vaddr) if image.has_lines else None
        return site_name(image, vaddr, call_line)
