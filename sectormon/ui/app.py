"""The Textual app: wires a session controller to the screens, keys and themes.

``make_app`` is shared by the CLI (``run_tui``) and the tests, which drive it with a deterministic
fake controller. The app owns the session's lifecycle: on mount it subscribes to frames and then
starts the controller; on quit it stops it. Frames arrive on the pipeline thread and are posted as
replaceable messages, so the sampler never waits for the screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import itertools
import os
import signal
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any, ClassVar

from textual.app import App, ScreenStackError
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Input

from sectormon.data.frames import Frame
from sectormon.data.header import Header
from sectormon.errors import SectormonError
from sectormon.files.text import print_message, printable
from sectormon.session.control import ReplayControl, SessionControl
from sectormon.ui.attach import AttachOffer, attach_refusal, open_process_list
from sectormon.ui.context import WINDOW_NAMES, RenderContext
from sectormon.ui.header_info import parse_core_filter, proxy_words
from sectormon.ui.history import History
from sectormon.ui.legend import column_legend, legend_lines, simulator_note
from sectormon.ui.messages import FrameArrived, OpenDetail, OpenRegion, RedrawWanted, SessionWarning
from sectormon.ui.region_baseline import RegionBaselines
from sectormon.ui.screens.dashboard import TABS, DashboardScreen
from sectormon.ui.screens.detail import DetailScreen
from sectormon.ui.screens.help import HelpContent, HelpScreen
from sectormon.ui.screens.region_detail import RegionScreen
from sectormon.ui.screens.threads import open_thread_list, thread_list_refusal
from sectormon.ui.screens.warnings import WarningEntry, WarningsScreen
from sectormon.ui.themes import DEFAULT_THEME, discover_themes, fallback_variables, load_theme
from sectormon.ui.widgets.filter_bar import FilterBar
from sectormon.ui.widgets.header_bar import Status
from sectormon.ui.widgets.timeline_bar import Timeline

STYLES = Path(__file__).resolve().parent / "styles"
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
TIMELINE_PERIOD = 0.25
IDLE_COLLECT_FRAMES = 8
IDLE_COLLECT_MIN_S = 0.5
"""Run the cyclic garbage collector right after every 8th frame (at most every 0.5 s), in the idle
time before the next one, so its full passes (bench_ui in docs/perf-tuning.md) rarely land inside a
frame."""
SIGNALS_THAT_QUIT = (signal.SIGTERM, signal.SIGHUP)
REPLAY_ACTIONS = frozenset({"seek", "seek_start", "seek_end", "speed"})
DASHBOARD_ACTIONS = frozenset({"sort", "filter", "tab", "hotspot_mode"})


def _group_names(header: Header) -> list[str]:
    if "groups" in header.keys:
        return list(header.group_names)
    pgroups = header.profile.get("groups")
    if isinstance(pgroups, Mapping):
        return [str(g) for g in pgroups]
    if isinstance(pgroups, (list, tuple)):
        return [str(g.get("name")) for g in pgroups if isinstance(g, Mapping) and g.get("name")]
    return []


class SectormonApp(App[int]):
    """The sectormon TUI."""

    TITLE = "sectormon"
    CSS_PATH: ClassVar[list[str | PurePath]] = [
        STYLES / "app.tcss",
        STYLES / "dashboard.tcss",
        STYLES / "detail.tcss",
    ]
    ENABLE_COMMAND_PALETTE = False

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "quit"),
        Binding("question_mark", "help", "help"),  # second: the footer is cut at 80 columns
        Binding("ctrl+c", "quit", "quit", show=False, priority=True),  # as in htop, not Textual's hint
        Binding("space", "space", "pause", priority=True),
        Binding("z", "pause_display", "pause display", show=False),  # htop's Z; p opens the processes
        Binding("p", "processes", "processes", show=False),
        Binding("T", "threads", "threads", show=False),
        Binding("b", "baseline", "baseline"),
        Binding("d", "deltas", "Δ/values", show=False),
        Binding("r", "record", "record"),
        Binding("m", "bookmark", "bookmark", show=False),  # in the help: the footer is full at 80 columns
        Binding("s", "sort", "sort"),
        Binding("g", "group", "group by core/process", show=False),
        Binding("w", "window", "window", show=False),
        # Priority: taken when the app reads the key, so the filter has the focus before the
        # keys queued behind it are routed (they would go to the table a binding later).
        Binding("slash", "filter", "filter", priority=True),
        Binding("t", "next_theme", "theme", show=False),  # in the help: the footer fills 80 columns
        Binding("c", "sector_preset", "preset"),  # one word: the footer's keys fit 80 columns
        Binding("left", "seek(-1)", "-1s", priority=True, show=False),
        Binding("right", "seek(1)", "+1s", priority=True, show=False),
        Binding("shift+left", "seek(-10)", "-10s", priority=True, show=False),
        Binding("shift+right", "seek(10)", "+10s", priority=True, show=False),
        Binding("left_square_bracket", "speed(-1)", "slower", priority=True),
        Binding("right_square_bracket", "speed(1)", "faster", priority=True),
        Binding("home", "seek_start", "start", priority=True, show=False),
        Binding("end", "seek_end", "end", priority=True, show=False),
        Binding("o", "hotspot_mode", "functions/objects", show=False),
        Binding("l", "warnings", "warnings", show=False),  # the header says so when there are any
        *(Binding(str(i + 1), f"tab({i})", f"view {i + 1}", show=False) for i in range(len(TABS))),
    ]

    def __init__(
        self,
        controller: SessionControl,
        *,
        theme: str | None = None,
        theme_dirs: Iterable[Path] | None = None,
        history_length: int = 120,
        attach: AttachOffer | None = None,
    ) -> None:
        super().__init__()
        self.controller = controller
        self.attach = attach  # the command's offer to count another process next (``p``)
        self.header: Header = controller.header
        self.timeline_control: ReplayControl | None = controller.timeline()
        self.replay = self.timeline_control is not None
        self.ctx = RenderContext.from_header(self.header)
        self.history = History([c.metric for c in self.ctx.panels.history], history_length)
        self.region_baselines = RegionBaselines()  # the regions at the baseline (Regions view)
        self.latest: Frame | None = None
        self.shown: Frame | None = None  # what the screens draw: frozen while the display is paused
        self.display_paused = False
        # The preset running now (the first `c` moves to the next one, not to the current one).
        self.sector_preset = str(self.header.sector_config.get("preset", ""))
        self.frames_received = 0
        self.frames_skipped = 0
        self._last_seq = 0
        self._seq = itertools.count(1)
        self._seq_lock = threading.Lock()
        self._baseline_wanted: bool | None = None
        self.warning_log: list[WarningEntry] = []  # every distinct warning, in order (``l`` lists them)
        self._warning_entries: dict[str, WarningEntry] = {}  # the same, by text: a repeat is O(1)
        self._notes: list[tuple[str, str]] = []
        self._started = False
        self.recordings: list[str] = []  # every recording this session made, said again on quit
        self._note_recording(self._recording_path())
        # Numbered on from the bookmarks the recording (and a replay's bookmark file) has already.
        marks = self.timeline_control.marks() if self.timeline_control is not None else ()
        self._bookmarks = sum(1 for m in marks if m.kind == "bookmark")
        self._caught: list[signal.Signals] = []
        self._frames_since_collect = 0
        self._last_collect = 0.0
        self.theme_names: list[str] = []
        self._setup_themes(theme, list(theme_dirs) if theme_dirs is not None else None)
        self.dashboard = DashboardScreen(
            self.ctx, self.history, replay=self.replay, group_names=_group_names(self.header)
        )

    # -- themes --------------------------------------------------------------------------------

    def _setup_themes(self, wanted: str | None, dirs: list[Path] | None) -> None:
        found = discover_themes(dirs)
        for theme in found.themes.values():
            self.register_theme(theme)
        self.theme_names = sorted(found.themes)
        for error in found.errors:
            self._notes.append((f"theme skipped: {error}", "warning"))
        name = wanted or DEFAULT_THEME
        try:
            chosen = load_theme(name, dirs)
        except SectormonError as exc:
            message = f"{exc}; using the default theme"
            if str(exc) not in " ".join(found.errors):
                self._notes.append((message, "error"))
            else:
                self._notes.append((f"theme {name!r} is broken; using the default theme", "error"))
            chosen = found.themes.get(DEFAULT_THEME) or self.get_theme("textual-dark")  # type: ignore[assignment]
        assert chosen is not None
        self.register_theme(chosen)
        if chosen.name not in self.theme_names:
            self.theme_names.append(chosen.name)
        self.theme = chosen.name

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """sectormon's ``sm-*`` variables for themes that do not set them, from the theme's colours."""
        return fallback_variables(self.current_theme)

    def action_next_theme(self) -> None:
        if not self.theme_names:
            return
        index = self.theme_names.index(self.theme) if self.theme in self.theme_names else -1
        self.theme = self.theme_names[(index + 1) % len(self.theme_names)]
        self.notify(f"theme: {self.theme}", timeout=2)

    def watch_theme(self, theme: str) -> None:
        # Bars and cells bake theme colours into their text: redraw once the new CSS is applied.
        self.call_after_refresh(self.redraw)

    # -- lifecycle -----------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return self.dashboard

    def on_mount(self) -> None:
        for text, severity in self._notes:
            self.notify(text, severity=severity, timeout=10)  # type: ignore[arg-type]
        self.controller.subscribe(self._on_frame_thread)
        self.controller.subscribe_warnings(self.post_warning)  # notifications, not stderr under the TUI
        try:
            self.controller.start()
            self._started = True
        except SectormonError as exc:
            self.notify(f"session did not start: {exc}", severity="error", timeout=30)
        if self.replay:
            self.set_interval(TIMELINE_PERIOD, self._tick_timeline)
            self._tick_timeline()
        self.redraw()
        self.call_after_refresh(_freeze_startup_objects)
        self._catch_signals()

    def _catch_signals(self) -> None:
        """SIGTERM and SIGHUP (a closed terminal, ``kill``) quit like ``q``: the terminal is
        restored, the recording gets its end mark and a launched command is stopped, where the
        default action left the screen in raw mode, the file cut and the command orphaned."""
        loop = asyncio.get_running_loop()
        for sig in SIGNALS_THAT_QUIT:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
                loop.add_signal_handler(sig, self.action_quit)
                self._caught.append(sig)

    def on_unmount(self) -> None:
        self._stop_controller()
        with contextlib.suppress(RuntimeError):
            loop = asyncio.get_running_loop()
            for sig in self._caught:
                loop.remove_signal_handler(sig)
        self._caught.clear()

    def _stop_controller(self) -> None:
        if self._started:
            self._started = False
            try:
                self.controller.stop()
            except SectormonError as exc:  # pragma: no cover - reported on the way out
                self.log.warning(f"stopping the session: {exc}")

    def action_quit(self) -> None:  # type: ignore[override]
        self._stop_controller()
        self.exit(0)

    # -- frames (pipeline thread -> UI thread) ---------------------------------------------------

    def _on_frame_thread(self, frame: Frame) -> None:
        """Subscriber callback: runs on the pipeline thread, must never block."""
        with self._seq_lock:
            seq = next(self._seq)
        with contextlib.suppress(RuntimeError):  # the event loop closed under us: the app is exiting
            self.post_message(FrameArrived(frame, seq))

    def post_warning(self, text: str) -> None:
        """Thread-safe: show a session warning as a notification (e.g. the pipeline's on_warning)."""
        with contextlib.suppress(RuntimeError):
            self.post_message(SessionWarning(text))

    def on_session_warning(self, message: SessionWarning) -> None:
        self._warn_once(message.text)

    @property
    def warnings(self) -> list[str]:
        """Every distinct warning so far, in order."""
        return [entry.text for entry in self.warning_log]

    def _warn_once(self, text: str) -> None:
        """Log a warning: the header shows the count and the newest, ``l`` the whole log. No
        notification: six of them stacked over the tables for seconds, hiding the figures."""
        entry = self._warning_entries.get(text)
        if entry is not None:
            entry.count += 1
            return
        t = self.latest.t if self.latest is not None else None
        entry = self._warning_entries[text] = WarningEntry(text, time.time(), t)
        self.warning_log.append(entry)
        self.redraw()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notification as plain text: messages quote labels, names and paths from files and
        profiles, which Textual would read as markup (``[/]`` raised MarkupError and ended the app)
        and the terminal as control sequences."""
        del markup  # always plain: no caller may turn markup on for text it does not own
        super().notify(
            printable(message), title=printable(title), severity=severity, timeout=timeout, markup=False
        )

    def action_warnings(self) -> None:
        if isinstance(self.screen, WarningsScreen):
            return
        self.push_screen(WarningsScreen(self.warning_log))

    def on_frame_arrived(self, message: FrameArrived) -> None:
        if message.seq > self._last_seq + 1:
            self.frames_skipped += message.seq - self._last_seq - 1
        self._last_seq = max(self._last_seq, message.seq)
        self.frames_received += 1
        frame = message.frame
        self.latest = frame
        self.history.add(frame)
        self.region_baselines.add(frame)
        for warning in frame.warnings:
            self._warn_once(warning)
        if self._baseline_wanted is not None and (frame.baseline is not None) == self._baseline_wanted:
            self._baseline_wanted = None
        if not self.display_paused:
            self.shown = frame
            self.redraw()
        self._frames_since_collect += 1
        now = time.monotonic()
        if (
            self._frames_since_collect >= IDLE_COLLECT_FRAMES
            and now - self._last_collect >= IDLE_COLLECT_MIN_S
        ):
            self._frames_since_collect = 0
            self._last_collect = now
            self.call_after_refresh(gc.collect)

    def _recording_path(self) -> str | None:
        """Where the session records now, absolute: an automatic name lands in the current folder."""
        try:
            path = self.controller.recording_path()
        except SectormonError:
            return None
        return os.path.abspath(path) if path else None

    def _note_recording(self, path: str | None) -> None:
        if path and path not in self.recordings:
            self.recordings.append(path)

    def status(self) -> Status:
        return Status(
            end_note=self.controller.end_note() if self.shown is not None and self.shown.final else None,
            recording=self._recording_path(),
            display_paused=self.display_paused,
            window=self.ctx.window,
            sector_preset=self.sector_preset,
            skipped_frames=self.frames_skipped,
            showing_values=not self.ctx.show_deltas,
            warnings=len(self.warning_log),
            newest_warning=self.warning_log[-1].text if self.warning_log else "",
        )

    def redraw(self) -> None:
        """Draw the latest frame on whichever screen shows frames (the dashboard resumes with it)."""
        try:
            screen = self.screen
        except ScreenStackError:
            return
        ctx = self._frame_ctx()
        if isinstance(screen, (DetailScreen, RegionScreen)):
            screen.show(self.shown, ctx)
        elif screen is self.dashboard and self.dashboard.is_mounted:
            self.dashboard.show(self.shown, ctx, self.status())

    def _frame_ctx(self) -> RenderContext:
        """The context for the shown frame: its rotation's threshold, its baseline's regions."""
        baseline = self.shown.baseline if self.shown is not None else None
        return self.ctx.for_frame(self.shown).with_regions_base(self.region_baselines.base_for(baseline))

    # -- replay --------------------------------------------------------------------------------

    def _replay_controller(self) -> ReplayControl:
        assert self.timeline_control is not None
        return self.timeline_control

    def timeline(self) -> Timeline | None:
        if not self.replay:
            return None
        ctl = self._replay_controller()
        return Timeline(
            position=float(ctl.position()),
            duration=float(ctl.duration()),
            speed=float(ctl.speed()),
            paused=bool(ctl.paused()),
            marks=tuple(ctl.marks()),
            step=float(ctl.time_scale()),
        )

    def _tick_timeline(self) -> None:
        if self.dashboard.is_mounted:
            self.dashboard.show_timeline(self.timeline())

    def action_seek(self, seconds: float) -> None:
        self._replay_controller().seek(float(seconds))
        self._tick_timeline()

    def action_seek_start(self) -> None:
        self._replay_controller().seek_to(0.0)
        self._tick_timeline()

    def action_seek_end(self) -> None:
        ctl = self._replay_controller()
        ctl.seek_to(float(ctl.duration()))
        self._tick_timeline()

    def action_speed(self, direction: int) -> None:
        ctl = self._replay_controller()
        current = float(ctl.speed())
        if direction > 0:
            faster = [s for s in SPEEDS if s > current + 1e-9]
            new = faster[0] if faster else SPEEDS[-1]
        else:
            slower = [s for s in SPEEDS if s < current - 1e-9]
            new = slower[-1] if slower else SPEEDS[0]
        ctl.set_speed(new)
        self._tick_timeline()

    # -- keys ----------------------------------------------------------------------------------

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        """Hide keys that do nothing here; let a focused text input keep its own keys."""
        typing = isinstance(self.focused, Input)
        if action in REPLAY_ACTIONS:
            return self.replay and not typing
        if action == "space":
            return not typing
        if action == "sector_preset":
            return bool(self._presets())
        if action == "record":
            return not self.replay  # a replay records nothing: the key only said "recording stopped"
        if action == "filter":
            return self.screen is self.dashboard and not typing
        if action == "hotspot_mode" and not self.dashboard.sampling:
            return False
        if action in DASHBOARD_ACTIONS:
            return self.screen is self.dashboard
        return True

    def _presets(self) -> tuple[str, ...]:
        try:
            return tuple(self.controller.sector_presets())
        except SectormonError:
            return ()

    def action_space(self) -> None:
        if self.replay:
            ctl = self._replay_controller()
            ctl.set_paused(not ctl.paused())
            self._tick_timeline()
        else:
            self.action_pause_display()

    def action_pause_display(self) -> None:
        self.display_paused = not self.display_paused
        if not self.display_paused:
            self.shown = self.latest
        self.redraw()

    def baseline_active(self) -> bool:
        if self._baseline_wanted is not None:
            return self._baseline_wanted
        return self.latest is not None and self.latest.baseline is not None

    def action_baseline(self) -> None:
        try:
            if self.baseline_active():
                self.controller.clear_baseline()
                self._baseline_wanted = False
                self.notify("baseline cleared", timeout=3)
            else:
                self.controller.mark_baseline()
                self._baseline_wanted = True
                self.ctx = dataclasses.replace(self.ctx, show_deltas=True)
                self.notify("baseline marked: tables show improvements from the next frame on", timeout=4)
        except SectormonError as exc:
            self.notify(str(exc), severity="error")

    def action_deltas(self) -> None:
        self.ctx = dataclasses.replace(self.ctx, show_deltas=not self.ctx.show_deltas)
        self.redraw()

    def action_record(self) -> None:
        try:
            path = self.controller.toggle_recording()
        except (SectormonError, OSError) as exc:
            self.notify(f"recording: {exc}", severity="error")
            return
        if path:
            shown = os.path.abspath(path)
            self._note_recording(shown)
            self.notify(f"recording to {shown}", timeout=6)
        else:
            stopped = f"recording stopped: {self.recordings[-1]}" if self.recordings else "recording stopped"
            self.notify(stopped, timeout=4)
        self.redraw()

    def action_bookmark(self) -> None:
        """A numbered bookmark at the newest frame's time: in the recording live, on the timeline
        and in the recording's bookmark file in a replay."""
        self._bookmarks += 1
        label = f"bookmark {self._bookmarks}"
        at = f" at t {self.latest.t:.6g} s" if self.latest is not None else ""
        try:
            self.controller.bookmark(label)
        except SectormonError as exc:
            self.notify(f"{label}{at}: {exc}", severity="error", timeout=8)
            return
        if self.timeline_control is not None:
            kept = self.timeline_control.bookmarks_file()
            self.notify(f"{label}{at}" + (f", kept in {kept}" if kept else ""), timeout=4)
        elif self._recording_path():
            self.notify(f"{label}{at}", timeout=3)
        else:
            self.notify(
                f"{label}{at}: not recording, so nothing keeps it (r starts a recording)",
                severity="warning",
                timeout=6,
            )

    def action_processes(self) -> None:
        """The process list over the monitor; Enter ends this session for one on the chosen pid."""
        open_process_list(self, self.attach, replay=self.replay, then=self.action_quit)

    def action_threads(self) -> None:
        """The counted processes' threads: CPU %, state, last CPU, affinity (read while shown)."""
        open_thread_list(self, self.header, lambda: self.latest, replay=self.replay)

    def action_sort(self) -> None:
        key = self.dashboard.cycle_sort()
        labels = {c.metric: c.label for c in self.ctx.panels.core}
        shown = f"{labels[key]} ({key})" if key in labels and labels[key] != key else key
        self.notify(f"cores sorted by {shown}", timeout=2)

    def action_group(self) -> None:
        """Rows per core or per counted process (MPI ranks first)."""
        by_process = self.dashboard.toggle_process_rows()
        self.notify("rows per process (MPI ranks first)" if by_process else "rows per core", timeout=2)

    def action_window(self) -> None:
        index = WINDOW_NAMES.index(self.ctx.window) if self.ctx.window in WINDOW_NAMES else -1
        self.ctx = self.ctx.with_window(WINDOW_NAMES[(index + 1) % len(WINDOW_NAMES)])
        self.redraw()

    def action_tab(self, index: int) -> None:
        self.dashboard.select_tab(int(index))

    def action_hotspot_mode(self) -> None:
        mode = self.dashboard.next_hotspot_mode()
        self.notify(f"hot spots: {'data objects' if mode == 'objects' else 'functions'}", timeout=2)

    def action_filter(self) -> None:
        self.dashboard.open_filter(self.ctx.filter_text)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if not isinstance(event.input, FilterBar):
            return
        event.stop()
        text = event.value.strip()
        try:
            cores = parse_core_filter(text, self.ctx.cmg_map)
        except ValueError as exc:
            self.notify(f"filter: {exc}", severity="error")
            return
        self.ctx = self.ctx.with_filter(text, cores)
        self.dashboard.close_filter()
        self.redraw()

    def on_filter_bar_cancelled(self, event: FilterBar.Cancelled) -> None:
        self.dashboard.close_filter()

    def action_sector_preset(self) -> None:
        presets = self._presets()
        if not presets:
            return
        index = presets.index(self.sector_preset) if self.sector_preset in presets else -1
        name = presets[(index + 1) % len(presets)]
        try:
            self.controller.apply_sector_preset(name)
        except SectormonError as exc:
            self.notify(f"sector preset {name}: {exc}", severity="error")
            return
        self.sector_preset = name
        config = self.controller.sector_config_for(name)
        if config is not None:  # header and Sectors view show what now applies, not the start's
            self.use_header(self.header.with_fields(sector_config=config))
        self.notify(f"sector preset: {name} (applied at the next timeslice)", timeout=4)
        self.redraw()

    def use_header(self, header: Header) -> None:
        """Show ``header`` from the next draw on (the header bar and the Sectors view read it)."""
        self.header = header
        self.ctx = dataclasses.replace(self.ctx, header=header)

    def help_content(self) -> HelpContent:
        """What ``?`` says: the keys and views that work here, every column label of this layout."""
        return HelpContent(
            replay=self.replay,
            presets=bool(self._presets()),
            views=self.dashboard.views() if self.dashboard.is_mounted else (),
            columns=legend_lines(column_legend(self.ctx.panels, self.ctx.profile), self.ctx.panels.profile),
            simulator=simulator_note(self.header),
            record_folder=os.getcwd(),
            bookmarks_file=(self.timeline_control.bookmarks_file() or "") if self.timeline_control else "",
            hotspots=self.dashboard.sampling,
            proxy=proxy_words(self.header),
            warnings=tuple(self.warnings),
            attach=attach_refusal(self.attach, replay=self.replay) is None,
            threads=thread_list_refusal(self.header, replay=self.replay) is None,
        )

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.help_content()))

    def on_redraw_wanted(self, _message: RedrawWanted) -> None:
        self.redraw()

    def on_open_detail(self, message: OpenDetail) -> None:
        screen = DetailScreen(message.kind, message.key, self.ctx)
        self.push_screen(screen)
        self.call_after_refresh(lambda: screen.show(self.shown, self.ctx.for_frame(self.shown)))

    def on_open_region(self, message: OpenRegion) -> None:
        screen = RegionScreen(message.label, self.ctx)
        self.push_screen(screen)
        self.call_after_refresh(lambda: screen.show(self.shown, self._frame_ctx()))


