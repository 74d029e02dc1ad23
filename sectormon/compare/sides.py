"""The two sides of ``sectormon compare``, loaded: each path reduced to a :class:`RunMetrics`.

A recording is replayed to its final frame, whose whole-run window gives the total, CMG and core
scopes; a fapp folder, or a recording ``sectormon import fapp`` made of one, goes through the fapp
analysis, so a folder and its import compare the same. Sides that are unlike (another profile,
another source) are said in warnings; sides with no metric valued on both are an error.

``--region`` names one region on either kind of side: a fapp folder's measured region (fapp's own
meaning), a recording's marked region (:mod:`sectormon.compare.regions`), or a job's. It is the
same region either way, the one ``fapp_start``/``fapp_stop`` wrap, so a fapp folder compares with
a recording of the same program run under sectormon.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sectormon.compare.hotspots import hotspot_shift
from sectormon.compare.regions import region_run_metrics
from sectormon.compare.runs import Comparison, compare_runs, scope_sort_key
from sectormon.data.frames import Frame, ScopeStats
from sectormon.data.header import Header
from sectormon.data.hotspots import FrameHotspots
from sectormon.data.run_metrics import REPORT_PREFIX, RunMetrics
from sectormon.errors import UsageError
from sectormon.files.regular import check_name
from sectormon.profiles.model import MetricDef, Profile

FAPP_SOURCE = "fapp"
SOURCE_NAMES = {
    "perf": "counted by perf",
    "sim": "the simulated A64FX",
    FAPP_SOURCE: "fapp data",
    "job": "a merged job",
}


@dataclass(frozen=True)
class Side:
    """One side of a comparison, loaded: its metrics, their conventions, and what it is."""

    run: RunMetrics
    info: Mapping[str, MetricDef]
    warnings: tuple[str, ...] = ()
    profile: str = ""
    """The profile its metrics come from: ``name`` or ``name (variant)``."""
    source: str = ""
    """Where its counts come from: ``perf``, ``sim``, ``fapp``."""
    hotspots: FrameHotspots | None = None
    """The final frame's hot spots of a recording made with ``--sample``."""


def run_metrics_from_frame(frame: Frame, *, label: str, info: Mapping[str, Any] | None = None) -> RunMetrics:
    """A recording's final frame as a :class:`RunMetrics`: its whole-run window."""
    window = frame.run
    scopes: dict[str, ScopeStats] = {"total": window.total}
    scopes.update(
        (f"cmg:{k}", v) for k, v in sorted(window.cmgs.items(), key=lambda kv: scope_sort_key(kv[0]))
    )
    scopes.update(
        (f"core:{k}", v) for k, v in sorted(window.cores.items(), key=lambda kv: scope_sort_key(kv[0]))
    )
    scopes.update(rank_scopes(frame))
    return RunMetrics(
        label=label,
        kind="recording",
        metrics={k: dict(v.metrics) for k, v in scopes.items()},
        coverage={k: dict(v.coverage) for k, v in scopes.items()},
        counts={k: dict(v.counts) for k, v in scopes.items()},
        info=dict(info or {}),
        proxy={k: v.proxy for k, v in scopes.items() if v.proxy},
        proxy_error={k: dict(v.proxy_error) for k, v in scopes.items() if v.proxy_error},
    )


def rank_scopes(frame: Frame) -> list[tuple[str, ScopeStats]]:
    """``rank:N`` for each MPI rank one process of the final frame carries (its whole run).

    Pids differ from run to run, ranks do not: a rank is what two runs of a job share. A rank
    several processes carry (a rank's own helpers inherit its environment) names none of them
    alone, so it is left out.
    """
    by_rank: dict[int, list[str]] = {}
    for pid, info in frame.processes.items():
        if info.rank is not None and pid in frame.procs:
            by_rank.setdefault(info.rank, []).append(pid)
    return [
        (f"rank:{rank}", frame.procs[pids[0]]) for rank, pids in sorted(by_rank.items()) if len(pids) == 1
    ]


def metric_info_from_profile(profile: Profile) -> dict[str, MetricDef]:
    return {m.name: m for m in profile.metrics}


def builtin_metric_info(name: str = "a64fx") -> dict[str, MetricDef]:
    """Metric conventions of a profile shipped with sectormon (for fapp sides, which have none)."""
    from sectormon.profiles.resolve import load_profile

    return metric_info_from_profile(load_profile(name))


def fapp_metric_info() -> dict[str, MetricDef]:
    """Conventions for a fapp side: the a64fx profile's for its metrics, and Fujitsu's report
    metrics' own (:data:`sectormon.fapp.report.BETTER` and ``UNITS``) under ``report:<name>``."""
    from sectormon.fapp.report import BETTER, UNITS

    info = builtin_metric_info("a64fx")
    info.update(
        (REPORT_PREFIX + name, MetricDef(REPORT_PREFIX + name, "", unit=UNITS[name], better=better))
        for name, better in BETTER.items()
    )
    return info


