"""``p`` in the monitor's TUI: the next session, on the process picked there, with the same options.

The TUI only picks a pid (:mod:`sectormon.ui.attach`); the command line is read here, where the
session was made. A :class:`Reattach` keeps a copy of the options as given, before a run reads
them (the time options are turned into seconds in place), so the next session reads them as the
first one did: ``sectormon --pid PID`` with everything else (profile, rotation, interval, theme,
events...) unchanged. Only what named the old target goes: ``--cpus``, ``-- CMD`` and ``--bind``
(which pins a launched command). A ``--record FILE`` is not written over: the session that ends
closes FILE as at any end, and the next one records to ``FILE`` with ``-pidPID`` before its
extensions. The list says all this above the processes before anything is chosen.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from sectormon.errors import UsageError
from sectormon.host import roots

RECORDING_SUFFIXES = (".jsonl.gz", ".jsonl", ".gz")


def _stem_and_suffix(path: str) -> tuple[str, str]:
    """A recording's path and its extensions apart (a name that is all extension has none)."""
    name = os.path.basename(path)
    for known in RECORDING_SUFFIXES:
        if name.endswith(known) and len(name) > len(known):
            return path[: -len(known)], known
    return path, ""


def recording_for(path: str, pid: int) -> str:
    """Where the session on ``pid`` records when the one before recorded to ``path``: the same
    name with ``-pidPID`` before its extensions (``run.jsonl.gz`` -> ``run-pid42.jsonl.gz``),
    numbered on (``-2``, ``-3``...) past files that exist already."""
    stem, suffix = _stem_and_suffix(path)
    candidate = f"{stem}-pid{pid}{suffix}"
    number = 1
    while os.path.lexists(candidate):
        number += 1
        candidate = f"{stem}-pid{pid}-{number}{suffix}"
    return candidate


class Reattach:
    """The :class:`~sectormon.ui.attach.AttachOffer` of one monitor session: ``check`` raises a
    :class:`UsageError` when these options cannot count a ``--pid`` (the simulator's own options,
    ``--source sim``, a profile this host lacks)."""

    def __init__(self, args: argparse.Namespace, check: Callable[[argparse.Namespace], None]) -> None:
        self._given = argparse.Namespace(**vars(args))  # before the run reads (and changes) them
        self._check = check
        self.chosen: int | None = None

    def _options_for(self, pid: int) -> argparse.Namespace:
        options = argparse.Namespace(**vars(self._given))
        options.pid, options.cpus, options.command, options.bind = (pid,), None, [], None
        if self._given.record:
            options.record = recording_for(self._given.record, pid)
        return options

    def refusal(self) -> str | None:
        try:
            self._check(self._options_for(os.getpid()))
        except UsageError as exc:
            return f"cannot attach with these options: {exc}"
        return None

    def note(self) -> str:
        given = self._given
        ends = ["Enter ends this session (as q does) and counts the chosen process with the same options"]
        if given.record:
            stem, suffix = _stem_and_suffix(given.record)
            ends.append(f"{given.record} is closed; the next session records to {stem}-pidPID{suffix}")
        if given.command:
            ends.append("the command sectormon launched is stopped (SIGTERM)")
        if given.bind is not None:
            ends.append("--bind pinned that command and is dropped")
        return "; ".join(ends) + ". Escape returns to the monitor."

    def request(self, pid: int) -> str | None:
        if pid == os.getpid():
            return f"pid {pid} is this sectormon: pick the process to count"
        if not os.path.isdir(roots.procfs(pid)):
            return f"pid {pid} has ended: pick another process"
        self.chosen = pid
        return None

    def next_options(self) -> argparse.Namespace | None:
        """The options of the session on the chosen process (``None``: none was chosen)."""
        return None if self.chosen is None else self._options_for(self.chosen)
