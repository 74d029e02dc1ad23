"""How the hot spots moved between the baseline and the sector run (recordings made with ``--sample``).

Each side's whole-run table gives every function's and data object's share of the sampled events;
the comparison lists, hottest first, both shares and the percentage points between them. A location
one side never sampled has share 0 there; a side that did not sample has no table, so no comparison
is made and a warning says which side sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sectormon.data.hotspot_table import HotspotRow
from sectormon.data.hotspots import FrameHotspots

VIEWS = ("objects", "functions")


@dataclass(frozen=True, slots=True)
class ShareMove:
    """One location on both sides: its share of each side's sampled events (0..1) and estimate."""

    name: str
    module: str
    detail: str | None
    base: float
    other: float
    base_estimate: float | None
    other_estimate: float | None

    @property
    def delta(self) -> float:
        """Percentage points / 100 the share moved (other - base)."""
        return self.other - self.base

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "module": self.module,
            "detail": self.detail,
            "share_base": self.base,
            "share_other": self.other,
            "share_delta": self.delta,
            "estimate_base": self.base_estimate,
            "estimate_other": self.other_estimate,
        }


@dataclass(frozen=True, slots=True)
class HotspotShift:
    """The hot spots of both sides: the sampled event each used and the share moves per view."""

    base_event: str
    other_event: str
    base_samples: int
    other_samples: int
    objects: tuple[ShareMove, ...]
    functions: tuple[ShareMove, ...]
    warnings: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "event_base": self.base_event,
            "event_other": self.other_event,
            "samples_base": self.base_samples,
            "samples_other": self.other_samples,
            "objects": [m.to_json() for m in self.objects],
            "functions": [m.to_json() for m in self.functions],
            "warnings": list(self.warnings),
        }


def _moves(base: Sequence[HotspotRow], other: Sequence[HotspotRow]) -> tuple[ShareMove, ...]:
    rows: dict[tuple[str, str], tuple[HotspotRow | None, HotspotRow | None]] = {}
    for row in base:
        rows[row.name, row.module] = (row, None)
    for row in other:
        rows[row.name, row.module] = (rows.get((row.name, row.module), (None, None))[0], row)
    moves = [
        ShareMove(
            name=name,
            module=module,
            detail=b.detail if b is not None else o.detail if o is not None else None,
            base=b.share if b is not None else 0.0,
            other=o.share if o is not None else 0.0,
            base_estimate=b.estimate if b is not None else None,
            other_estimate=o.estimate if o is not None else None,
        )
        for (name, module), (b, o) in rows.items()
    ]
    moves.sort(key=lambda m: (-max(m.base, m.other), m.name, m.module))
    return tuple(moves)


def hotspot_shift(base: FrameHotspots, other: FrameHotspots) -> HotspotShift:
    """Compare two whole-run hot-spot tables (the sides' final frames)."""
    b, o = base.run, other.run
    warnings = []
    if base.settings.event != other.settings.event:
        warnings.append(
            f"the sides sampled different events ({base.settings.event} and {other.settings.event}): "
            "their shares are of different events"
        )
    for label, table in (("baseline", b), ("sector run", o)):
        if not table.samples:
            warnings.append(f"the {label} has no samples: its shares are all 0")
    return HotspotShift(
        base_event=base.settings.event,
        other_event=other.settings.event,
        base_samples=b.samples,
        other_samples=o.samples,
        objects=_moves(b.objects, o.objects) if b.with_address or o.with_address else (),
        functions=_moves(b.functions, o.functions),
        warnings=tuple(warnings),
    )


def render_lines(shift: HotspotShift, *, top: int = 20) -> list[str]:
    """The comparison as aligned text lines: per view, the ``top`` hottest locations."""
    out = [
        f"Hot spots: share of the sampled events ({shift.base_event}: {shift.base_samples:,} samples in the "
        f"baseline, {shift.other_event}: {shift.other_samples:,} in the sector run); moved = sector - "
        "baseline, in percentage points"
    ]
    for view in VIEWS:
        moves = shift.objects if view == "objects" else shift.functions
        title = "data objects" if view == "objects" else "functions"
        if not moves:
            why = "no sample carried a data address" if view == "objects" else "no samples"
            out += ["", f"  {title}: none ({why})"]
            continue
        shown = moves[:top]
        width = max(len(title), *(len(m.name) for m in shown))
        out += ["", f"  {title:<{width}}  {'baseline':>9}  {'sector':>9}  {'moved':>8}  module"]
        for m in shown:
            out.append(
                f"  {m.name:<{width}}  {100 * m.base:8.2f}%  {100 * m.other:8.2f}%  "
                f"{100 * m.delta:+8.2f}  {m.module}"
            )
        if len(moves) > len(shown):
            out.append(f"  ({len(moves) - len(shown)} more in --json)")
    out += [f"warning: {w}" for w in shift.warnings]
    return out
