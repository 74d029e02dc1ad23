"""The Regions view's rows as data: columns, exact and scaled counts, n/a, first-marked order, and
the change since a baseline with the regions the UI kept at its moment."""

from __future__ import annotations

import dataclasses

from sectormon.data.frames import Baseline, Frame, RegionStats, ScopeStats
from sectormon.io.header_codec import header_from_json
from sectormon.profiles.codec import profile_to_dict
from sectormon.profiles.resolve import load_profile
from sectormon.ui.cells import Cell
from sectormon.ui.context import RenderContext
from sectormon.ui.region_baseline import RegionBase, RegionBaselines
from sectormon.ui.region_rows import breakdown_rows, columns, count_events, ordered_labels, region_rows
from tests.ui.frames_fixture import generic_header
from tests.ui.regions_fixture import generic_region_frames, marked_regions

CTX = RenderContext.from_header(header_from_json(generic_header()))


def texts(row: list[Cell]) -> list[str]:
    return [cell.text for cell in row]


def cell(rows: list[tuple[str, list[Cell]]], key: str, column: str, deltas: bool = False) -> Cell:
    keys = [k for k, _ in columns(CTX, first="Region", deltas=deltas)[0]]
    return dict(rows)[key][keys.index(column)]


def baseline(t_to: float) -> Baseline:
    return Baseline(t_from=t_to - 1.0, t_to=t_to, total={}, cmgs={}, cores={})


def test_columns_are_label_calls_threads_open_time_counts_then_the_core_metrics() -> None:
    specs, widths = columns(CTX, first="Region", deltas=False)
    keys = [key for key, _ in specs]
    assert keys[:6] == ["label", "calls", "threads", "open", "seconds", "count:PAGE_FAULTS"]
    assert keys[6:] == [c.metric for c in CTX.panels.core]
    assert [label for _, label in specs][:6] == ["Region", "calls", "thr", "open", "time", "PAGE_FAULTS"]
    assert all(widths[k] for k in keys[1:])
    changed = [label for _, label in columns(CTX, first="Region", deltas=True)[0]]
    assert changed[1] == "Δcalls" and changed[4] == "Δtime" and changed[5] == "ΔPAGE_FAULTS"
    assert changed[6] == "IPC"  # a metric with a better direction shows an improvement, unmarked


def test_the_layout_events_this_session_cannot_count_are_left_out() -> None:
    header = {"profile": profile_to_dict(load_profile("generic"))}
    ctx = RenderContext.from_header(header_from_json(header))
    assert count_events(ctx) == ("INSTRUCTIONS", "CYCLES", "PAGE_FAULTS")
    header["unavailable"] = {"CYCLES": "ENOENT", "INSTRUCTIONS": "ENOENT"}
    ctx = RenderContext.from_header(header_from_json(header))
    assert count_events(ctx) == ("PAGE_FAULTS",)


def test_counts_are_exact_scaled_ones_marked_and_missing_inputs_na() -> None:
    regions = marked_regions(3)
    rows = region_rows(list(regions), regions, CTX, None)
    assert texts(dict(rows)["fapp_pages#1"])[:6] == ["fapp_pages#1", "4", "1", "", "38.4ms", "24,000"]
    scaled = cell(rows, "likwid_pages", "count:PAGE_FAULTS")
    assert scaled.text == "~1,502" and "low" in scaled.roles  # counted for half of the region
    assert cell(rows, "likwid_pages", "page_fault_rate").text.startswith("~")
    assert cell(rows, "fapp_pages#1", "IPC") == Cell("n/a", ("na",))  # no instructions counted
    assert cell(rows, "worker", "count:PAGE_FAULTS").text == "2,400"
    assert cell(rows, "worker", "threads").text == "3"


def test_an_event_no_group_counted_in_the_region_is_na_not_zero() -> None:
    regions = marked_regions(0)
    fapp = regions["fapp_pages#1"]
    total = fapp.total
    blind = ScopeStats(
        counts={"TASK_CLOCK": total.counts["TASK_CLOCK"]},
        rates={},
        metrics=dict(total.metrics),
        coverage={"PAGE_FAULTS": 0.0, "TASK_CLOCK": 1.0},
        seconds=total.seconds,
    )
    rows = region_rows(["fapp_pages#1"], {"fapp_pages#1": dataclasses.replace(fapp, total=blind)}, CTX, None)
    assert cell(rows, "fapp_pages#1", "count:PAGE_FAULTS") == Cell("n/a", ("na",))


def test_rows_keep_the_first_marked_order_whatever_a_frame_lists() -> None:
    order: list[str] = []
    for step in range(5):
        labels = ordered_labels(order, marked_regions(step))
    assert list(marked_regions(4)) == ["worker", "likwid_pages", "fapp_pages#1"]  # listed otherwise
    assert labels == ["fapp_pages#1", "likwid_pages", "worker"]
    assert ordered_labels(order, {"worker": marked_regions(4)["worker"]}) == ["worker"]


