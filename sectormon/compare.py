"""Baseline vs tuned run: every metric per scope with delta, improvement and the section-3 effects.

Each side is reduced to a :class:`RunMetrics` first: a recording is replayed to its final frame
(its whole-run window: total, CMGs, cores), a fapp directory goes through the fapp importer. The
comparison follows the PMU document (sections 3 and 6.6): ``delta = other - base``;
``improvement`` is positive when the other run is better, by the metric's ``better`` convention
(``base - other`` for lower-is-better miss/stall rates and energy, ``other - base`` for IPC);
``relative`` is the improvement relative to ``|base|`` (for metrics with no better direction, the
plain relative change ``delta / |base|``). ``IPC_improvement`` is ``(IPC_other - IPC_base) /
IPC_base * 100`` and ``L2_effectiveness`` the ratio of L2 miss counts other / base. A metric only
one side can compute is ``None`` (n/a) on the other side, never 0.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sectormon.errors import UsageError
from sectormon.frames import Frame, ScopeStats
from sectormon.metrics.baseline import metric_delta as baseline_delta
from sectormon.runmetrics import RunMetrics

COMPARE_SCHEMA = "sectormon/compare/1"
IPC_METRIC = "IPC"
L2_MISS_CORRECTED = "L2_miss_count_corrected"
L2_MISS_RAW = "L2_MISS_COUNT"


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """What a profile says about a metric: the sign convention of comparisons and its unit."""

    better: str = "none"
    unit: str = ""


@dataclass(frozen=True, slots=True)
class Row:
    """One metric of one scope, both sides."""

    metric: str
    base: float | None
    other: float | None
    delta: float | None
    improvement: float | None
    relative: float | None
    better: str = "none"
    unit: str = ""
    coverage_base: float | None = None
    coverage_other: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "other": self.other,
            "delta": self.delta,
            "improvement": self.improvement,
            "relative": self.relative,
            "better": self.better,
            "unit": self.unit,
            "coverage_base": self.coverage_base,
            "coverage_other": self.coverage_other,
        }


@dataclass(frozen=True, slots=True)
class ScopeComparison:
    scope: str
    rows: tuple[Row, ...]
    ipc_improvement: float | None = None
    l2_effectiveness: float | None = None
    l2_source: str = ""

    def row(self, metric: str) -> Row:
        for r in self.rows:
            if r.metric == metric:
                return r
        raise KeyError(metric)

    def to_json(self) -> dict[str, Any]:
        return {
            "metrics": {r.metric: r.to_json() for r in self.rows},
            "IPC_improvement": self.ipc_improvement,
            "L2_effectiveness": self.l2_effectiveness,
            "L2_effectiveness_source": self.l2_source or None,
        }


@dataclass(frozen=True)
class Comparison:
    base: RunMetrics
    other: RunMetrics
    scopes: tuple[ScopeComparison, ...]
    warnings: tuple[str, ...] = field(default=())

    def scope(self, name: str) -> ScopeComparison:
        for s in self.scopes:
            if s.scope == name:
                return s
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        def side(run: RunMetrics) -> dict[str, Any]:
            return {"label": run.label, "kind": run.kind, "info": dict(run.info)}

        return {
            "schema": COMPARE_SCHEMA,
            "base": side(self.base),
            "other": side(self.other),
            "scopes": {s.scope: s.to_json() for s in self.scopes},
            "warnings": list(self.warnings),
        }


# ------------------------------------------------------------------------------------ arithmetic


def metric_delta(
    base: float | None, other: float | None, better: str
) -> tuple[float | None, float | None, float | None]:
    """``(delta, improvement, relative)`` with the PMU document's sign convention; n/a stays n/a.

    The same convention as the live baseline (:func:`sectormon.metrics.baseline.metric_delta`);
    for a metric without a better direction, ``relative`` is the plain change over ``|base|``.
    """
    result = baseline_delta(base, other, better)
    relative = result.relative
    if relative is None and result.improvement is None and result.delta is not None and base:
        relative = result.delta / abs(base)
    return result.delta, result.improvement, relative


def ipc_improvement(base: float | None, other: float | None) -> float | None:
    """``(IPC_other - IPC_base) / IPC_base * 100`` in percent (section 3.8)."""
    if base is None or other is None or base == 0:
        return None
    return (other - base) / base * 100.0


def _l2_miss(run: RunMetrics, scope: str, name: str) -> float | None:
    """A side's L2 miss count: the profile metric (``L2_miss_count_corrected``) or the raw event count.

    Both a recording's frames and a fapp directory's :func:`sectormon.fapp.run_metrics` carry the
    profile's corrected metric, so the errata correction is the profile's formula on both sides.
    """
    value = _num(run.metrics.get(scope, {}).get(name))
    if value is not None or name == L2_MISS_CORRECTED:
        return value
    return _num(run.counts.get(scope, {}).get(name))


def l2_effectiveness(base: RunMetrics, other: RunMetrics, scope: str) -> tuple[float | None, str]:
    """L2 miss count other / base: the errata-corrected metric when both sides have it, else raw counts."""
    for name in (L2_MISS_CORRECTED, L2_MISS_RAW):
        b = _l2_miss(base, scope, name)
        o = _l2_miss(other, scope, name)
        if b is not None and o is not None:
            return (o / b if b != 0 else None), name
    return None, ""


_SCOPE_ORDER = {"total": 0, "cmg": 1, "core": 2, "thread": 3}


def scope_sort_key(scope: str) -> tuple[int, int, str]:
    kind, _, ident = scope.partition(":")
    rank = _SCOPE_ORDER.get(kind, 4)
    return (rank, int(ident) if ident.lstrip("-").isdigit() else 1 << 30, scope)


def _ordered_union(*names: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for group in names:
        for name in group:
            seen.setdefault(name, None)
    return list(seen)


def scope_matches(scope: str, patterns: Iterable[str]) -> bool:
    """``total``, ``cmg`` (every CMG), ``cmg:1``, ``core``, ``thread:3``...: exact or by kind."""
    pats = list(patterns)
    if not pats:
        return True
    kind = scope.partition(":")[0]
    return any(p in (scope, kind) for p in pats)


def compare_runs(
    base: RunMetrics,
    other: RunMetrics,
    *,
    info: Mapping[str, MetricInfo] | None = None,
    scopes: Iterable[str] = (),
    warnings: Iterable[str] = (),
) -> Comparison:
    """Every metric present on either side, for every scope present on either side."""
    info = info or {}
    patterns = list(scopes)
    names = sorted(set(base.metrics) | set(other.metrics), key=scope_sort_key)
    unknown = [p for p in patterns if not any(scope_matches(scope, [p]) for scope in names)]
    if unknown:
        kinds = sorted({scope.partition(":")[0] for scope in names})
        raise UsageError(
            f"--scope {', '.join(unknown)}: no such scope in these runs; "
            f"choose from {', '.join(kinds)} or one of {', '.join(names[:8])}"
            + (" ..." if len(names) > 8 else "")
        )
    out: list[ScopeComparison] = []
    for scope in names:
        if not scope_matches(scope, patterns):
            continue
        bm = base.metrics.get(scope, {})
        om = other.metrics.get(scope, {})
        bc = base.coverage.get(scope, {})
        oc = other.coverage.get(scope, {})
        rows = []
        for metric in _ordered_union(bm, om):
            meta = info.get(metric, MetricInfo())
            b, o = _num(bm.get(metric)), _num(om.get(metric))
            delta, improvement, relative = metric_delta(b, o, meta.better)
            rows.append(
                Row(
                    metric=metric,
                    base=b,
                    other=o,
                    delta=delta,
                    improvement=improvement,
                    relative=relative,
                    better=meta.better,
                    unit=meta.unit,
                    coverage_base=_num(bc.get(metric)) if scope in base.metrics else None,
                    coverage_other=_num(oc.get(metric)) if scope in other.metrics else None,
                )
            )
        l2, l2_source = l2_effectiveness(base, other, scope)
        out.append(
            ScopeComparison(
                scope=scope,
                rows=tuple(rows),
                ipc_improvement=ipc_improvement(_num(bm.get(IPC_METRIC)), _num(om.get(IPC_METRIC))),
                l2_effectiveness=l2,
                l2_source=l2_source,
            )
        )
    return Comparison(base=base, other=other, scopes=tuple(out), warnings=tuple(warnings))


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


# --------------------------------------------------------------------------------- loading sides


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
    return RunMetrics(
        label=label,
        kind="recording",
        metrics={k: dict(v.metrics) for k, v in scopes.items()},
        coverage={k: dict(v.coverage) for k, v in scopes.items()},
        counts={k: dict(v.counts) for k, v in scopes.items()},
        info=dict(info or {}),
    )


def metric_info_from_profile(profile: Any) -> dict[str, MetricInfo]:
    return {m.name: MetricInfo(better=m.better, unit=m.unit) for m in profile.metrics}


def builtin_metric_info(name: str = "a64fx") -> dict[str, MetricInfo]:
    """Metric conventions of a profile shipped with sectormon (for fapp sides, which have none)."""
    from sectormon.profiles.loader import load_profile

    return metric_info_from_profile(load_profile(name))


@dataclass(frozen=True)
class Side:
    """One side of a comparison, loaded."""

    run: RunMetrics
    info: Mapping[str, MetricInfo]
    warnings: tuple[str, ...] = ()


def load_recording_side(path: str, *, skip_bad: bool = False) -> Side:
    from sectormon.profiles.loader import profile_from_dict
    from sectormon.session.replay import final_frame

    header, frame, stream = final_frame(path, skip_bad=skip_bad)
    source = header.get("source")
    facts = {
        "path": path,
        "source": source.get("kind") if isinstance(source, dict) else None,
        "target": header.get("target"),
        "sector_config": header.get("sector_config"),
        "created": header.get("created"),
        "seconds": frame.run.seconds,
        "skipped_lines": stream.skipped,
    }
    run = run_metrics_from_frame(frame, label=Path(path).name, info=facts)
    profile = profile_from_dict(header["profile"], source=path)
    warnings = list(stream.warnings)
    if stream.skipped:
        warnings.append(f"{path}: skipped {stream.skipped} malformed line(s) (--skip-bad)")
    return Side(run=run, info=metric_info_from_profile(profile), warnings=tuple(warnings))


def fapp_metric_info() -> dict[str, MetricInfo]:
    """Conventions for a fapp side: the a64fx profile's for the section-3 metrics, and Fujitsu's
    report metrics' own (:data:`sectormon.fapp.report.BETTER` and ``UNITS``)."""
    from sectormon.fapp.report import BETTER, UNITS

    info = builtin_metric_info("a64fx")
    info.update((name, MetricInfo(better=better, unit=UNITS[name])) for name, better in BETTER.items())
    return info


