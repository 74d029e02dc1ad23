"""The ``?`` screen: every key, and how to read the dashboard (dimming, signs, glyphs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

LIVE_KEYS: tuple[tuple[str, str], ...] = (
    ("q", "quit (stops the session, closes the recording)"),
    ("space / p", "pause the display (sampling and recording go on)"),
    ("b", "baseline: mark the rolling window / clear it"),
    ("d", "with a baseline: tables show improvements or values"),
    ("r", "start / stop recording (automatic file name)"),
    ("m", "bookmark: a numbered mark in the recording and on a replay's timeline"),
    ("s", "sort cores by the next column (or click a header)"),
    ("g", "group the cores view by process (MPI ranks first) / by core"),
    ("w", "window: last interval / rolling window / whole run"),
    ("/", "filter cores: 12-23,40  cmg1  unbound  (empty = all)"),
    ("t", "next theme"),
    ("1-5", "views: cores, sectors, stalls, energy, history"),
    ("Enter", "detail of the core or CMG row (Esc goes back)"),
    ("?", "this help"),
)
PRESET_KEYS: tuple[tuple[str, str], ...] = (("c", "next sector-cache preset of the simulator (live)"),)
HOTSPOT_KEYS: tuple[tuple[str, str], ...] = (
    ("6", "hot spots of the sampled event (--sample)"),
    ("o", "hot spots: functions / data objects"),
)
REPLAY_KEYS: tuple[tuple[str, str], ...] = (
    ("space", "pause / resume the replay (p: pause the display)"),
    ("← / →", "seek 1 s (shift: 10 s); a simulated recording: 1 frame (10)"),
    ("[ / ]", "slower / faster"),
    ("Home / End", "start / end of the recording"),
)
LEGEND = (
    "Reading the dashboard",
    "  n/a      inputs missing or unsupported, or a zero denominator",
    "           (never shown as 0)",
    "  ~value   low confidence, dimmed: counted under half of what the",
    "           rotation allows (half of one group's share of the window:",
    "           8% with 6 groups; 50% without rotation), or inputs from",
    "           different event groups (split);",
    "           Enter shows each metric's coverage",
    "  +value   vs baseline: + is better whatever the metric's direction;",
    "           ratios in percentage points, IPC as a relative change in %",
    "  Δvalue   vs baseline, a metric with no better direction: the change",
    "  CMG-wide L2 and memory events count the whole CMG, whoever runs there",
    "  bars     █ mem (L2 miss)  ▓ L2 (L1 miss)  ▒ other load/store wait",
    "           █ SCE usage  ▓ non-sector-0 share",
)


def help_text(replay: bool, presets: bool, hotspots: bool = False) -> str:
    keys: list[tuple[str, str]] = list(LIVE_KEYS)
    if replay:
        keys[1] = ("p", "pause the display (the replay goes on)")
        keys = [k for k in keys if k[0] != "r"]  # a replay records nothing
    if presets:
        keys += PRESET_KEYS
    if hotspots:
        keys += HOTSPOT_KEYS
    lines = ["Keys", *(f"  {k:<12} {v}" for k, v in keys)]
    if replay:
        lines += ["", "Replay", *(f"  {k:<12} {v}" for k, v in REPLAY_KEYS)]
    lines += ["", *LEGEND, "", "Esc, ? or q closes this help."]
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    """Modal help; closes on Escape, ``?`` or ``q``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "close"),
        Binding("question_mark", "dismiss", "close", show=False),
        Binding("q", "dismiss", "close", show=False),
    ]

    def __init__(
        self,
        *,
        replay: bool,
        presets: bool,
        hotspots: bool = False,
        extra: Sequence[str] = (),
        warnings: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self._text = help_text(replay, presets, hotspots)
        if extra:
            self._text += "\n\n" + "\n".join(extra)
        if warnings:  # a notification is gone after a few seconds; here they stay
            self._text += "\n\n" + "\n".join([f"Warnings ({len(warnings)})", *(f"  ⚠ {w}" for w in warnings)])

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(self._text, id="help-text", markup=False)
