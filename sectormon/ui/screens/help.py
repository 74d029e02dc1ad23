"""The ``?`` screen: the keys that work here, and how to read the dashboard (columns, dimming,
signs, glyphs, the simulator's sector tags).

What it lists follows the session: the views of this profile at this width, ``r`` only live,
``c`` only with presets, where recordings and bookmarks go.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from sectormon.files.text import printable


@dataclass(frozen=True, slots=True)
class View:
    """A dashboard view and its key; ``elsewhere`` says where its figures are when it has no tab."""

    key: str
    name: str
    elsewhere: str = ""


@dataclass(frozen=True, slots=True)
class HelpContent:
    """What the help says about this session (the app fills it in when ``?`` is pressed)."""

    replay: bool
    presets: bool
    views: Sequence[View]
    columns: Sequence[str] = ()
    simulator: Sequence[str] = ()
    record_folder: str = ""
    bookmarks_file: str = ""
    hotspots: bool = False
    proxy: str = ""  # the stand-ins of a --proxy session (the header's words), else empty
    warnings: Sequence[str] = field(default_factory=tuple)
    attach: bool = False  # p can attach the monitor to another process
    threads: bool = False  # T lists the counted processes' threads (a live session on this host)


LEGEND = (
    "Reading the dashboard",
    "  n/a      inputs missing or unsupported, or a zero denominator",
    "           (never shown as 0)",
    "  ~value   low confidence, dimmed: counted under half of what the",
    "           rotation allows (half of one group's share of the window:",
    "           8% with 6 groups; 50% without rotation), or inputs from",
    "           different event groups (split);",
    "           Enter shows each metric's coverage",
    "           (Regions, view 7: any value scaled from part of the region,",
    "           a region's count is exact only when its group counted throughout)",
    "  +value   vs baseline: + is better whatever the metric's direction;",
    "           ratios in percentage points, IPC as a relative change in %",
    "  Δlabel   vs baseline, a column whose metric has no better direction:",
    "           its plain change (Δvalue in a detail screen)",
    "  CMG-wide L2 and memory events count the whole CMG, whoever runs there",
    "  bars     █ mem (L2 miss)  ▓ L2 (L1 miss)  ▒ other load/store wait",
    "           █ SCE usage  ▓ non-sector-0 share",
)


def _views_key(views: Sequence[View]) -> tuple[str, str]:
    shown = [v for v in views if not v.elsewhere]
    keys = " ".join(v.key for v in shown)
    text = "views: " + ", ".join(v.name for v in shown)
    notes = [f"{v.name} {v.elsewhere}" for v in views if v.elsewhere]
    if notes:
        text += " (" + "; ".join(notes) + ")"
    return keys, text


def keys(content: HelpContent) -> list[tuple[str, str]]:
    """The keys that do something in this session, with what they do."""
    if content.replay:
        out = [
            ("q", "quit"),
            ("z", "pause the display (the replay goes on)"),
            ("b", "baseline: mark the rolling window / clear it"),
            ("d", "with a baseline: tables show improvements or values"),
            ("m", f"bookmark: a numbered mark on the timeline, kept in {content.bookmarks_file}"),
        ]
    else:
        folder = f" in {content.record_folder}" if content.record_folder else ""
        out = [
            ("q", "quit (stops the session, closes the recording)"),
            ("space / z", "pause the display (sampling and recording go on)"),
            ("b", "baseline: mark the rolling window / clear it"),
            ("d", "with a baseline: tables show improvements or values"),
            ("r", f"start / stop recording (sectormon-DATE-TIME.jsonl.gz{folder})"),
            ("m", "bookmark: a numbered mark in the recording (r starts one)"),
        ]
    out += [
        ("s", "sort cores by the next column (or click a header)"),
        ("g", "group the cores view by process (MPI ranks first) / by core"),
        *([("T", "threads: CPU %, state, last CPU, affinity, bound")] if content.threads else []),
        ("w", "window: last interval / rolling window / whole run"),
        ("/", "filter cores: 12-23,40  cmg1  unbound  (empty = all)"),
        ("t", "next theme"),
        _views_key(content.views),
        ("Enter", "detail of the core, CMG or region row (Esc goes back)"),
        ("l", "the warnings log: every warning, when it came, how often"),
        ("?", "this help"),
    ]
    if content.attach:
        out.append(("p", "process list: Enter ends this session, counts the chosen one"))
    if content.presets:
        out.append(("c", "next sector-cache preset of the simulator (live)"))
    if content.hotspots:
        out.append(("o", "hot spots: functions / data objects"))
    return out


REPLAY_KEYS: tuple[tuple[str, str], ...] = (
    ("space", "pause / resume the replay (z: pause the display)"),
    ("← / →", "seek 1 s (shift: 10 s); a simulated recording: 1 frame (10)"),
    ("[ / ]", "slower / faster"),
    ("Home / End", "start / end of the recording"),
)


def help_text(content: HelpContent) -> str:
    lines = ["Keys", *(f"  {k:<12} {v}" for k, v in keys(content))]
    if content.replay:
        lines += ["", "Replay", *(f"  {k:<12} {v}" for k, v in REPLAY_KEYS)]
    if content.columns:
        lines += ["", *content.columns]
    lines += ["", *LEGEND]
    if content.proxy:
        lines += [
            "  ≈value   estimated under --proxy: the stand-ins' counts scaled to",
            "           their CMG (other units show n/a); " + content.proxy,
        ]
    if content.simulator:
        lines += ["", *content.simulator]
    if content.warnings:  # l lists them with their times
        lines += [
            "",
            f"Warnings ({len(content.warnings)}; l lists them with their times)",
            *(f"  ⚠ {w}" for w in content.warnings),
        ]
    lines += ["", "Esc, ? or q closes this help."]
    # Lines quote the profile (names, units, descriptions), warnings and paths: no control
    # character reaches the terminal, and a newline in a name stays in its line.
    return "\n".join(printable(line) for line in lines)


class HelpScreen(ModalScreen[None]):
    """Modal help; closes on Escape, ``?`` or ``q``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "close"),
        Binding("question_mark", "dismiss", "close", show=False),
        Binding("q", "dismiss", "close", show=False),
    ]

    def __init__(self, content: HelpContent) -> None:
        super().__init__()
        self.text = help_text(content)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(self.text, id="help-text", markup=False)