def _freeze_startup_objects() -> None:
    """Move the long-lived startup objects (widget tree, stylesheet, Textual) out of the collector.

    Otherwise every full collection rescans them, which set the p99 of the frame time (bench_ui in
    docs/perf-tuning.md). Garbage is collected first so no dead cycle is frozen with them.
    """
    gc.collect()
    gc.freeze()


def make_app(
    controller: SessionControl, *, theme: str | None = None, attach: AttachOffer | None = None
) -> SectormonApp:
    """The TUI for a session or a replay (the CLI and the tests share this factory); ``attach``:
    the command's offer to count another process next (``p``; :mod:`sectormon.ui.attach`)."""
    return SectormonApp(controller, theme=theme, attach=attach)


def run_tui(controller: SessionControl, theme: str | None = None, attach: AttachOffer | None = None) -> int:
    """Run the TUI until the user quits (or attaches elsewhere: ``attach`` was told the pid);
    stops the session on the way out. Returns the exit code."""
    app = make_app(controller, theme=theme, attach=attach)
    try:
        result = app.run()
    finally:
        with contextlib.suppress(SectormonError):
            controller.stop()
    controller.wait(5.0)
    for path in app.recordings:  # `r` records into the current folder: say where it went
        if os.path.exists(path):
            print_message(f"recorded to {path}")
    # A crash inside the app (an exception in a widget) ends run() with no result: Textual's
    # return code says so (1), where ``result or 0`` made it exit 0.
    return int(result) if result is not None else int(app.return_code or 0)
