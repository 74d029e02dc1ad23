"""Which units stand in for their CMG under ``--proxy N``, and when a role moves to another unit.

The sampler's :class:`~sectormon.rotation.proxy_roles.ProxyRoles` asks :class:`StandIns` which
units count the rotating groups, reports what each unit ran, and opens and closes the groups the
answers call for; the setting itself and the scaling of the stand-ins' counts are
:mod:`sectormon.metrics.proxy`. Pure logic, no I/O, so the hand-over rule is tested on its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sectormon.data.readings import Unit


def pool_of(unit: Unit) -> int | None:
    """The pool a unit stands in for: its CMG (``None``: a thread bound to no CMG)."""
    return unit.cmg


IDLE_SHARE = 0.05
"""A stand-in that ran at most this share of a review window ran "nothing" in it."""

RUN_SHARE = 0.01
"""A unit takes an idle stand-in's role only when it ran at least this share of the window (one
clock tick of ``/proc``'s times in a 1 s window)..."""

BUSIER = 10.0
"""... and at least this many times what the stand-in ran: a role moves to a unit that clearly
runs, never between units that share the CPUs alike (48 threads on 2 CPUs run 4 % each)."""


class StandIns:
    """Which per-PE units count the rotating groups: per CMG the ``per_cmg`` units that ran most
    when the CMG needs stand-ins (ties, and units whose run time nobody can tell, such as CPUs
    and simulated cores, in the order the source lists them), kept while they live and run. When
    one ends, the busiest other unit of its CMG takes over; when one ran (nearly) nothing for a
    whole review window while another unit of its CMG ran, :meth:`review` hands its role over.
    CMG units (``kind == "cmg"``) are never proxied."""

    def __init__(self, per_cmg: int) -> None:
        if per_cmg < 1:
            raise ValueError(f"per_cmg must be >= 1, not {per_cmg}")
        self.per_cmg = per_cmg
        self._chosen: dict[int | None, list[Unit]] = {}
        self._keys: set[str] = set()
        self._since: dict[str, float] = {}  # when each stand-in took its role (source seconds)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def units(self) -> tuple[Unit, ...]:
        """The stand-ins now, CMG by CMG (no CMG last)."""
        pools = sorted(self._chosen, key=lambda p: (p is None, p if p is not None else 0))
        return tuple(u for p in pools for u in self._chosen[p])

    def short(self, alive: Sequence[Unit]) -> bool:
        """Whether :meth:`update` would choose a stand-in among ``alive`` (the caller then reads
        the units' run times for it)."""
        spare: dict[int | None, int] = {}
        for unit in alive:
            if unit.kind != "cmg" and unit.key not in self._keys:
                pool = pool_of(unit)
                spare[pool] = spare.get(pool, 0) + 1
        live = {u.key for u in alive}
        return any(
            len([u for u in self._chosen.get(pool, ()) if u.key in live]) < self.per_cmg for pool in spare
        )

    def update(
        self, alive: Sequence[Unit], *, ran: Mapping[str, float] | None = None, now: float = 0.0
    ) -> tuple[tuple[Unit, ...], tuple[tuple[Unit, Unit], ...]]:
        """Follow the live units: the units that start standing in now, and ``(ended, successor)``
        pairs for stand-ins that ended and the unit that took over. ``ran``: each unit's CPU
        seconds so far, the busiest chosen first (absent: the source's order); ``now``: the
        source's time, from which a new stand-in holds its role."""
        live = {u.key for u in alive}
        gone: dict[int | None, list[Unit]] = {}
        for pool, chosen in self._chosen.items():
            kept = [u for u in chosen if u.key in live]
            if len(kept) != len(chosen):
                gone[pool] = [u for u in chosen if u.key not in live]
                self._chosen[pool] = kept
        held = {u.key for chosen in self._chosen.values() for u in chosen}
        new: list[Unit] = []
        replaced: list[tuple[Unit, Unit]] = []
        for unit in _busiest_first(alive, ran or {}):
            if unit.kind == "cmg" or unit.key in held:
                continue
            pool = pool_of(unit)
            chosen = self._chosen.setdefault(pool, [])
            if len(chosen) >= self.per_cmg:
                continue
            chosen.append(unit)
            held.add(unit.key)
            self._since[unit.key] = now
            new.append(unit)
            ended = gone.get(pool)
            if ended:
                replaced.append((ended.pop(0), unit))
        self._keys = held
        self._since = {key: t for key, t in self._since.items() if key in held}
        return tuple(new), tuple(replaced)

    def review(
        self, alive: Sequence[Unit], ran: Mapping[str, float], *, window: float, now: float
    ) -> tuple[tuple[Unit, Unit], ...]:
        """Hand idle stand-ins' roles over: ``ran`` holds each unit's CPU seconds over the last
        ``window`` seconds (a unit absent from it is not judged). A stand-in that has held its
        role for the whole window and ran at most :data:`IDLE_SHARE` of it gives the role to the
        unit of its CMG that ran most, when that one ran at least :data:`RUN_SHARE` of it and
        :data:`BUSIER` times the stand-in's time. A role moves at most once per window (the
        successor holds it from ``now``), and only to a unit that did not stand in when the review
        began: a stand-in found idle in this window hands its role on and takes no other (it may
        have run enough for :data:`RUN_SHARE`, and next to a stand-in that ran nothing, for
        :data:`BUSIER`). Returns ``(idle, successor)`` pairs."""
        moved: list[tuple[Unit, Unit]] = []
        judged = frozenset(self._keys)
        for pool, chosen in self._chosen.items():
            for at, unit in enumerate(chosen):
                own = ran.get(unit.key)
                if own is None or own > IDLE_SHARE * window:
                    continue
                if now - self._since.get(unit.key, now) < window:
                    continue
                candidates = [
                    u
                    for u in alive
                    if u.kind != "cmg"
                    and pool_of(u) == pool
                    and u.key not in judged
                    and u.key not in self._keys
                    and ran.get(u.key, 0.0) >= max(RUN_SHARE * window, BUSIER * own)
                ]
                if not candidates:
                    continue
                successor = _busiest_first(candidates, ran)[0]
                chosen[at] = successor
                self._keys.discard(unit.key)
                self._keys.add(successor.key)
                del self._since[unit.key]
                self._since[successor.key] = now
                moved.append((unit, successor))
        return tuple(moved)


def _busiest_first(units: Sequence[Unit], ran: Mapping[str, float]) -> list[Unit]:
    """``units`` by CPU seconds, most first; a stable sort keeps the source's order on ties."""
    if not ran:
        return list(units)
    return sorted(units, key=lambda u: -ran.get(u.key, 0.0))
