"""A resolved profile in a recording's header: written as JSON-able data, read back and checked.

A recording carries its profile whole (events, groups, formulas, factors as resolved when it was
made), so a replay re-runs that run's formulas, not today's files. Reading one back applies the
same rules as loading a file (:mod:`.validate`), but a recording's faults are reported on one line,
as every error about a recording is: the first fault and how many more. Optional parts (sampling,
software rotation, latency buckets) are written only when the profile has them, so recordings made
without them stay byte-identical.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sectormon.data.samples import LatencyBucket
from sectormon.profiles.model import EventDef, GroupDef, MetricDef, Profile, SamplingDef
from sectormon.profiles.problems import KeyPath, Problem, ProfileError
from sectormon.profiles.validate import check_profile


def profile_to_dict(profile: Profile) -> dict[str, Any]:
    """JSON-able form of a resolved profile (stored in recording headers)."""
    return {
        "name": profile.name,
        "description": profile.description,
        "counters": profile.counters,
        "variant": profile.variant,
        "source": profile.source,
        "constants": dict(profile.constants),
        "events": {
            name: {
                "spec": e.spec,
                "code": e.code,
                "scope": e.scope,
                "unit": e.unit,
                "nj_per_count": e.nj_per_count,
                "description": e.description,
            }
            for name, e in profile.events.items()
        },
        "groups": [
            {"name": g.name, "events": list(g.events), "description": g.description} for g in profile.groups
        ],
        "metrics": [
            {
                "name": m.name,
                "formula": m.formula,
                "unit": m.unit,
                "description": m.description,
                "better": m.better,
                "scope": m.scope,
                "group_hint": m.group_hint,
            }
            for m in profile.metrics
        ],
        **_sampling_to_dict(profile),
    }


def _sampling_to_dict(profile: Profile) -> dict[str, Any]:
    """The sampling defaults, only when the profile has them (older recordings stay byte-identical)."""
    out: dict[str, Any] = {}
    if profile.sampling is not None:
        out["sampling"] = {"event": profile.sampling.event, "period": profile.sampling.period}
    if profile.rotate_software:
        out["rotate_software"] = True
    if profile.latency_buckets:
        out["latency_buckets"] = [
            {"name": b.name, "max_cycles": b.max_cycles, "description": b.description}
            for b in profile.latency_buckets
        ]
    return out


def profile_from_dict(data: Mapping[str, Any], source: str = "<recording>") -> Profile:
    """Rebuild a profile stored by :func:`profile_to_dict`; ``source`` names the file in errors."""

    def fail(problem: str) -> ProfileError:
        return ProfileError(
            source,
            [Problem(None, f"bad profile in header: {problem}", "re-record with this version of sectormon")],
        )

    try:
        events = {
            str(name): EventDef(
                name=str(name),
                spec=str(e["spec"]),
                description=str(e.get("description", "")),
                code=None if e.get("code") is None else _strict_int(e["code"]),
                scope=str(e.get("scope", "pe")),
                unit=str(e.get("unit", "count")),
                nj_per_count=None if e.get("nj_per_count") is None else float(e["nj_per_count"]),
            )
            for name, e in dict(data["events"]).items()
        }
        profile = Profile(
            name=str(data["name"]),
            description=str(data.get("description", "")),
            counters=_strict_int(data["counters"]),
            events=events,
            groups=tuple(
                GroupDef(str(g["name"]), tuple(str(e) for e in g["events"]), str(g.get("description", "")))
                for g in data["groups"]
            ),
            metrics=tuple(
                MetricDef(
                    name=str(m["name"]),
                    formula=str(m["formula"]),
                    unit=str(m.get("unit", "")),
                    description=str(m.get("description", "")),
                    better=str(m.get("better", "none")),
                    scope=str(m.get("scope", "any")),
                    group_hint=str(m.get("group_hint", "")),
                )
                for m in data.get("metrics", ())
            ),
            constants={str(k): float(v) for k, v in dict(data.get("constants", {})).items()},
            source=str(data.get("source", source)),
            variant=str(data.get("variant", "")),
            sampling=(
                None
                if data.get("sampling") is None
                else SamplingDef(str(data["sampling"]["event"]), _strict_int(data["sampling"]["period"]))
            ),
            latency_buckets=tuple(
                LatencyBucket(
                    str(b["name"]),
                    None if b.get("max_cycles") is None else float(b["max_cycles"]),
                    str(b.get("description", "")),
                )
                for b in data.get("latency_buckets", ())
            ),
            rotate_software=data.get("rotate_software") is True,
        )
    except KeyError as exc:
        raise fail(f"missing field {exc}") from exc
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:  # Overflow: float(10**400)
        raise fail(str(exc)) from exc
    problems, _ = check_profile(profile, _no_lines)
    if problems:
        # One line, as every error about a recording: the first fault, and how many more.
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise fail(problems[0].problem + more)
    return profile


def _strict_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _no_lines(path: KeyPath) -> int | None:
    """A recorded profile has no lines to point at."""
    return None
