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
