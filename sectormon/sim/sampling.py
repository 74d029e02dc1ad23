"""Sampling the simulated A64FX's L1D refills, as a PMU's overflow interrupt samples a real event.

The model calls ``RefillSampler.refill`` at every L1D refill (demand misses and prefetcher refills,
slow paths both) and the sampler keeps one in ``period`` on average, with the thread, line, data
object, issue time and latency. The gap between samples is drawn at random (geometric, seeded)
because a kernel's accesses are periodic and a fixed period would sample in step with them; Arm's
SPE randomises its interval for the same reason.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import NamedTuple


class Refill(NamedTuple):
    """One sampled refill: ``issued`` and ``latency`` in engine ticks (the engine's cycle unit
    times its ``TICKS``), ``line`` the 256-byte line number, ``flags`` the flags of the access
    that asked for it (they carry its data object)."""

    issued: int
    tid: int
    cpu: int
    line: int
    flags: int
    latency: int


class RefillSampler:
    """Keeps one refill in ``period`` (on average) of the kinds asked for: ``demand`` (L1D demand
    misses), ``prefetch`` (the hardware prefetcher's L1D refills), or both."""

    __slots__ = ("_gap", "_left", "demand", "period", "prefetch", "taken")

    def __init__(self, period: int, *, demand: bool, prefetch: bool, seed: int = 1) -> None:
        if period < 1:
            raise ValueError(f"the sampling period must be >= 1, not {period}")
        self.period = period
        self.demand = demand
        self.prefetch = prefetch
        self.taken: list[Refill] = []
        self._gap = _gaps(period, random.Random(seed))
        self._left = self._gap()

    def refill(self, tid: int, cpu: int, line: int, flags: int, issued: int, ready: int) -> None:
        """A refill of ``line`` for an access with ``flags``, issued at tick ``issued``, whose data
        arrive at tick ``ready``."""
        self._left -= 1
        if self._left:
            return
        self._left = self._gap()
        self.taken.append(Refill(issued, tid, cpu, line, flags, ready - issued))

    def drain(self) -> list[Refill]:
        """The refills sampled since the last drain, oldest first per thread."""
        taken, self.taken = self.taken, []
        return taken


def _gaps(period: int, rng: random.Random) -> Callable[[], int]:
    """Events from one sample to the next: geometric with mean ``period`` (1: every event)."""
    if period == 1:
        return lambda: 1
    log_keep = math.log1p(-1.0 / period)
    draw = rng.random

    def gap() -> int:
        # 1 - random() is in (0, 1]: its log is finite.
        return 1 + int(math.log(1.0 - draw()) / log_keep)

    return gap
