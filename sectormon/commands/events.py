"""``sectormon events``: a profile's event catalog (code, name, scope, unit, groups, nJ factor).

With ``--probe`` each event is also test-counted on this host, so users see at once which of the
catalog's events they can rely on here.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from sectormon.commands import check
from sectormon.commands.options.output import write_stdout
from sectormon.host.topology import load_topology
from sectormon.io import strict_json
from sectormon.metrics.formulas import MetricSet
from sectormon.perf.probe import ProbeResult
from sectormon.profiles.model import Profile
from sectormon.profiles.resolve import resolve_profile

SCHEMA = "sectormon/events/1"


def configure(parser: argparse.ArgumentParser) -> None:
    check.add_host_options(parser)
    parser.add_argument("--probe", action="store_true", help="also test each event on this host")


def groups_of(profile: Profile) -> dict[str, list[str]]:
    """Event name -> the groups that count it, in group order."""
    out: dict[str, list[str]] = {name: [] for name in profile.events}
    for group in profile.groups:
        for event in group.events:
            out.setdefault(event, []).append(group.name)
    return out


def metric_states(profile: Profile, probe: Mapping[str, ProbeResult]) -> dict[str, dict[str, Any]]:
    """Per metric: ``ok`` when every input event counted in the probe, else ``n/a`` with the inputs
    that did not (``zero`` ones included: a never-counting input would make a made-up value)."""
    states: dict[str, dict[str, Any]] = {}
    for name, inputs in MetricSet(profile).inputs.items():
        missing = [e for e in inputs if e not in probe or probe[e].state != "counts"]
        states[name] = {"state": "n/a" if missing else "ok", "not_counting": missing}
    return states


def catalog(
    profile: Profile, probe: Mapping[str, ProbeResult] | None, probe_error: str = ""
) -> dict[str, Any]:
    """The JSON form of the catalog (and the probe, when one ran)."""
    member_of = groups_of(profile)
    here = metric_states(profile, probe) if probe is not None else {}
    events = []
    for name, e in profile.events.items():
        row: dict[str, Any] = {
            "name": name,
            "code": e.code,
            "code_hex": f"0x{e.code:04x}" if e.code is not None else None,
            "spec": e.spec,
            "scope": e.scope,
            "unit": e.unit,
            "groups": member_of[name],
            "nj_per_count": e.nj_per_count,
            "description": e.description,
        }
        if probe is not None:
            result = probe.get(name)
            row["probe"] = (
                {"state": result.state, "value": result.value, "reason": result.reason}
                if result is not None
                else None
            )
        events.append(row)
    record: dict[str, Any] = {
        "schema": SCHEMA,
        "profile": {
            "name": profile.name,
            "description": profile.description,
            "source": profile.source,
            "variant": profile.variant,
            "counters": profile.counters,
        },
        "events": events,
        "groups": [
            {"name": g.name, "events": list(g.events), "description": g.description} for g in profile.groups
        ],
        "metrics": [
            {"name": m.name, "formula": m.formula, "unit": m.unit, "better": m.better, "scope": m.scope}
            | ({"probe": here[m.name]} if m.name in here else {})
            for m in profile.metrics
        ],
    }
    if probe is not None:
        record["probe_error"] = probe_error
    return record


def _nj(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:g}"


def render_text(record: Mapping[str, Any], probed: bool) -> str:
    prof = record["profile"]
    variant = f", variant {prof['variant']}" if prof["variant"] else ""
    out = [f"Profile {prof['name']} ({prof['source']}{variant}): {prof['description']}", ""]
    headers = ["CODE/SPEC", "NAME", "SCOPE", "UNIT", "GROUPS", "NJ", "DESCRIPTION"]
    if probed:
        headers.insert(6, "HERE")
    rows = []
    for e in record["events"]:
        row = [
            e["code_hex"] or e["spec"],
            e["name"],
            e["scope"],
            e["unit"],
            ",".join(e["groups"]) or "-",
            _nj(e["nj_per_count"]),
            e["description"],
        ]
        if probed:
            row.insert(6, e["probe"]["state"] if e.get("probe") else "-")
        rows.append(row)
    out += check.table(rows, headers, right=(5,), indent=0)
    out.append("")
    out.append(f"Groups (at most {prof['counters']} events counted together):")
    out += check.table([(g["name"], " ".join(g["events"])) for g in record["groups"]], ("GROUP", "EVENTS"))
    if probed and record.get("probe_error"):
        out += ["", f"Probe not run: {record['probe_error']}"]
    elif probed:
        out += [
            "",
            "HERE: counts = counted in a short probe; zero = opens but never counted (suspicious, not a "
            "measured zero); unsupported = cannot be opened here (see sectormon check for the reason)",
        ]
        unavailable = [m["name"] for m in record["metrics"] if m.get("probe", {}).get("state") == "n/a"]
        if unavailable:
            out.append(f"Metrics n/a here (an input does not count): {', '.join(unavailable)}")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    with check.host_roots(args):
        topology = load_topology()
    profile, _ = resolve_profile(args.profile, topology)
    probe: dict[str, ProbeResult] | None = None
    probe_error = ""
    if args.probe:
        probe, probe_error = check.run_probe(tuple(profile.events.values()))
    record = catalog(profile, probe, probe_error)
    if args.json:
        write_stdout(strict_json.dumps(record) + "\n")
    else:
        write_stdout(render_text(record, probe is not None) + "\n")
    return 0
