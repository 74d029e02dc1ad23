"""The live (and replay) dashboard: header, rotation, per-CMG and energy panels, and the views
(cores, sectors, stalls, energy, history, a sampling session's hot spots and the marked regions)
as tabs. Only what is visible is redrawn per frame.

A wide screen uses its space: the energy panel sits beside the CMG panel, the cores split in two
tables, and the rows the tables leave free below them show the history (taller sparklines the
more room there is); the views that moved out of the tabs say where they went (help, keys)."""

from __future__ import annotations

import time

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, TabbedContent, TabPane

from sectormon.data.frames import Frame
from sectormon.data.hotspots import HEADER_KEY as HOTSPOTS_KEY
from sectormon.ui.context import RenderContext
from sectormon.ui.history import History
from sectormon.ui.messages import RedrawWanted
from sectormon.ui.screens.help import View
from sectormon.ui.widgets.cmg_panel import CmgPanel
from sectormon.ui.widgets.core_table import CoreTable
from sectormon.ui.widgets.energy_panel import EnergyPanel
from sectormon.ui.widgets.filter_bar import FilterBar
from sectormon.ui.widgets.header_bar import HeaderBar, Status
from sectormon.ui.widgets.history_view import HistoryView
from sectormon.ui.widgets.hotspot_view import HotspotView
from sectormon.ui.widgets.region_view import RegionView
from sectormon.ui.widgets.rotation_bar import RotationBar
from sectormon.ui.widgets.sector_view import SectorView
from sectormon.ui.widgets.stall_view import StallView
from sectormon.ui.widgets.timeline_bar import Timeline, TimelineBar

WIDE = 150
"""From this width on, the energy panel sits beside the CMG panel and the cores split in two."""

TABS = ("tab-cores", "tab-sectors", "tab-stalls", "tab-energy", "tab-history", "tab-hotspots", "tab-regions")
VIEW_NAMES = ("cores", "sectors", "stalls", "energy", "history", "hot spots", "regions")
BESIDE = "beside the CMG table at this width"
BELOW = "below the tables at this width"

TAB_BAR_ROWS = 2
HISTORY_MIN_ROWS = 6
"""The history stays below the tables while at least this many rows are free (title + 5 lines)."""
HISTORY_HYSTERESIS = 2
"""It moves there only with this many rows more: the rows the tables need move by one or two
(a thread comes and goes on the ``unbound`` row), and the "5 History" tab came and went with them."""
MAX_SPARK_ROWS = 6
HISTORY_REDRAW_S = 0.5
"""The history below the tables is a trend: redrawn at most twice a second, not with every frame
of a fast replay (drawing it is a large part of a 48-core frame: docs/perf-tuning.md)."""


