"""Text bars for fractions: drawing only (segment widths from values the engine produced).

Every segment kind has its own glyph as well as its own theme colour, so a bar reads the same on
a monochrome terminal and for colour-blind users.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.text import Text

EMPTY_GLYPH = "·"


def segment_widths(fractions: Sequence[float | None], width: int) -> list[int]:
    """Cell widths of stacked segments (each fraction of the whole bar), clamped to the bar.

    Cumulative rounding keeps the total exact: three 1/3 segments fill the bar, not 3 x 33%.
    ``None`` (n/a) draws nothing; values are clamped to [0, 1] for drawing only.
    """
    widths: list[int] = []
    cumulative = 0.0
    drawn = 0
    for fraction in fractions:
        if fraction is None or not math.isfinite(fraction) or fraction <= 0:
            widths.append(0)
            continue
        cumulative = min(1.0, cumulative + fraction)
        end = min(width, round(cumulative * width))
        widths.append(max(0, end - drawn))
        drawn = max(drawn, end)
    return widths


def bar_segments(
    fractions: Sequence[float | None], glyphs: Sequence[str], width: int
) -> list[tuple[str, int]]:
    """(glyph-run, segment index) pairs; index ``len(fractions)`` is the empty remainder."""
    widths = segment_widths(fractions, width)
    runs = [(glyphs[i] * w, i) for i, w in enumerate(widths) if w > 0]
    rest = width - sum(widths)
    if rest > 0:
        runs.append((EMPTY_GLYPH * rest, len(fractions)))
    return runs


def grid_columns(total_width: int, cell_width: int, items: int) -> int:
    """How many columns of ``cell_width`` fit (at least one, at most one per item)."""
    if items <= 0:
        return 1
    return max(1, min(items, total_width // max(1, cell_width)))


GAP = 2


def grid_text(entries: Sequence[Text], total_width: int, entry_width: int) -> Text:
    """Entries column-major (down, then across), each padded to ``entry_width``."""
    out = Text(no_wrap=True, overflow="crop")
    if not entries:
        return out
    columns = grid_columns(total_width + GAP, entry_width + GAP, len(entries))
    rows = math.ceil(len(entries) / columns)
    for row in range(rows):
        if row:
            out.append("\n")
        for column in range(columns):
            index = column * rows + row
            if index >= len(entries):
                break
            entry = entries[index].copy()
            entry.truncate(entry_width, pad=True)
            if column:
                out.append(" " * GAP)
            out.append_text(entry)
    return out


SPARK_GLYPHS = " ▁▂▃▄▅▆▇█"
"""Eighths of a cell, from empty to full."""


HUGE = 1e300
MIN_RELATIVE_SPAN = 0.05
"""A sparkline's scale spans at least 5 % of its largest magnitude: a smaller range is drawn
small, not magnified to the full height (its label says the range in figures)."""


def spark_rows(values: Sequence[float], width: int, height: int) -> list[tuple[str, list[bool]]]:
    """A sparkline ``height`` lines tall, top line first: each line's text and, per column, whether
    that column's value is in the upper half of the range (drawn in the "high" colour).

    The values are stretched or bucketed (largest of a bucket) to ``width`` columns and scaled
    from their own lowest to their highest point, unless that range is under
    :data:`MIN_RELATIVE_SPAN` of the values (then it is drawn that small, mid-height); a constant
    series of zeros is one flat line at the bottom. Text, not one renderable per bar: a frame
    redraws every line of the panel below the tables.
    """
    if not values or width <= 0 or height <= 0:
        return [(" " * max(0, width), [False] * max(0, width)) for _ in range(max(0, height))]
    count = len(values)
    if count >= width:
        bounds = [c * count // width for c in range(width + 1)]
        columns = [max(values[bounds[c] : max(bounds[c + 1], bounds[c] + 1)]) for c in range(width)]
    else:
        columns = [values[c * count // width] for c in range(width)]
    low, high = min(columns), max(columns)
    if max(abs(low), abs(high)) > HUGE:  # scaled down, the drawing is the same; a difference of
        columns = [v / HUGE for v in columns]  # such values (-1e308..1e308) overflows
        low, high = low / HUGE, high / HUGE
    constant = high == low
    span = high - low
    floor = MIN_RELATIVE_SPAN * max(abs(low), abs(high))
    magnified = span >= floor
    if not magnified:
        # A range tiny next to its values (IPC 1.98-1.99) is not stretched to the full height,
        # where a 0.5 % wobble read as big swings: the scale spans MIN_RELATIVE_SPAN of the value,
        # centred on the range, so the line lies mid-height and moves as little as it changed.
        low, span = low / 2 + high / 2 - floor / 2, floor
    levels = height * 8
    if span <= 0:
        heights = [1] * len(columns)  # all zeros
    elif constant:
        heights = [levels // 2] * len(columns)  # a constant: exactly mid-height, not ▄ and ▅
    else:
        heights = [1 + round((v - low) / span * (levels - 1)) for v in columns]
    # The "high" colour marks the upper half of a range that is drawn magnified, not noise.
    upper = [magnified and span > 0 and v - low >= span / 2 for v in columns]
    rows: list[tuple[str, list[bool]]] = []
    for row in range(height - 1, -1, -1):
        base = row * 8
        text = "".join(SPARK_GLYPHS[min(8, max(0, h - base))] for h in heights)
        rows.append((text, upper))
    return rows
