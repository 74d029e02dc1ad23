"""``--bind LIST``: pin a launched command's threads round robin to CPUs, as ``likwid-pin -c`` does.

Shared by the commands that launch a program (the monitor; ``stat`` may add it the same way). The
CPU list has ``--cpus``'s syntax; every CPU must be an online compute CPU of this host and one
sectormon itself may run on (a cpuset or ``taskset`` can forbid the others, and the kernel would
refuse to pin there), checked before anything starts.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from sectormon.errors import UsageError
from sectormon.host.topology import Topology, format_cpu_list, parse_cpu_list

HELP = (
    "pin the launched command's threads to these CPUs round robin (like likwid-pin -c): the main "
    "thread to the first before its exec, each further thread to the next as sectormon finds it; "
    "e.g. 0-11 or 0,2,4"
)


def add_bind_option(group: argparse._ArgumentGroup) -> None:
    """Add ``--bind LIST`` to ``group`` (``args.bind``: the text, ``None`` when not given)."""
    group.add_argument("--bind", metavar="LIST", help=HELP)


def bind_cpus(text: str | None, command: Sequence[str], topology: Topology) -> tuple[int, ...]:
    """The CPUs of ``--bind`` (empty when not given), checked against this host; a
    :class:`UsageError` naming the option and the fix otherwise."""
    if text is None:
        return ()
    if not command:
        raise UsageError(
            "--bind pins the threads of a command sectormon launches: give one after --, e.g. "
            "sectormon --bind 0-3 -- ./app (a running process is bound with taskset -p)"
        )
    cpus = topology.require_cpus(parse_cpu_list(text, what="--bind"), option="--bind")
    allowed = os.sched_getaffinity(0)
    outside = [cpu for cpu in cpus if cpu not in allowed]
    if outside:
        raise UsageError(
            f"--bind: CPU {format_cpu_list(outside)} is outside the CPUs sectormon may run on "
            f"({format_cpu_list(allowed)}: a cpuset or taskset limits it); choose among those"
        )
    return cpus
