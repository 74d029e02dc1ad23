"""Laying out equal-width text entries (one bar each) in as many columns as the width allows."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.text import Text

from sectormon.ui.bars import grid_columns

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
