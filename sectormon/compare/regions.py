"""One marked region of a recording as a side of ``sectormon compare --region NAME``.

The PMU document judges the sector cache on the kernel it wraps in ``fapp_start``/``fapp_stop``
(section 6.1), not on the whole run, whose start-up and I/O dilute the effect. A recording's final
frame holds every region over the whole run (``run.regions``), so a region side is that region's
figures, with the same scope keys as a whole run (``total``, ``cmg:N``, ``core:N``, ``rank:N``; a
merged job's ``node:HOST`` and ``node:HOST/cmg:N``...) and the same delta conventions
(:mod:`sectormon.compare.runs`). Threads and processes are left out:
their ids differ from run to run, so the two sides could never pair them.

A region is named by its label (``name``, or ``name#N`` when its number is not 0); ``name`` alone
also names the one region of that name when only one number of it was marked. A run without it is
one line naming the run and the regions it has.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sectormon.compare.runs import scope_sort_key
from sectormon.data.frames import RegionStats, ScopeStats
from sectormon.data.run_metrics import RunMetrics
from sectormon.errors import UsageError

MAX_NAMED = 12
"""Regions an error lists before ``...`` (a program may mark many)."""


def resolve_region(regions: Mapping[str, RegionStats], wanted: str, *, run: str) -> str:
    """The label of the region ``wanted`` names in ``run``'s regions (a UsageError naming the run
    and its regions when none, or several, match)."""
    if wanted in regions:
        return wanted
    numbered = [label for label, stats in regions.items() if stats.name == wanted]
    if len(numbered) == 1:
        return numbered[0]
    if numbered:
        raise UsageError(
            f"--region {wanted}: {run} has {len(numbered)} regions of that name "
            f"({', '.join(numbered)}); give one of them"
        )
    raise UsageError(f"--region {wanted}: {run} has no such region; {_has(regions)}")


def _has(regions: Mapping[str, RegionStats]) -> str:
    if not regions:
        return "it marked none (build the program with `sectormon markers --cflags`/`--libs`)"
    labels = list(regions)
    shown = ", ".join(labels[:MAX_NAMED]) + (" ..." if len(labels) > MAX_NAMED else "")
    return f"its regions: {shown}"


def region_scopes(stats: RegionStats) -> dict[str, ScopeStats]:
    """The region's scopes under compare's keys, in compare's order (a job's node scopes keep the
    keys the job gave them, as a whole job's do)."""

    def ordered(kind: str, scopes: Mapping[str, ScopeStats]) -> list[tuple[str, ScopeStats]]:
        keyed = [
            (ident if ident.startswith("node:") else f"{kind}:{ident}", value)
            for ident, value in scopes.items()
        ]
        return sorted(keyed, key=lambda item: scope_sort_key(item[0]))

    out: dict[str, ScopeStats] = {"total": stats.total}
    out.update((f"node:{host}", value) for host, value in stats.nodes.items())
    for kind, scopes in (("cmg", stats.cmgs), ("core", stats.cores), ("rank", stats.ranks)):
        out.update(ordered(kind, scopes))
    return out


def region_facts(label: str, stats: RegionStats) -> dict[str, Any]:
    """What a side says about its region (the JSON's ``info``; ``seconds`` replaces the run's)."""
    return {
        "region": label,
        "calls": stats.calls,
        "thread_count": stats.thread_count,
        "open": stats.open,
        "seconds": stats.seconds,
    }


def region_run_metrics(
    regions: Mapping[str, RegionStats],
    wanted: str,
    *,
    label: str,
    kind: str = "recording",
    info: Mapping[str, Any] | None = None,
    path: str | None = None,
) -> tuple[RunMetrics, list[str]]:
    """The region ``wanted`` names, of a run's whole-run regions, as a :class:`RunMetrics`, and
    what a reader should know of it (a region still open at the end). ``path``: the run as the
    user gave it, for messages (default ``label``)."""
    where = path or label
    name = resolve_region(regions, wanted, run=where)
    stats = regions[name]
    scopes = region_scopes(stats)
    warnings = (
        [f"{where}: region {name} was still open at the end of the run: its counts up to then are in"]
        if stats.open
        else []
    )
    run = RunMetrics(
        label=label,
        kind=kind,
        metrics={k: dict(v.metrics) for k, v in scopes.items()},
        coverage={k: dict(v.coverage) for k, v in scopes.items()},
        counts={k: dict(v.counts) for k, v in scopes.items()},
        info={**(info or {}), **region_facts(name, stats)},
        proxy={k: v.proxy for k, v in scopes.items() if v.proxy},
        proxy_error={k: dict(v.proxy_error) for k, v in scopes.items() if v.proxy_error},
    )
    return run, warnings