def load_fapp_side(path: str, region: str | None = None) -> Side:
    from sectormon.fapp import run_metrics

    run = run_metrics(path, region)
    return Side(run=run, info=fapp_metric_info())


def load_job_side(path: str, *, skip_bad: bool = False) -> Side:
    """A job file from ``sectormon merge``, or ``FILE,FILE...``: node recordings taken as one job."""
    from sectormon.job.runs import job_side_runs

    paths = [p for p in path.split(",") if p]
    run, profile, warnings = job_side_runs(
        paths, label=Path(paths[0]).name if len(paths) == 1 else path, skip_bad=skip_bad
    )
    return Side(run=run, info=metric_info_from_profile(profile), warnings=tuple(warnings))


def load_side(path: str, *, skip_bad: bool = False, region: str | None = None) -> Side:
    """A recording file or a fapp directory (``region``: its measured region, when it has several);
    a job file or ``FILE,FILE...`` is a job (:func:`load_job_side`)."""
    from sectormon.job.jobfile import is_job_file

    p = Path(path)
    if ("," in path and not p.exists()) or (p.is_file() and is_job_file(path)):
        return load_job_side(path, skip_bad=skip_bad)
    if p.is_dir():
        return load_fapp_side(path, region)
    if p.is_file():
        return load_recording_side(path, skip_bad=skip_bad)
    raise UsageError(
        f"{path}: no such file or directory (give a sectormon recording or a fapp cpupa directory)"
    )