def _profile_label(name: object, variant: object) -> str:
    text = name if isinstance(name, str) and name else "unnamed"
    return f"{text} ({variant})" if isinstance(variant, str) and variant else text


def _header_source(header: Header) -> str:
    return header.source.kind or "unknown"


def load_recording_side(path: str, *, skip_bad: bool = False, region: str | None = None) -> Side:
    """``region``: one marked region of the run (or the region a fapp import holds) instead of
    the whole run."""
    from sectormon.fapp.from_recording import is_fapp_import
    from sectormon.io.reader import open_recording

    with open_recording(path, skip_bad=skip_bad) as stream:
        header = stream.header
    if is_fapp_import(header):
        return _load_fapp_import(path, skip_bad=skip_bad, region=region)
    return _load_engine_side(path, skip_bad=skip_bad, region=region)


def _load_engine_side(path: str, *, skip_bad: bool, region: str | None = None) -> Side:
    from sectormon.profiles.codec import profile_from_dict
    from sectormon.session.replay import final_frame

    header, frame, stream = final_frame(path, skip_bad=skip_bad)
    facts = {
        "path": path,
        "source": header.source.fields.get("kind"),
        # null where the header has none, as in the header
        "target": header.target.fields if "target" in header.keys else None,
        "sector_config": header.sector_config if "sector_config" in header.keys else None,
        "created": header.created,
        "seconds": frame.run.seconds,
        "skipped_lines": stream.skipped,
    }
    warnings = list(stream.warnings)
    hotspots = frame.hotspots
    if region is None:
        run = run_metrics_from_frame(frame, label=Path(path).name, info=facts)
    else:
        run, said = region_run_metrics(
            frame.run.regions, region, label=Path(path).name, info=facts, path=path
        )
        warnings += said
        if hotspots is not None:  # sampled over the whole run: they say nothing of the region
            warnings.append(f"{path}: its hot spots are the whole run's, not compared for one region")
            hotspots = None
    profile = profile_from_dict(dict(header.profile), source=path)
    if stream.skipped:
        warnings.append(f"{path}: skipped {stream.skipped} malformed line(s) (--skip-bad)")
    return Side(
        run=run,
        info=metric_info_from_profile(profile),
        warnings=tuple(warnings),
        profile=_profile_label(profile.name, profile.variant),
        source=_header_source(header),
        hotspots=hotspots,
    )


def _load_fapp_import(path: str, *, skip_bad: bool, region: str | None = None) -> Side:
    from sectormon.fapp.analysis import IMPORT_KIND, analyze_measurement, measurement_run_metrics
    from sectormon.fapp.from_recording import rebuild_measurement
    from sectormon.io.reader import read_recording

    recording = read_recording(path, skip_bad=skip_bad)
    m = rebuild_measurement(path, recording.header, recording.slices)
    imported = {row.region_name for event_set in m.sets.values() for row in event_set.rows}
    if region is not None and region not in imported:
        raise UsageError(
            f"--region {region}: {path} is a fapp import of region {', '.join(sorted(imported))} only; "
            "import the fapp directory again with --region NAME"
        )
    analysis = analyze_measurement(m)
    run = measurement_run_metrics(analysis, label=Path(path).name, kind=IMPORT_KIND)
    warnings = [*recording.warnings, *_named(path, m.warnings)]
    if recording.skipped:
        warnings.append(f"{path}: skipped {recording.skipped} malformed line(s) (--skip-bad)")
    return Side(
        run=run,
        info=fapp_metric_info(),
        warnings=tuple(warnings),
        profile=_profile_label("a64fx", analysis.section3.variant),
        source=FAPP_SOURCE,
    )


def load_fapp_side(path: str, region: str | None = None) -> Side:
    from sectormon.fapp.analysis import KIND, analyze, measurement_run_metrics

    analysis = analyze(path, region)
    run = measurement_run_metrics(analysis, label=Path(path).name or str(path), kind=KIND)
    return Side(
        run=run,
        info=fapp_metric_info(),
        warnings=_named(path, analysis.measurement.warnings),
        profile=_profile_label("a64fx", analysis.section3.variant),
        source=FAPP_SOURCE,
    )


def _named(path: str, warnings: Iterable[str]) -> tuple[str, ...]:
    """A measurement's warnings, each naming the side (most name their file and line already)."""
    return tuple(w if w.startswith(path) else f"{path}: {w}" for w in warnings)


