"""Rows written out by hand: a reading as the sampler and the reader make it.

See sectormon.data.readings.Row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import NamedTuple

from sectormon.data.readings import Row, Slice


def row(
    unit: str,
    core: int | None,
    cmg: int | None,
    group: str,
    time_enabled: int,
    time_running: int,
    counts: Mapping[str, int],
) -> Row:
    """The row of one reading with the given counts (their names in ``counts`` order)."""
    return Row(unit, core, cmg, group, time_enabled, time_running, tuple(counts), tuple(counts.values()))


def counts_of(r: Row) -> dict[str, int]:
    """A row's counts by event name."""
    return dict(zip(r.names, r.values, strict=True))


def share_layouts(s: Slice, layouts: dict[tuple[str, ...], tuple[str, ...]]) -> Slice:
    """``s`` with one names tuple per layout across every slice given the same ``layouts``, as the
    sampler and the recording reader share them (the engine takes those by identity)."""
    rows = tuple(r._replace(names=layouts.setdefault(r.names, r.names)) for r in s.rows)
    return dataclasses.replace(s, rows=rows)


class Reading(NamedTuple):
    """A row with named fields and its counts as a dict, for tests that inspect readings."""

    unit: str
    core: int | None
    cmg: int | None
    group: str
    time_enabled: int
    time_running: int
    counts: dict[str, int]


def readings_of(s: Slice) -> list[Reading]:
    """The rows of ``s`` as :class:`Reading` tuples."""
    return [Reading(*r[:6], counts_of(r)) for r in s.rows]
