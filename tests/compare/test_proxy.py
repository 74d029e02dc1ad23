"""compare marks a metric estimated by --proxy stand-ins on either side: ``≈`` before the value in
the text and Markdown tables (with the mark's meaning under the table), the sides in the CSV's
``proxy`` column and the JSON's ``proxy`` list; a comparison without a proxy has none of them."""

from __future__ import annotations

import csv
import io

from sectormon.compare.render import PROXY_NOTE, render_csv, render_markdown, render_text
from sectormon.compare.runs import Comparison, compare_runs
from sectormon.compare.sides import run_metrics_from_frame
from sectormon.data.frames import Frame, ScopeStats, WindowStats
from sectormon.data.run_metrics import RunMetrics


def _stats(
    ipc: float, proxy: frozenset[str] = frozenset(), error: dict[str, float | None] | None = None
) -> ScopeStats:
    return ScopeStats(
        counts={"INST_RETIRED": 2.0 * ipc},
        rates={},
        metrics={"IPC": ipc, "L1D_miss_rate": 0.25},
        coverage={},
        proxy=proxy,
        proxy_error=error,
    )


def _run(label: str, *, proxied: bool, cmg_error: float | None = None) -> RunMetrics:
    """A final frame whose CMG scope's IPC is a proxy estimate when ``proxied`` (its error bound
    ``cmg_error``; the total's unknown)."""
    flag = frozenset({"INST_RETIRED", "IPC"}) if proxied else frozenset()
    cmg_bounds = dict.fromkeys(flag, cmg_error)
    window = WindowStats(
        seconds=1.0,
        total=_stats(1.0, flag, dict.fromkeys(flag)),
        cmgs={"0": _stats(1.5, flag, cmg_bounds)},
        cores={"12": _stats(1.5)},
    )
    frame = Frame(
        t=1.0,
        interval=1.0,
        overhead=0.0,
        total=window.total,
        cmgs={},
        cores={},
        threads={},
        recent=window,
        run=window,
        final=True,
    )
    return run_metrics_from_frame(frame, label=label)


def _compare(base_proxied: bool, other_proxied: bool) -> Comparison:
    return compare_runs(_run("base", proxied=base_proxied), _run("other", proxied=other_proxied))


def test_a_proxied_side_is_marked_in_every_output() -> None:
    cmp = _compare(False, True)
    row = cmp.scope("cmg:0").row("IPC")
    assert (row.proxy_base, row.proxy_other) == (False, True)
    assert not cmp.scope("core:12").row("IPC").proxy_other  # a stand-in's own count is not an estimate
    assert not cmp.scope("cmg:0").row("L1D_miss_rate").proxy_other
    scopes = cmp.to_json()["scopes"]
    assert scopes["cmg:0"]["metrics"]["IPC"]["proxy"] == ["other"]
    assert "proxy" not in scopes["cmg:0"]["metrics"]["L1D_miss_rate"]
    text = render_text(cmp)
    ipc_lines = [line for line in text.splitlines() if line.startswith("IPC ")]
    assert [("≈" in line) for line in ipc_lines] == [True, True, False]  # total, cmg:0, core:12
    assert ipc_lines[1].split()[1:3] == ["1.500", "≈1.500"]  # Baseline, Sector (no unit)
    assert text.count(PROXY_NOTE) == 2
    assert "≈1.500" in render_markdown(cmp) and PROXY_NOTE in render_markdown(cmp)
    rows = {(r["scope"], r["metric"]): r["proxy"] for r in csv.DictReader(io.StringIO(render_csv(cmp)))}
    assert rows[("cmg:0", "IPC")] == "other" and rows[("cmg:0", "L1D_miss_rate")] == ""
    assert _compare(True, True).to_json()["scopes"]["total"]["metrics"]["IPC"]["proxy"] == ["base", "other"]


def test_no_mark_without_a_proxy() -> None:
    cmp = _compare(False, False)
    assert "≈" not in render_text(cmp) + render_markdown(cmp)
    assert PROXY_NOTE not in render_text(cmp)
    assert all("proxy" not in m for s in cmp.to_json()["scopes"].values() for m in s["metrics"].values())


def test_a_proxied_value_shows_its_error_bound_or_n_a() -> None:
    """The bound follows the mark in the text and Markdown tables (``±n/a`` where unknown, never
    0) and the JSON row carries it per proxied side."""
    cmp = compare_runs(_run("base", proxied=False), _run("other", proxied=True, cmg_error=0.12))
    row = cmp.scope("cmg:0").row("IPC")
    assert (row.error_base, row.error_other) == (None, 0.12)
    scopes = cmp.to_json()["scopes"]
    assert scopes["cmg:0"]["metrics"]["IPC"]["proxy_error"] == {"other": 0.12}
    assert scopes["total"]["metrics"]["IPC"]["proxy_error"] == {"other": None}
    assert "proxy_error" not in scopes["cmg:0"]["metrics"]["L1D_miss_rate"]
    text = render_text(cmp)
    assert "≈1.500 ±12%" in text and "≈1.000 ±n/a" in text
    assert "≈1.500 ±12%" in render_markdown(cmp)
