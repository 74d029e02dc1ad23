"""One marked run's region counting: the table, the handshake server and the environment that joins them.

What a session sets up before it starts a marked program, and what the tests set up to play
sectormon: :meth:`MarkerEndpoint.environment` gives the variables the program's marker library
reads (the socket, the table, the region level), :meth:`MarkerEndpoint.read` the region readings
at any moment, live or after the program ended.
"""

from __future__ import annotations

from sectormon.data.regions import RegionSnapshot
from sectormon.regions import layout
from sectormon.regions.server import MarkerServer, OpenGroups
from sectormon.regions.table import RegionTable


class MarkerEndpoint:
    """Counts the regions a program marks; ``level``: calls with a higher level are ignored;
    ``rotated``: the groups ``open_groups`` gives are enabled and disabled by the caller
    (:class:`MarkerServer`)."""

    def __init__(
        self,
        open_groups: OpenGroups,
        *,
        level: int = 0,
        rotated: bool = False,
        max_threads: int = 1024,
        max_slots: int = 4096,
    ) -> None:
        self.level = level
        self.table = RegionTable(max_threads=max_threads, max_slots=max_slots)
        try:
            self.server = MarkerServer(open_groups, rotated=rotated)
        except BaseException:
            self.table.close()
            raise

    def environment(self) -> dict[str, str]:
        """The variables to add to the marked program's environment."""
        return {
            layout.ENV_SOCKET: self.server.socket_path,
            layout.ENV_TABLE: self.table.path,
            layout.ENV_LEVEL: str(self.level),
        }

    def read(self) -> RegionSnapshot:
        return self.table.read(self.server.groups_of)

    def close(self) -> None:
        self.server.close()
        self.table.close()

    def __enter__(self) -> MarkerEndpoint:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
