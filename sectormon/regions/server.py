"""The handshake: a marking thread asks for its counter groups, sectormon opens them and hands them over.

The library in the marked program connects to the unix socket named in its environment
(``SOCK_SEQPACKET``: one request, one reply, no framing) from the thread that marks, sending its
tid. The socket is abstract (``@name``: no file, so nothing is left behind however sectormon ends)
with a random name, and only a process of this user that asks for one of its own threads is
answered (the kernel's ``SO_PEERCRED`` says who is on the other end).

The server calls ``open_groups(tid)``: groups opened on that thread alone (no ``inherit``, so a
region never includes the counts of threads or processes it starts), and sends back each group's
event ids in the group's own order with the leaders' descriptors attached (SCM_RIGHTS); the library
then reads them itself at every marker. The server keeps the groups: the reader names their events,
and reads them for a region that is still open.

Which groups a thread gets is the caller's business (the live session passes its perf source's
opener; the tests pass one that opens software events). A refusal (the opener raises) is a reply
too: the thread then counts calls only, and the reason is kept in :attr:`MarkerServer.errors`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from sectormon.errors import SectormonError
from sectormon.perf.group import GroupValues
from sectormon.regions import layout, rendezvous


@runtime_checkable
class MarkerGroup(Protocol):
    """A counter group as the handshake needs it (:class:`sectormon.perf.group.PerfGroup` is one)."""

    @property
    def events(self) -> tuple[str, ...]: ...

    @property
    def ids(self) -> tuple[int, ...]: ...

    @property
    def leader_fd(self) -> int: ...

    def read(self) -> GroupValues: ...


OpenGroups = Callable[[int], Sequence[MarkerGroup]]

_PEERCRED = struct.Struct("=3i")  # pid, uid, gid


class MarkerServer:
    """Listens on ``socket_path`` in a daemon thread until :meth:`close`.

    ``rotated``: the caller enables and disables the groups it hands out (the sampler's rotation),
    so a group's enabled time is only part of the region; the library then also reads the
    thread's CPU clock at each marker, the time each group's share is taken of (one more system
    call per marker, which groups that always count do not need).
    """

    def __init__(
        self, open_groups: OpenGroups, *, rotated: bool = False, listening: tuple[int, str] | None = None
    ) -> None:
        """``listening``: a socket already listening (its descriptor, taken over, and its
        ``@name``), made by :func:`~sectormon.regions.rendezvous.listen` before a program that
        might mark was started."""
        self._flags = layout.REPLY_ROTATED if rotated else 0
        self._open_groups = open_groups
        self._groups: dict[int, tuple[MarkerGroup, ...]] = {}
        self._lock = threading.Lock()
        self.errors: list[str] = []
        fd, self.socket_path = rendezvous.listen() if listening is None else listening
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=fd)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="sectormon-markers", daemon=True)
        self._thread.start()

    def groups_of(self, tid: int) -> tuple[MarkerGroup, ...]:
        """The groups handed to thread ``tid`` (empty when it never asked or was refused)."""
        with self._lock:
            return self._groups.get(tid, ())

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            with conn:
                try:
                    self._answer(conn)
                except OSError:
                    continue  # the thread gave up (its timeout) or its process ended: nothing to answer

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(10.0)
        request = conn.recv(layout.REQUEST.size)
        if len(request) != layout.REQUEST.size:
            return
        magic, tid, pid = layout.REQUEST.unpack(request)
        peer_pid, peer_uid, _gid = _PEERCRED.unpack(
            conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
        )
        # Only this user's processes are answered (anyone may connect to an abstract socket); a
        # thread asks for itself, in the process the kernel says is on the other end.
        if magic != layout.MAGIC or peer_pid != pid or peer_uid != os.getuid():
            conn.send(_reply(layout.REPLY_REFUSED, (), 0))
            return
        try:
            groups = tuple(self._open_groups(tid))
            _check_bounds(groups)
        except SectormonError as exc:
            with self._lock:
                self.errors.append(f"thread {tid}: {exc}")
            conn.send(_reply(layout.REPLY_REFUSED, (), 0))
            return
        with self._lock:
            self._groups[tid] = groups
        reply = _reply(layout.REPLY_OK, groups, self._flags)
        socket.send_fds(conn, [reply], [g.leader_fd for g in groups])

    def close(self) -> None:
        """Stop answering; the socket's name goes with it (the groups stay with whoever opened them)."""
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(timeout=5)


class TooManyEvents(SectormonError):
    """The opener returned more groups or events than the marker library holds."""


def _check_bounds(groups: Sequence[MarkerGroup]) -> None:
    if len(groups) > layout.MAX_GROUPS:
        raise TooManyEvents(
            f"{len(groups)} groups for one thread; the marker library holds {layout.MAX_GROUPS}"
        )
    for group in groups:
        if not 1 <= len(group.ids) <= layout.MAX_EVENTS:
            raise TooManyEvents(
                f"a group of {len(group.ids)} events; the marker library holds 1 to {layout.MAX_EVENTS}"
            )


def _reply(status: int, groups: Sequence[MarkerGroup], flags: int) -> bytes:
    nevents = [len(g.ids) for g in groups] + [0] * (layout.MAX_GROUPS - len(groups))
    ids: list[int] = []
    for g in range(layout.MAX_GROUPS):
        row = list(groups[g].ids) if g < len(groups) else []
        ids.extend(row + [0] * (layout.MAX_EVENTS - len(row)))
    return layout.REPLY.pack(layout.MAGIC, status, len(groups), flags, 0, *nevents, *ids)