def test_with_a_baseline_counts_calls_and_time_change_and_metrics_improve() -> None:
    base = RegionBase(t=2.0, t_to=2.3, regions=marked_regions(1))
    now = marked_regions(3)
    rows = region_rows(list(now), now, CTX, base)
    fapp = dict(rows)["fapp_pages#1"]
    assert fapp[0].text == "fapp_pages#1"
    assert cell(rows, "fapp_pages#1", "calls", True).text == "+2"
    assert cell(rows, "fapp_pages#1", "count:PAGE_FAULTS", True).text == "+12,000"
    assert cell(rows, "fapp_pages#1", "seconds", True).text == "+19.2ms"
    # The same fault rate as then: page_fault_rate (lower is better) did not change.
    assert cell(rows, "fapp_pages#1", "page_fault_rate", True).text == "±0"
    # A region first marked after the baseline counted everything since; its metrics had no value.
    assert cell(rows, "worker", "count:PAGE_FAULTS", True).text == "+2,400"
    assert cell(rows, "worker", "calls", True).text == "+3"
    assert cell(rows, "worker", "page_fault_rate", True) == Cell("n/a", ("na",))


def test_a_breakdown_has_a_row_per_thread_cmg_core_rank_and_process() -> None:
    worker = marked_regions(3)["worker"]
    threads = breakdown_rows(worker, None, "threads", "tid", CTX, deltas=False)
    assert [texts(cells)[:3] for _, cells in threads] == [
        ["tid 8573", "1.60ms", "800"],
        ["tid 8574", "1.60ms", "800"],
        ["tid 8575", "1.60ms", "800"],
    ]
    cores = breakdown_rows(worker, None, "cores", "CPU", CTX, deltas=False)
    assert [(k, cells[2].text) for k, cells in cores] == [("0", "1,600"), ("1", "800")]
    assert [k for k, _ in breakdown_rows(worker, None, "ranks", "rank", CTX, deltas=False)] == ["0"]
    before = marked_regions(2)["worker"]  # 400 pages a thread then
    since = breakdown_rows(worker, before, "threads", "tid", CTX, deltas=True)
    assert {cells[2].text for _, cells in since} == {"+400"}


def frame_at(step: int) -> Frame:
    return generic_region_frames(step + 1)[step]


def test_the_baseline_regions_are_those_of_the_newest_frame_at_or_before_its_end() -> None:
    seen = RegionBaselines()
    assert seen.base_for(None) is None
    for step in range(4):  # frames at t 1, 2, 3, 4
        seen.add(frame_at(step))
    base = seen.base_for(baseline(2.5))
    assert base is not None and base.t == 2.0 and base.regions == frame_at(1).run.regions
    assert seen.base_for(baseline(2.5)) is base  # kept
    assert seen.base_for(baseline(0.5)) is None  # no frame that early was seen


def test_a_seek_back_starts_a_new_timeline_but_keeps_a_found_base() -> None:
    seen = RegionBaselines()
    for step in range(4):
        seen.add(frame_at(step))
    found = seen.base_for(baseline(3.0))
    assert found is not None and found.t == 3.0
    seen.add(frame_at(2))  # t back to 3 s: the frames seen before are another timeline
    assert seen.base_for(baseline(3.0)) is found
    assert seen.base_for(baseline(2.0)) is None  # t 1 and 2 s were seen on the old timeline only


def test_regions_in_a_frame_are_the_frames_own() -> None:
    regions: dict[str, RegionStats] = dict(frame_at(2).run.regions)
    assert list(regions) == ["fapp_pages#1", "likwid_pages", "worker"]
    assert regions["worker"].open
    rows = region_rows(list(regions), regions, CTX, None)
    assert cell(rows, "worker", "open").text == "open"


def test_a_scope_time_the_frame_does_not_carry_is_na_not_zero() -> None:
    """The engine's per-thread scopes carry no time yet (seconds 0): n/a, never ``0s``."""
    worker = marked_regions(3)["worker"]
    untimed = {tid: ScopeStats(s.counts, s.rates, s.metrics, s.coverage) for tid, s in worker.threads.items()}
    region = dataclasses.replace(worker, threads=untimed)
    rows = breakdown_rows(region, None, "threads", "tid", CTX, deltas=False)
    assert {cells[1] for _, cells in rows} == {Cell("n/a", ("na",))}
    assert {cells[2].text for _, cells in rows} == {"800"}  # the counts are still there
    since = breakdown_rows(region, marked_regions(2)["worker"], "threads", "tid", CTX, deltas=True)
    assert {cells[1] for _, cells in since} == {Cell("n/a", ("na",))}
    timed_then = breakdown_rows(
        worker, dataclasses.replace(worker, threads=untimed), "threads", "tid", CTX, deltas=True
    )
    assert {cells[1] for _, cells in timed_then} == {Cell("n/a", ("na",))}  # its time then unknown