def compare_paths(
    base: str,
    other: str,
    *,
    skip_bad: bool = False,
    scopes: Iterable[str] = (),
    region: str | None = None,
) -> Comparison:
    """``region`` picks the measured region of fapp sides whose CSVs hold several: ``NAME`` for
    both, ``BASE,OTHER`` for each its own (two regions of one run compare too)."""
    base_region = other_region = region
    if region is not None:
        if not (Path(base).is_dir() or Path(other).is_dir()):
            raise UsageError(
                "--region picks a fapp directory's measured region; neither side is a fapp directory"
            )
        names = region.split(",")
        if len(names) > 2 or not all(n.strip() for n in names):
            raise UsageError(f"--region {region!r}: give NAME (both sides) or BASE_NAME,OTHER_NAME")
        base_region, other_region = names[0].strip(), names[-1].strip()
    b = load_side(base, skip_bad=skip_bad, region=base_region)
    o = load_side(other, skip_bad=skip_bad, region=other_region)
    info = {**o.info, **b.info}
    base_run, other_run = b.run, o.run
    paired: list[str] = []
    if base_run.kind == "job" and other_run.kind == "job":
        from sectormon.job.runs import pair_nodes

        base_run, other_run, paired = pair_nodes(base_run, other_run)
    return compare_runs(
        base_run, other_run, info=info, scopes=scopes, warnings=(*b.warnings, *o.warnings, *paired)
    )


# ------------------------------------------------------------------------------------- rendering


def fmt_value(v: float | None) -> str:
    if v is None:
        return "n/a"
    if v == 0:
        return "0"
    if 1e-4 <= abs(v) < 1e7:
        return f"{v:.6f}".rstrip("0").rstrip(".") if abs(v) >= 1e3 else f"{v:.6f}"
    return f"{v:.6e}"


def fmt_signed(v: float | None) -> str:
    text = fmt_value(v)
    return "+" + text if v is not None and v >= 0 else text


