"""Slices missing from a recording, as a fact the reader hands to the engine.

A slice's ``index`` counts the slices of its session, so a jump says how many are missing
(deleted lines, a file put together from pieces). The reader says so in a warning and yields a
synthetic mark of kind :data:`GAP` before the slice after the gap; the engine counts the lost
seconds as time the units were present but nothing was counted, so the coverage of every window
over the gap shows it instead of reading 1.0. The kind is never read from a file: a ``gap`` mark
written in a recording is an unknown kind, ignored with a warning like any other.
"""

from __future__ import annotations

from sectormon.readings import Mark

GAP = "gap"


def gap_mark(t: float, seconds: float, first_index: int, last_index: int) -> Mark:
    """The mark for slices ``first_index..last_index`` missing after the slice that ended at ``t``,
    ``seconds`` of stream time with no slice."""
    return Mark(
        t=t,
        kind=GAP,
        label=f"slices {first_index}..{last_index} missing",
        data={"seconds": seconds, "first_index": first_index, "last_index": last_index},
    )


def lost_seconds(mark: Mark) -> float:
    """The stream seconds a :data:`GAP` mark says no slice covers (0.0 for any other mark)."""
    if mark.kind != GAP:
        return 0.0
    seconds = mark.data.get("seconds")
    return float(seconds) if isinstance(seconds, (int, float)) and seconds > 0 else 0.0
