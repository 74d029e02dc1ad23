"""Marked regions in a live session: each marking thread gets the sampler's own counter groups,
and the region table is read with every slice.

A launched program's marker library asks, from each thread that marks, for that thread's groups
(:mod:`sectormon.regions.server`). The request arrives on the server's thread while the counters
belong to the sampler's: :class:`MarkerService` queues it, wakes the sampler, and the sampler
answers it on its own thread (:meth:`serve`) with the groups it already counts the thread with,
so the thread has one set of counters, rotated as every other. A thread the sampler counts with
inherited groups (a root of the target, whose groups also sum what it starts) or has not found
yet gets groups of its own, opened without ``inherit`` and rotated with the rest; a thread found
later takes them over as its unit's groups (:meth:`~sectormon.rotation.counters.OpenUnits.adopt`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from sectormon.data.regions import EMPTY, RegionSnapshot
from sectormon.errors import SectormonError
from sectormon.perf.group import GroupValues
from sectormon.regions.endpoint import MarkerEndpoint
from sectormon.regions.server import MarkerGroup
from sectormon.rotation.counters import OpenGroup

ANSWER_TIMEOUT = 10.0
"""Seconds a marking thread's first marker waits for the sampler (it answers at its next wake-up)."""


class HandedGroup:
    """One of the sampler's open groups as the marker library receives it: the profile's event
    names (frames key counts by them), the kernel's ids and the leader's descriptor."""

    def __init__(self, counter: OpenGroup) -> None:
        self._counter = counter

    @property
    def events(self) -> tuple[str, ...]:
        return self._counter.names

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(self._group().ids)

    @property
    def leader_fd(self) -> int:
        return int(self._group().leader_fd)

    def read(self) -> GroupValues:
        return self._counter.group.read()

    def _group(self) -> MarkerGroup:
        group = self._counter.group
        if not isinstance(group, MarkerGroup):
            raise SectormonError("this source's counter groups cannot be handed to a marked program")
        return group


class _Request:
    __slots__ = ("answer", "done", "tid")

    def __init__(self, tid: int) -> None:
        self.tid = tid
        self.answer: Sequence[MarkerGroup] | SectormonError = ()
        self.done = threading.Event()


class MarkerService:
    """The endpoint of one marked run, answered by the sampler; ``level``: fapp's region level;
    ``rotated``: the sampler enables and disables groups (``--rotation sync``)."""

    def __init__(self, *, level: int = 0, rotated: bool = False) -> None:
        self._lock = threading.Lock()
        self._pending: list[_Request] = []
        self._wake: Callable[[], None] = lambda: None
        self._closed = False
        self._last = EMPTY
        self.endpoint = MarkerEndpoint(self._request, level=level, rotated=rotated)

    def environment(self) -> dict[str, str]:
        """What the launched program's environment gets (the socket, the table, the level)."""
        return self.endpoint.environment()

    def wake_with(self, wake: Callable[[], None]) -> None:
        """How to wake the sampler when a request arrives (without it: at its next tick)."""
        self._wake = wake

    # -- the server's thread -------------------------------------------------------------------

    def _request(self, tid: int) -> Sequence[MarkerGroup]:
        request = _Request(tid)
        with self._lock:
            if self._closed:
                raise SectormonError("the session has ended")
            self._pending.append(request)
        self._wake()
        if not request.done.wait(ANSWER_TIMEOUT):
            raise SectormonError(f"the sampler did not answer within {ANSWER_TIMEOUT:g} s")
        if isinstance(request.answer, SectormonError):
            raise request.answer
        return request.answer

    # -- the sampler's thread ------------------------------------------------------------------

    @property
    def pending(self) -> bool:
        return bool(self._pending)

    def serve(self, groups_for: Callable[[int], Sequence[OpenGroup]]) -> None:
        """Answer every waiting thread with ``groups_for(tid)`` (a refusal when it raises)."""
        with self._lock:
            requests, self._pending = self._pending, []
        for request in requests:
            try:
                request.answer = tuple(HandedGroup(counter) for counter in groups_for(request.tid))
            except SectormonError as exc:
                request.answer = exc
            request.done.set()

    def read_changed(self) -> RegionSnapshot | None:
        """The region table now, or ``None`` when it is as it was at the previous call."""
        snapshot = self.endpoint.read()
        if snapshot == self._last:
            return None
        self._last = snapshot
        return snapshot

    def close(self) -> None:
        """Refuse what still waits, stop the server, remove the table."""
        with self._lock:
            self._closed = True
            requests, self._pending = self._pending, []
        for request in requests:
            request.answer = SectormonError("the session has ended")
            request.done.set()
        self.endpoint.close()
