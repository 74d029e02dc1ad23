"""Open a live session: probe the events, plan the rotation, say what cannot be counted, start.

Everything a front end would otherwise repeat (``sectormon``, ``sectormon sim``) happens here, in
the order that matters: the probe runs before the source starts (it is not timed), the source
starts before the header is built (the header names the launched command's pid), and sampling
(``--sample``) opens once the source has started, before its target runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import NoReturn

from sectormon.errors import UsageError
from sectormon.metrics.proxy import TASK_TIME_EVENT
from sectormon.perf.probe import ProbeResult
from sectormon.profiles.model import EventDef, Profile
from sectormon.regions.library import LIBRARY_FILE
from sectormon.rotation.markers import MarkerService
from sectormon.rotation.plan import (
    AUTO,
    SYNC,
    RotationPlan,
    choose_rotation,
    plan_rotation,
    select_groups,
    with_always_pe_event,
)
from sectormon.session.control import WarningCallback
from sectormon.session.header import build_header
from sectormon.session.live import LiveSession
from sectormon.session.options import SessionRequest
from sectormon.sources.base import Source


def open_session(
    source: Source,
    profile: Profile,
    request: SessionRequest,
    *,
    on_warning: WarningCallback | None = None,
    notes: Sequence[str] = (),
    required: str | None = None,
) -> LiveSession:
    """A started :class:`LiveSession` on ``source``; ``notes`` are shown in the TUI, not said again.
    ``required`` names the option that asked for the profile's events one by one (``-e``): an
    event this host cannot count is then a :class:`UsageError` naming it, not a dropped event."""
    options = request.resolve(source)
    group_names = select_groups(profile, request.groups)
    wanted = {e for g in group_names for e in profile.group(g).events}
    events = [profile.events[name] for name in profile.events if name in wanted]
    probe = source.probe(events)
    unavailable = {
        name: result.reason or result.state for name, result in probe.items() if result.state == "unsupported"
    }
    cmg_reason = source.cmg_unavailable_reason
    if cmg_reason:
        for event in events:
            if event.scope == "cmg":
                unavailable.setdefault(event.name, f"CMG-wide event needs per-CPU counting: {cmg_reason}")
    if required is not None and unavailable:
        raise_unavailable(required, {_shown(profile.events[n]): why for n, why in unavailable.items()})
    plan = plan_rotation(profile, group_names, unavailable, free=lambda e: not source.needs_counter(e))
    if (
        options.proxy is not None
        and source.capabilities.task_time
        and plan.groups
        and _opens(source, TASK_TIME_EVENT)
    ):
        # Task time, not presence, is what the stand-ins' counts are scaled by (see TASK_TIME_EVENT)
        plan = with_always_pe_event(plan, TASK_TIME_EVENT)
    can_multiplex = source.capabilities.multiplexes
    rotation = choose_rotation(
        request.rotation,
        plan,
        can_multiplex=can_multiplex,
        timeslice=options.timeslice,
        interval=options.interval,
        given=request.timeslice is not None,
    )
    options = dataclasses.replace(
        options, rotation=rotation, may_switch=can_multiplex and request.rotation == AUTO
    )
    warnings = startup_warnings(profile, plan, probe)
    markers = region_markers(source, request.region_level, rotated=rotation.mode == SYNC, warnings=warnings)
    try:
        source.start()
    except BaseException:
        if markers is not None:
            markers.close()
        raise
    # Sampling starts before the target runs (a launched command is still held before its exec).
    sampling = source.open_sampling(request.sample, profile) if request.sample is not None else None
    try:
        header = build_header(
            source=source,
            profile=profile,
            plan=plan,
            options=options,
            probe=probe,
            hotspots=sampling.settings if sampling is not None else None,
        )
        return LiveSession(
            source=source,
            profile=profile,
            plan=plan,
            options=options,
            header=header,
            on_warning=on_warning,
            notes=notes,
            warnings=warnings,
            sampling=sampling,
            markers=markers,
        )
    except BaseException:
        if sampling is not None:
            sampling.close()
        if markers is not None:
            markers.close()
        raise


def _shown(event: EventDef) -> str:
    """An event as a message names it: its name, and the spec it was asked for by when other."""
    return event.name if event.spec == event.name else f"{event.name} ({event.spec})"


def raise_unavailable(option: str, unavailable: Mapping[str, str]) -> NoReturn:
    """One line for the first event asked for by ``option`` that cannot be counted here."""
    name, reason = next(iter(unavailable.items()))
    reason = reason.split(" (fix: ")[0]  # the probe's fix is for a profile; this one is for the option
    more = f" (and {len(unavailable) - 1} more)" if len(unavailable) > 1 else ""
    fix = (
        "add --include-kernel or write it with ':uk'"
        if reason.startswith("user-only")
        else f"drop it from {option}; `sectormon check` and `sectormon events` list what this host counts"
    )
    raise UsageError(f"{option}: event {name} cannot be counted here{more}: {reason} ({fix})")


def region_markers(source: Source, level: int, *, rotated: bool, warnings: list[str]) -> MarkerService | None:
    """Region counting for a program the source launches: its environment names the marker
    endpoint (``None``: the source launches nothing, or the marker library was not built, so
    no program can have linked it from this install). Regions are an addition to the run: when
    the endpoint cannot be set up (no shared memory, a file-size or descriptor limit), a warning
    says so and the run goes on without them."""
    if not source.capabilities.launches or not LIBRARY_FILE.is_file():
        return None
    try:
        markers = MarkerService(level=level, rotated=rotated)
    except OSError as exc:
        warnings.append(f"marked regions are not counted in this run: {exc.strerror or exc}")
        return None
    source.add_environment(markers.environment())
    return markers


def _opens(source: Source, event: EventDef) -> bool:
    """Whether ``event`` opens here (a probe of its own: the session's probe lists profile events)."""
    return source.probe([event])[event.name].state != "unsupported"


def startup_warnings(profile: Profile, plan: RotationPlan, probe: Mapping[str, ProbeResult]) -> list[str]:
    """What a user must know before trusting the figures: events dropped, groups skipped, events
    that opened but never counted in the probe."""
    out: list[str] = []
    unavailable = plan.dropped
    if unavailable:
        kernel_only = sorted(n for n, why in unavailable.items() if why.startswith("user-only"))
        out.append(
            f"{len(unavailable)} event(s) cannot be counted here and are dropped; "
            "metrics that need them show n/a: "
            + ", ".join(sorted(unavailable))
            + (
                f" ({', '.join(kernel_only)}: kernel-mode events, add --include-kernel)"
                if kernel_only
                else ""
            )
            + "; `sectormon check` says why for each"
        )
    if plan.skipped_groups:
        out.append("groups left empty and skipped: " + ", ".join(plan.skipped_groups))
    suspicious = sorted(
        n for n, r in probe.items() if r.state == "zero" and profile.events[n].code is not None
    )
    if suspicious:
        out.append("opened but counted nothing in the probe (suspicious, not zero): " + ", ".join(suspicious))
    return out
