"""``--proxy N`` on the sampler's open units: which units open the rotating groups, and the
groups opened and closed as the stand-in roles move.

:class:`~sectormon.rotation.stand_ins.StandIns` decides who stands in (pure logic); this
collaborator carries the decisions out on the open units: a unit that starts standing in opens
the rotating groups, one that gives its role up closes them, and each move is said in a warning
the recording keeps. Once per review window (:data:`STAND_IN_WINDOW`) it reads the units' CPU
seconds from the source, so a stand-in that ran nearly nothing hands its role to one that runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from sectormon.data.readings import Unit
from sectormon.errors import SectormonError
from sectormon.rotation.counters import OpenUnits, UnitGroups, is_gone
from sectormon.rotation.plan import PlannedGroup, RotationPlan
from sectormon.rotation.stand_ins import StandIns
from sectormon.sources.base import Source

STAND_IN_WINDOW = 1.0
"""Seconds of source time (at least two slices) over which a proxy stand-in's run time is judged:
one that ran nearly nothing in a window while another unit of its CMG ran hands its role over
(:meth:`sectormon.rotation.stand_ins.StandIns.review`), at most once per window."""


class ProxyRoles:
    """The stand-ins of ``per_cmg`` units per CMG, followed on ``units``."""

    def __init__(
        self,
        per_cmg: int,
        source: Source,
        plan: RotationPlan,
        units: OpenUnits,
        on_warning: Callable[[str], None],
    ) -> None:
        self._stand_ins = StandIns(per_cmg)
        self._source = source
        self._plan = plan
        self._units = units
        self._on_warning = on_warning
        self._review_at = 0.0  # source time of the last review of the stand-ins' run times
        self._cpu_then: dict[str, float] = {}  # each thread's CPU seconds at that review

    def stand_ins(self) -> tuple[Unit, ...]:
        return self._stand_ins.units()

    def groups_of(self, unit: Unit) -> tuple[PlannedGroup, ...]:
        """The groups ``unit`` opens: all of them on a stand-in or a CMG unit, else only the
        always-on group."""
        if unit.kind == "cmg" or unit.key in self._stand_ins:
            return self._plan.all_groups()
        return (self._plan.always,) if self._plan.always is not None else ()

    def opened_on(self, unit: Unit, group: PlannedGroup) -> Unit:
        """The unit to open ``group`` on: the rotating groups are never inherited (a stand-in's
        inherited groups would count the threads it started, which are units of their own)."""
        if unit.inherit and group is not self._plan.always:
            return replace(unit, inherit=False)
        return unit

    def follow(self, alive: tuple[Unit, ...]) -> list[UnitGroups]:
        """Choose the stand-ins among ``alive``; a unit already open that starts standing in (its
        CMG's stand-in ended) opens the rotating groups now. Its states are returned (the caller
        enables the group running now on them); a replacement is said in a warning."""
        stand_ins = self._stand_ins
        ran = self._cpu_seconds(alive) if stand_ins.short(alive) else None
        new, replaced = stand_ins.update(alive, ran=ran, now=self._source.now())
        for ended, successor in replaced:
            self._on_warning(_handed_over(ended, successor, "which ended"))
        promoted: list[UnitGroups] = []
        for unit in new:
            state = self._units.states.get(unit.key)
            if state is not None:  # else opened with every group by the caller
                self._promote(state)
                promoted.append(state)
        return promoted

    def start_review(self) -> None:
        """The start of the first window over which the stand-ins' run times are judged."""
        self._review_at = self._source.now()
        self._cpu_then = self._cpu_seconds(self._units.counted_units())

    def review(self, now: float, start: PlannedGroup | None, *, timeslice: float, tick: float) -> None:
        """Once per window, hand the role of a stand-in that ran nearly nothing to the unit of its
        CMG that ran most (``start``: the group running now, enabled on it), with a warning
        naming both units and why. ``timeslice``, ``tick``: the rotation's slice and the
        sampler's seconds between wake-ups."""
        window = now - self._review_at
        # Half a tick early is on time: slice ends fall a hair either side of a whole second.
        if window < max(STAND_IN_WINDOW, 2 * timeslice) - 0.5 * tick:
            return
        units = self._units.counted_units()
        cpu = self._cpu_seconds(units)
        ran = {key: seconds - self._cpu_then.get(key, 0.0) for key, seconds in cpu.items()}
        self._review_at, self._cpu_then = now, cpu
        if not ran:
            return
        for idle, successor in self._stand_ins.review(units, ran, window=window, now=now):
            why = (
                f"which ran {ran[idle.key]:.2f} s of the last {window:.1f} s "
                f"({successor.kind} {successor.ident}: {ran[successor.key]:.2f} s)"
            )
            self._on_warning(_handed_over(idle, successor, why))
            self._demote(self._units.states[idle.key])
            state = self._units.states[successor.key]
            self._promote(state)
            if start is not None:
                self._units.enable_in((state,), start)

    def _promote(self, state: UnitGroups) -> None:
        """A unit open with the always-on group only starts standing in: open the rotating ones."""
        for group in self._plan.groups:
            if group.name in state.groups or not group.pe_events:
                continue
            try:
                handle = self._source.open_group(replace(state.unit, inherit=False), group.pe_events)
            except SectormonError as exc:
                if is_gone(exc):
                    break
                raise
            state.groups[group.name] = self._units.open_group(handle, group.name, cmg=False)
        self._units.changed()

    def _demote(self, state: UnitGroups) -> None:
        """A stand-in gives its role up: close its rotating groups (read at this slice's end;
        the group enabled since has counted for no more than the reads took)."""
        always = self._plan.always.name if self._plan.always is not None else None
        for name in [name for name in state.groups if name != always]:
            state.groups.pop(name).group.close()
        self._units.changed()

    def _cpu_seconds(self, units: tuple[Unit, ...]) -> dict[str, float]:
        """The per-PE threads' CPU seconds so far (empty for CPUs and simulated cores: always there)."""
        if not any(u.kind == "thread" for u in units):
            return {}
        return dict(self._source.units_cpu_seconds(units))


def _handed_over(previous: Unit, successor: Unit, why: str) -> str:
    """The warning (kept in the recording) that a proxy stand-in's role moved, and why."""
    where = f" for CMG {successor.cmg}" if successor.cmg is not None else ""
    return (
        f"proxy: {successor.kind} {successor.ident} stands in{where} from now on, in place of "
        f"{previous.kind} {previous.ident}, {why}"
    )
