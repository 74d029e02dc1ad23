"""When a frame is due: the one clock that live sessions, replays and a replay's reader processes share.

A frame closes at the first slice whose end time reaches the next multiple of the frame interval,
decided from the slices' own times (the source's clock: wall time for perf, simulated time for
sim), never from the time the slice arrived. So a live run, a replay of its recording at any
speed, and reader processes that each start somewhere inside the file all put frames at the same
slices, and the frames are the same. It lives with the session, which owns a stream's timeline;
the engine below it never asks what time it is.
"""

from __future__ import annotations

import math


class FrameClock:
    """When a frame is due, from slice end times alone (live, replay and a replay's reader process
    must agree to the slice, so this is the one place that decides).

    A frame is due at the first slice whose end time reaches the next multiple of ``interval``
    after ``start``; missed multiples are skipped (one frame covers the gap). The next multiple is
    computed from ``t`` alone, never by stepping through the gap: a gap costs the same as one
    interval whatever its length, and the clock after a slice at ``t`` is the same whatever came
    before it (a reader that starts mid-file finds the clock the whole-file reader has).
    """

    def __init__(self, interval: float, start: float = 0.0) -> None:
        if not (interval > 0 and math.isfinite(interval) and math.isfinite(start / interval)):
            raise ValueError(
                f"a frame clock needs a finite interval > 0 and start, not {interval!r}, {start!r}"
            )
        self.interval = interval
        self._slack = 1e-9 * interval
        self._next = (int(start / interval) + 1) * interval

    def due(self, t: float) -> bool:
        """Whether a slice ending at ``t`` closes a frame (and if so, move to the next one)."""
        if not self.reaches_next(t):
            return False
        self._next = self._multiple_after(t + self._slack)
        return True

    def reaches_next(self, t: float) -> bool:
        """Whether a slice ending at ``t`` would close the next frame (:meth:`due`'s test, without
        moving): when not, no slice up to ``t`` closes another frame."""
        return not t + self._slack < self._next

    def _multiple_after(self, reach: float) -> float:
        """The first multiple of the interval after ``reach``: ``k * interval`` with ``k`` from one
        division, corrected by one where the division rounded across a multiple."""
        interval = self.interval
        ratio = reach / interval
        if not math.isfinite(ratio):
            raise ValueError(f"a frame clock cannot count intervals of {interval!r} up to t={reach!r}")
        k = math.floor(ratio) + 1
        if (k - 1) * interval > reach:
            k -= 1
        elif k * interval <= reach:
            k += 1
        following = k * interval
        # An interval below the resolution of floats near ``reach`` cannot step past it.
        return following if following > reach else math.nextafter(reach, math.inf)
