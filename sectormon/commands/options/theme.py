"""``--theme``: the option of the commands that can show the TUI, and its check with ``--json``
(checked although no TUI will use it, so a misspelt name or a broken theme file is said at once,
exit 2, instead of being ignored).

The check is the TUI's own loader (Textual's colour parser): the JSON stream imports Textual only
in this case, when a TUI option was given.
"""

from __future__ import annotations

import argparse


def add_theme_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--theme NAME|PATH`` on ``parser`` (the live monitor, ``sim``, ``replay``)."""
    parser.add_argument("--theme", help="TUI theme name or path (dark, light, high-contrast, or a file)")


def check_theme(theme: str | None) -> None:
    """Raise the TUI's one-line error for ``--theme`` when it names no usable theme."""
    if theme is None:
        return
    from sectormon.ui.themes import load_theme

    load_theme(theme)
