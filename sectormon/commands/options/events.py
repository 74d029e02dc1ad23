"""``-e EVENTS``: the option of the commands that count (the monitor, ``stat``) and the profile it
makes.

The list's syntax is :mod:`sectormon.profiles.event_list`'s, the profile it makes
:mod:`sectormon.profiles.adhoc`'s; here the option meets the run: its modifiers against
``--include-kernel``, and the name :func:`sectormon.session.setup.open_session` gives to an event
the host cannot count (``required``). :func:`perf_profile` is a run's profile on this host, the
monitor's and ``stat``'s alike (here, not in the monitor's module: ``stat`` would import the
monitor's simulator options with it).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sectormon.errors import UsageError
from sectormon.profiles.model import Profile

if TYPE_CHECKING:
    from sectormon.host.topology import Topology

OPTION = "-e"


def add_events_option(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "-e",
        "--events",
        metavar="EVENTS",
        help="count these events instead of the profile's groups, in perf's syntax: the profile's "
        "names, perf's generic names (cycles, page-faults, task-clock, ...), raw codes (r0250), "
        "{a,b} for a group, :u, :k or :uk modifiers; e.g. -e r0004,r0003 or -e '{cycles,instructions}'",
    )


@dataclass(frozen=True, slots=True)
class RunEvents:
    """The profile a run counts, what each event is shown as, whether kernel mode counts too and
    whether user mode is left out (``:k``). ``required``: the option whose events must all be
    countable (``None``: the profile's own groups, whose events the host lacks are dropped with a
    warning)."""

    profile: Profile
    include_kernel: bool
    labels: dict[str, str] = field(default_factory=dict)
    required: str | None = None
    exclude_user: bool = False


def run_events(args: argparse.Namespace, base: Profile) -> RunEvents:
    """``base`` as it is, or the ad-hoc profile ``-e`` asks for on it."""
    if args.events is None:
        return RunEvents(base, args.include_kernel)
    # Imported when -e is given: the profile builder is not part of a plain run's start-up.
    from sectormon.profiles.adhoc import adhoc_profile
    from sectormon.profiles.event_list import parse_event_list

    if args.groups is not None:
        raise UsageError(f"--groups picks the profile's groups and {OPTION} names the events; give one")
    adhoc = adhoc_profile(base, parse_event_list(args.events, OPTION), OPTION)
    if adhoc.levels == "u" and args.include_kernel:
        raise UsageError(
            f"--include-kernel counts kernel mode and {OPTION} {args.events!r} asks for user mode only "
            "(':u'); drop one"
        )
    return RunEvents(
        adhoc.profile,
        include_kernel=args.include_kernel or "k" in adhoc.levels,
        labels=adhoc.labels,
        required=OPTION,
        exclude_user=adhoc.levels == "k",
    )


def perf_profile(args: argparse.Namespace, topology: Topology) -> RunEvents:
    """The profile of a run on this host (``--profile``, and ``-e`` on it)."""
    from sectormon.profiles.resolve import resolve_profile

    profile, _ = resolve_profile(args.profile, topology)
    if profile.name == "a64fx" and not topology.is_a64fx:
        raise UsageError(
            f"--profile a64fx needs an A64FX, and this CPU is {topology.model or 'not one'}; "
            "use --profile generic here, or --source sim to run the a64fx profile on the simulated A64FX"
        )
    return run_events(args, profile)
