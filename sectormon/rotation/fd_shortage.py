"""Units that appear mid-run while no file descriptor is left for their groups: left uncounted,
said once, tried again once fds are freed.

perf stat cannot run out this way (its counters are inherited); sectormon opens groups per thread,
so a target that starts threads faster than the fd limit allows would otherwise end the run, and
the launched command with it, for one more thread, losing everything counted so far.
"""

from __future__ import annotations

from sectormon.data.readings import Unit
from sectormon.errors import SectormonError


class FdShortage:
    """The units skipped for want of fds since the last time one ended."""

    def __init__(self) -> None:
        self._skipped: set[str] = set()
        self._warned = False

    def __contains__(self, key: object) -> bool:
        return key in self._skipped

    def skip(self, unit: Unit, exc: SectormonError) -> str | None:
        """Leave ``unit`` without groups (``exc``: the failed open); the warning to give, the
        first time only: it says whose work the figures leave out (a thread of a family is still
        counted in its inherited groups, which take no fd)."""
        self._skipped.add(unit.key)
        if self._warned:
            return None
        self._warned = True
        problem, fix_sep, fix = exc.message.rpartition(" (fix: ")
        if not fix_sep:
            problem, fix = exc.message, ""
        if unit.family is not None:  # its family's inherited groups count it all the same
            consequence = (
                f"has no row of its own: its counts are in pid {unit.family}'s totals, not in any "
                "thread's or core's"
            )
        else:
            consequence = "is not counted; the totals leave its work out"
        return (
            f"{problem}: {unit.kind} {unit.ident}, and any unit that starts while the limit "
            f"holds, {consequence}" + (f" (fix: {fix}" if fix_sep else "")
        )

    def fds_freed(self) -> None:
        """Some unit ended and closed its fds: the skipped units get another try."""
        self._skipped.clear()