def load_job_side(path: str, *, skip_bad: bool = False, region: str | None = None) -> Side:
    """A job file from ``sectormon merge``, or ``FILE,FILE...``: node recordings taken as one job
    (``region``: one marked region of it)."""
    from sectormon.job.runs import job_facts, job_final, job_run_metrics

    paths = [p for p in path.split(",") if p]
    label = Path(paths[0]).name if len(paths) == 1 else path
    frame, alignment, profile, warnings = job_final(paths, skip_bad=skip_bad)
    if region is None:
        run = job_run_metrics(frame, alignment, label=label)
    else:
        facts = job_facts(frame, alignment, label=label)
        run, said = region_run_metrics(
            frame.run.regions, region, label=label, kind="job", info=facts, path=path
        )
        warnings += said
    return Side(
        run=run,
        info=metric_info_from_profile(profile),
        warnings=tuple(warnings),
        profile=_profile_label(profile.name, profile.variant),
        source="job",
    )


def load_side(path: str, *, skip_bad: bool = False, region: str | None = None) -> Side:
    """A recording file or a fapp directory; a job file or ``FILE,FILE...`` is a job
    (:func:`load_job_side`). ``region``: a fapp directory's measured region (when it has
    several), or one marked region of a recording or job."""
    from sectormon.job.jobfile import is_job_file

    if "," in path and not os.path.exists(path):
        return load_job_side(path, skip_bad=skip_bad, region=region)
    check_name(path, "recording or fapp folder")
    p = Path(path)
    if p.is_file() and is_job_file(path):
        return load_job_side(path, skip_bad=skip_bad, region=region)
    if p.is_dir():
        return load_fapp_side(path, region)
    if p.is_file():
        return load_recording_side(path, skip_bad=skip_bad, region=region)
    raise UsageError(
        f"{path}: no such file or directory (give a sectormon recording or a fapp cpupa directory)"
    )


def unlike(base: Side, other: Side) -> list[str]:
    """What makes the two sides unlike, one line each (empty when they are alike)."""
    out: list[str] = []
    b, o = base.run.label, other.run.label
    if base.profile != other.profile:
        out.append(
            f"different profiles: {b} uses {base.profile}, {o} uses {other.profile}; "
            "a metric of one name may be computed from other events, and only the metrics both "
            "have can be compared"
        )
    if base.source != other.source:
        out.append(
            f"different sources: {b} is {SOURCE_NAMES.get(base.source, base.source)}, "
            f"{o} is {SOURCE_NAMES.get(other.source, other.source)}; their counts were not taken "
            "the same way"
        )
    return out


def compare_paths(
    base: str,
    other: str,
    *,
    skip_bad: bool = False,
    scopes: Iterable[str] = (),
    region: str | None = None,
) -> Comparison:
    """``region`` compares one region instead of the whole runs: ``NAME`` for both sides,
    ``BASE,OTHER`` for each its own (two regions of one run compare too). On a fapp directory it
    is the measured region; on a recording or a job, the marked region of that label."""
    base_region = other_region = region
    if region is not None:
        names = region.split(",")
        if len(names) > 2 or not all(n.strip() for n in names):
            raise UsageError(f"--region {region!r}: give NAME (both sides) or BASE_NAME,OTHER_NAME")
        base_region, other_region = names[0].strip(), names[-1].strip()
    b = load_side(base, skip_bad=skip_bad, region=base_region)
    o = load_side(other, skip_bad=skip_bad, region=other_region)
    base_run, other_run = b.run, o.run
    paired: list[str] = []
    if base_run.kind == "job" and other_run.kind == "job":
        from sectormon.job.runs import pair_nodes

        base_run, other_run, paired = pair_nodes(base_run, other_run)
    sampled = [side.run.label for side in (b, o) if side.hotspots is not None]
    shift = (
        hotspot_shift(b.hotspots, o.hotspots) if b.hotspots is not None and o.hotspots is not None else None
    )
    alone = (
        [f"only {sampled[0]} was recorded with --sample: no hot-spot comparison"] if len(sampled) == 1 else []
    )
    cmp = compare_runs(
        base_run,
        other_run,
        info={**o.info, **b.info},
        scopes=scopes,
        warnings=(*b.warnings, *o.warnings, *paired, *alone),
        mixed=unlike(b, o),
    )
    if shift is not None:
        cmp = dataclasses.replace(cmp, hotspots=shift)
    if not any(r.base is not None and r.other is not None for sc in cmp.scopes for r in sc.rows):
        profiles = b.profile if b.profile == o.profile else f"{b.profile} and {o.profile}"
        raise UsageError(
            f"{base} and {other}: no metric has a value on both sides (profiles {profiles}, "
            f"sources {b.source} and {o.source}); compare runs counted with the same profile and events"
        )
    return cmp
