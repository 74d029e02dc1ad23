"""The quick ``stat``'s marked regions: offered to every command, counted by the engine's own parts.

A marked program's library reads the socket and the table from its environment, and a thread's
first marker asks for its counters there (:mod:`sectormon.regions.server`). The quick start
(:mod:`.stat_quick`) cannot know beforehand whether the command marks, so it offers both, made
with the C modules alone (:mod:`sectormon.regions.rendezvous`), and waits on the socket beside
the command. The first thread that asks brings in the engine's server, which takes the listening
socket over and answers it and every later thread from its own thread with a group of the run's
events opened on that thread alone (no ``inherit``: a region never holds what the thread starts),
as the engine's sampler hands a thread its groups. The marker library waits up to 10 s for that
answer; the server's imports take a few tens of milliseconds. Once the command has ended, the
engine's table reader and region scopes (:class:`~sectormon.metrics.regions.RegionScopes`) turn
the table into the same regions a session's final frame holds, with the ad-hoc profile the engine
would have made for ``-e``, and :func:`region_blocks` into stat's blocks. A program that never
marks costs a memfd and a socket, and imports none of it.
"""

from __future__ import annotations

import os

from sectormon.host import roots
from sectormon.regions import layout, rendezvous

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from sectormon.commands.stat_counts import Shown
    from sectormon.commands.stat_report import Block
    from sectormon.data.frames import RegionStats
    from sectormon.perf.group import PerfGroup
    from sectormon.regions.server import MarkerServer

MAX_THREADS = 1024  # the engine's bounds (sectormon.regions.endpoint)
MAX_SLOTS = 4096


class QuickRegions:
    """The rendezvous offered to one run of the command; ``events``: (name, perf type, config) of
    the run's events, ``specs`` their perf names as typed after ``-e``."""

    def __init__(self, events: Sequence[tuple[str, int, int]], specs: Sequence[str]) -> None:
        self._events = list(events)
        self._specs = list(specs)
        self._table_fd: int | None = rendezvous.create_table_file(MAX_THREADS, MAX_SLOTS)
        try:
            self.listener_fd, self.socket_path = rendezvous.listen()
        except BaseException:
            os.close(self._table_fd)
            raise
        self.listening = True  # False once the server has the socket
        self._server: MarkerServer | None = None
        self._groups: list[PerfGroup] = []
        self.stats: dict[str, RegionStats] = {}
        self.warnings: list[str] = []
        self.shown: Shown | None = None

    def environment(self) -> dict[str, str]:
        """The variables the marker library reads, as the engine sets them (region level 0)."""
        return {
            layout.ENV_SOCKET: self.socket_path,
            layout.ENV_TABLE: os.path.join(roots.REAL_PROCFS, str(os.getpid()), "fd", str(self._table_fd)),
            layout.ENV_LEVEL: "0",
        }

    def upgrade(self) -> None:
        """A thread asks: the engine's server takes the socket and answers from its own thread."""
        from sectormon.perf.events import EventSpec
        from sectormon.perf.group import PerfGroup
        from sectormon.regions.server import MarkerServer

        names = tuple(name for name, _, _ in self._events)
        specs = [
            EventSpec(spec, type_, config)
            for spec, (_, type_, config) in zip(self._specs, self._events, strict=True)
        ]

        def open_groups(tid: int) -> tuple[PerfGroup, ...]:
            group = PerfGroup(specs, pid=tid, names=names)
            self._groups.append(group)
            group.enable()
            return (group,)

        self._server = MarkerServer(open_groups, listening=(self.listener_fd, self.socket_path))
        self.listening = False

    def finish(self) -> QuickRegions:
        """The command has ended: its regions and what went wrong in its table (nothing to do
        when no thread asked)."""
        if self._server is None or self._table_fd is None:
            return self
        from sectormon.commands.stat_counts import Shown
        from sectormon.data.regions import EMPTY, table_news
        from sectormon.metrics.formulas import MetricSet
        from sectormon.metrics.regions import RegionScopes
        from sectormon.profiles.adhoc import adhoc_profile
        from sectormon.profiles.event_list import parse_event_list
        from sectormon.profiles.resolve import load_profile
        from sectormon.regions.table import RegionTable

        table = RegionTable(max_threads=MAX_THREADS, max_slots=MAX_SLOTS, fd=self._table_fd)
        self._table_fd = None
        try:
            snapshot = table.read(self._server.groups_of)
        finally:
            table.close()
        adhoc = adhoc_profile(load_profile("generic"), parse_event_list(",".join(self._specs), "-e"), "-e")
        self.stats = RegionScopes(MetricSet(adhoc.profile), (), {}).build(snapshot.threads)
        self.warnings = [*table_news(EMPTY, snapshot), *self._server.errors]
        self.shown = Shown(adhoc.profile, adhoc.labels)
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        elif self.listening:
            os.close(self.listener_fd)
        self.listening = False
        for group in self._groups:  # open until here: the reader named their events by them
            group.close()
        self._groups = []
        if self._table_fd is not None:
            os.close(self._table_fd)
            self._table_fd = None


def region_blocks(runs: Sequence[QuickRegions]) -> list[Block]:
    """The regions' blocks over the runs whose programs marked (as ``stat``'s engine path gives them)."""
    from sectormon.commands.stat_counts import region_blocks as blocks

    shown = runs[0].shown
    assert shown is not None  # finish() sets it with the stats
    per_run: list[Mapping[str, RegionStats]] = [run.stats for run in runs]
    return blocks(shown, per_run)