def fmt_pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v * 100:+.2f}%"


def fmt_cov(v: float | None) -> str:
    return "n/a" if v is None else f"{v * 100:.0f}%"


COLUMNS = ("Metric", "Unit", "Baseline", "Sector", "Delta", "Improvement", "Rel", "Cov B", "Cov O")


def _table_rows(sc: ScopeComparison) -> list[tuple[str, ...]]:
    return [
        (
            r.metric,
            r.unit,
            fmt_value(r.base),
            fmt_value(r.other),
            fmt_signed(r.delta),
            fmt_signed(r.improvement),
            fmt_pct(r.relative),
            fmt_cov(r.coverage_base),
            fmt_cov(r.coverage_other),
        )
        for r in sc.rows
    ]


def _summary(sc: ScopeComparison) -> str:
    ipc = "n/a" if sc.ipc_improvement is None else f"{sc.ipc_improvement:+.2f} %"
    l2 = "n/a" if sc.l2_effectiveness is None else f"{sc.l2_effectiveness:.4f}"
    source = f" ({sc.l2_source} other/base)" if sc.l2_source else ""
    return f"IPC_improvement: {ipc}   L2_effectiveness: {l2}{source}"


def render_text(cmp: Comparison) -> str:
    """Aligned tables per scope, like the PMU document's comparison script (section 6.6)."""
    out: list[str] = [
        f"Baseline: {cmp.base.label} ({cmp.base.kind})",
        f"Sector:   {cmp.other.label} ({cmp.other.kind})",
        "Improvement > 0: the sector run is better. Rel = improvement / |baseline| (the plain change where a "
        "metric has no better direction). n/a = not computable.",
    ]
    name_width = max([32, *(len(r.metric) for sc in cmp.scopes for r in sc.rows)])
    unit_width = max([4, *(len(r.unit) for sc in cmp.scopes for r in sc.rows)])
    widths = [name_width, unit_width, 14, 14, 14, 14, 9, 6, 6]
    rule = sum(widths) + len(widths) - 1
    for sc in cmp.scopes:
        out += ["", "=" * rule, f"  {sc.scope}", "=" * rule]
        out.append(_line(COLUMNS, widths))
        out.append("-" * rule)
        out += [_line(cells, widths) for cells in _table_rows(sc)]
        out.append(_summary(sc))
    for warning in cmp.warnings:
        out.append(f"warning: {warning}")
    return "\n".join(out) + "\n"


def _line(cells: Iterable[str], widths: list[int]) -> str:
    parts = []
    for i, (cell, width) in enumerate(zip(cells, widths, strict=False)):
        parts.append(cell.ljust(width) if i < 2 else cell.rjust(width))  # name and unit to the left
    return " ".join(parts).rstrip()


def render_markdown(cmp: Comparison) -> str:
    base = f"{_md(cmp.base.label)} ({cmp.base.kind})"
    other = f"{_md(cmp.other.label)} ({cmp.other.kind})"
    out = [f"**Baseline:** {base} — **Sector:** {other}"]
    for sc in cmp.scopes:
        out += ["", f"### {sc.scope}", ""]
        out.append("| " + " | ".join(COLUMNS) + " |")
        out.append("|" + "---|" * 2 + "---:|" * (len(COLUMNS) - 2))
        out += ["| " + " | ".join(_md(c) for c in cells) + " |" for cells in _table_rows(sc)]
        out += ["", _summary(sc)]
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return re.sub(r"([|\\`*_])", r"\\\1", text)


CSV_FIELDS = (
    "scope",
    "metric",
    "unit",
    "better",
    "baseline",
    "sector",
    "delta",
    "improvement",
    "relative",
    "coverage_baseline",
    "coverage_sector",
    "value",
)


def render_csv(cmp: Comparison) -> str:
    """One row per scope and metric; ``IPC_improvement`` and ``L2_effectiveness`` rows fill ``value``."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_FIELDS)

    def cell(v: float | None) -> str:
        return "" if v is None else repr(v)

    for sc in cmp.scopes:
        for r in sc.rows:
            writer.writerow(
                (
                    sc.scope,
                    r.metric,
                    r.unit,
                    r.better,
                    cell(r.base),
                    cell(r.other),
                    cell(r.delta),
                    cell(r.improvement),
                    cell(r.relative),
                    cell(r.coverage_base),
                    cell(r.coverage_other),
                    "",
                )
            )
        writer.writerow((sc.scope, "IPC_improvement", "%", "higher", *[""] * 7, cell(sc.ipc_improvement)))
        writer.writerow(
            (sc.scope, "L2_effectiveness", "ratio", "lower", *[""] * 7, cell(sc.l2_effectiveness))
        )
    return buf.getvalue()
