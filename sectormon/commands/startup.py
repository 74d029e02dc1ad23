"""Cyclic garbage collection paused while sectormon starts, and the start's objects frozen.

A start allocates tens of thousands of objects that live as long as the process: modules, classes,
functions, the methods the dataclasses generate, the profile. The collector would scan them again
and again before the first count (what that costs ``sectormon stat``: docs/perf-tuning.md, under
benchmarks/bench_start.py). So :func:`sectormon.cli.main` pauses collection on its first line when
it runs as the process's own command (``argv`` not given: a caller that hands argv in, such as a
test, keeps its collector), and :func:`done` ends the pause once the start is over: what the start
made is frozen (``gc.freeze``: moved where the collector never looks again) and collection goes on
as usual for everything made later. The counting commands (the monitor, ``stat``) end it just
before they build their session, so the session, which a TUI's ``p`` may replace, is not frozen
(the monitor's process list, ``--pid`` alone, ends it before it opens); every other command ends
it before it runs. The price: start-up garbage caught in reference cycles (the argument parser,
the YAML loader of the profile) stays for the run.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Pause collection for the start (only if it runs: a caller that turned it off keeps that)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def done() -> None:
    """The start is over: freeze its objects and collect again (once; nothing if not paused)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