class DashboardScreen(Screen[None]):
    """The main screen; the app feeds it frames through :meth:`show`."""

    def __init__(self, ctx: RenderContext, history: History, *, replay: bool, group_names: list[str]) -> None:
        super().__init__(id="dashboard")
        self._ctx = ctx
        self._history = history
        self._replay = replay
        self._group_names = group_names
        self._frame: Frame | None = None
        self._status = Status()
        self._wide: bool | None = None
        self._history_rows = 0  # the height the history below the core tables was given
        self._history_below = False
        self._history_drawn = 0.0  # monotonic time the history below the tables was last drawn

    def compose(self) -> ComposeResult:
        yield HeaderBar(self._ctx.header, id="header")
        yield RotationBar("", id="rotation", markup=False)
        if self._replay:
            yield TimelineBar("", id="timeline", markup=False)
        with Horizontal(id="top"):
            yield CmgPanel(self._ctx, id="cmgs")
            yield EnergyPanel(self._ctx, id="energy-side")
        with TabbedContent(id="views", initial="tab-cores"):
            with TabPane("1 Cores", id="tab-cores"):
                yield CoreTable(self._ctx, id="cores")
            with TabPane("2 Sectors", id="tab-sectors"), VerticalScroll(classes="view-scroll"):
                yield SectorView(id="sectors")
            with TabPane("3 Stalls", id="tab-stalls"), VerticalScroll(classes="view-scroll"):
                yield StallView(id="stalls")
            with TabPane("4 Energy", id="tab-energy"):
                yield EnergyPanel(self._ctx, id="energy-tab")
            with TabPane("5 History", id="tab-history"):
                yield HistoryView(self._ctx, self._history, id="history")
            with TabPane("6 Hot spots", id="tab-hotspots"), VerticalScroll(classes="view-scroll"):
                yield HotspotView(id="hotspots")
            with TabPane("7 Regions", id="tab-regions"):
                yield RegionView(self._ctx, id="regions")
        yield HistoryView(self._ctx, self._history, id="history-side")
        yield FilterBar(id="filter")
        yield Footer()

    def on_mount(self) -> None:
        panels = self._ctx.panels
        tabs = self.query_one(TabbedContent)
        if not panels.sector:
            tabs.hide_tab("tab-sectors")
        if not panels.stall:
            tabs.hide_tab("tab-stalls")
        if not self.sampling:
            tabs.hide_tab("tab-hotspots")
        self.query_one("#filter", FilterBar).display = False
        self.query_one("#history-side", HistoryView).display = False
        self._apply_width(self.size.width)
        self.query_one(CoreTable).focus_table()
        self.show(self._frame, self._ctx, self._status)

    # -- layout by width -----------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        self._apply_width(event.size.width)
        self.call_after_refresh(self._fit_history)

    def _apply_width(self, width: int) -> None:
        wide = width >= WIDE
        if wide == self._wide:
            return
        self._wide = wide
        self.set_class(wide, "-wide")
        has_energy = bool(self._ctx.panels.energy)
        self.query_one("#energy-side", EnergyPanel).display = wide and has_energy
        tabs = self.query_one(TabbedContent)
        if wide or not has_energy:
            if tabs.active == "tab-energy":
                tabs.active = "tab-cores"
            tabs.hide_tab("tab-energy")
        else:
            tabs.show_tab("tab-energy")
        if self._frame is not None:
            self.show(self._frame, self._ctx, self._status)

    # -- frames --------------------------------------------------------------------------------

    @property
    def active_tab(self) -> str:
        return self.query_one(TabbedContent).active

    def show(self, frame: Frame | None, ctx: RenderContext, status: Status) -> None:
        """Draw the header, the panels always on screen, and the active view."""
        self._frame, self._ctx, self._status = frame, ctx, status
        if not self.is_mounted:
            return
        bar = self.query_one(HeaderBar)
        bar.header = ctx.header  # the sector preset the app applied since
        bar.show(frame, status)
        self.query_one(RotationBar).show(frame, self._group_names)
        if frame is None:
            return
        self.query_one(CmgPanel).show(frame, ctx)
        self.query_one(RegionView).remember(frame)
        side = self.query_one("#energy-side", EnergyPanel)
        if side.display:
            side.show(frame, ctx)
        self._show_active(frame, ctx)
        now = time.monotonic()
        if self._history_below and (frame.final or now - self._history_drawn >= HISTORY_REDRAW_S):
            self._history_drawn = now
            self.query_one("#history-side", HistoryView).refresh_history()
        # Every frame: the panels above the views settle over the first frames (the CMG table fills
        # in), so a fit made from an earlier layout can leave the core table no rows.
        self.call_after_refresh(self._fit_history)

    def _fit_history(self) -> None:
        """Show the history below the core tables when a wide screen leaves enough rows free.

        Only under the cores view: the other views scroll and use the whole height."""
        if not self.is_mounted:
            return
        side = self.query_one("#history-side", HistoryView)
        views = self.query_one("#views", TabbedContent)
        metrics = len(self._ctx.panels.history)
        spare = 0
        if self._wide and metrics and views.active in ("tab-cores", "tab-history"):
            free = views.outer_size.height + (side.outer_size.height if side.display else 0)
            spare = free - TAB_BAR_ROWS - self.query_one(CoreTable).rows_needed()
        below = spare >= HISTORY_MIN_ROWS + (0 if self._history_below else HISTORY_HYSTERESIS)
        if below and spare != self._history_rows:
            self._history_rows = spare
            side.styles.height = spare
            side.set_row_height(max(1, min(MAX_SPARK_ROWS, (spare - 1) // metrics)))
        if below == self._history_below:
            return
        self._history_below = below
        side.display = below
        if below:
            if views.active == "tab-history":
                views.active = "tab-cores"
            views.hide_tab("tab-history")
            side.refresh_history()
        else:
            views.show_tab("tab-history")

    def _show_active(self, frame: Frame, ctx: RenderContext) -> None:
        active = self.active_tab
        if active == "tab-cores":
            self.query_one(CoreTable).show(frame, ctx)
        elif active == "tab-sectors":
            self.query_one(SectorView).show(frame, ctx)
        elif active == "tab-stalls":
            self.query_one(StallView).show(frame, ctx)
        elif active == "tab-energy":
            self.query_one("#energy-tab", EnergyPanel).show(frame, ctx)
        elif active == "tab-history":
            self.query_one("#history", HistoryView).refresh_history()
        elif active == "tab-hotspots":
            self.query_one(HotspotView).show(frame, ctx)
        elif active == "tab-regions":
            self.query_one(RegionView).show(frame, ctx)

    def on_screen_resume(self) -> None:
        self.post_message(RedrawWanted())

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if self._frame is not None:
            self._show_active(self._frame, self._ctx)
        self.call_after_refresh(self._fit_history)

    def show_timeline(self, timeline: Timeline | None) -> None:
        if not (self._replay and self.is_mounted):
            return
        try:
            bar = self.query_one(TimelineBar)
        except NoMatches:  # the screen is mounted but its children not yet: the next poll draws it
            return
        bar.show(timeline)

    # -- user actions the app forwards ---------------------------------------------------------

    @property
    def sampling(self) -> bool:
        """Whether the session samples (``--sample``): the hot-spot view is shown."""
        return HOTSPOTS_KEY in self._ctx.header.keys

    def next_hotspot_mode(self) -> str:
        """Show the hot spots and switch them between functions and data objects; the new mode."""
        self.select_tab(TABS.index("tab-hotspots"))
        return self.query_one(HotspotView).next_mode()

    def cycle_sort(self) -> str:
        self.select_tab(0)
        return self.query_one(CoreTable).cycle_sort()

    def toggle_process_rows(self) -> bool:
        """Show the cores view with rows per process, or back per core; whether per process now."""
        self.select_tab(0)
        table = self.query_one(CoreTable)
        table.group_by_process(not table.by_process)
        return table.by_process

    def _elsewhere(self, tab: str) -> str:
        """Where a view without its tab shows its figures ("" when it has its tab, or none)."""
        if tab == "tab-energy" and self._wide and self._ctx.panels.energy:
            return BESIDE
        if tab == "tab-history" and self._history_below:
            return BELOW
        return ""

    def views(self) -> list[View]:
        """The views of this profile at this width, with their keys: those without a tab say
        where their figures are; a view the profile cannot fill is left out."""
        tabs = self.query_one(TabbedContent)
        out = []
        for index, (tab, name) in enumerate(zip(TABS, VIEW_NAMES, strict=True)):
            elsewhere = self._elsewhere(tab)
            if elsewhere or not tabs.get_tab(tab).has_class("-hidden"):
                out.append(View(str(index + 1), name, elsewhere))
        return out

    def select_tab(self, index: int) -> None:
        """Show view ``index`` (0-based); a hidden view says where its figures are instead."""
        tabs = self.query_one(TabbedContent)
        if not 0 <= index < len(TABS) or tabs.active == TABS[index]:
            return
        if tabs.get_tab(TABS[index]).has_class("-hidden"):
            where = self._elsewhere(TABS[index]) or f"not in profile {self._ctx.panels.profile or '?'}"
            self.app.notify(f"{VIEW_NAMES[index]}: {where}", timeout=3)
            return
        # A focused table in the old pane would pull the switcher back to it (TabPane.Focused).
        self.set_focus(None)
        tabs.active = TABS[index]
        if TABS[index] == "tab-cores":
            self.query_one(CoreTable).focus_table()
        elif TABS[index] == "tab-regions":
            self.query_one(RegionView).focus_table()

    def open_filter(self, text: str) -> None:
        bar = self.query_one("#filter", FilterBar)
        bar.value = text
        bar.display = True
        # Focus now, not through ``bar.focus()`` (a message later): keys already queued behind
        # the ``/`` (fast typing, a paste) must reach the filter, not the dashboard's bindings.
        self.set_focus(bar)

    def close_filter(self) -> None:
        bar = self.query_one("#filter", FilterBar)
        bar.display = False
        self.query_one(CoreTable).focus_table()
