"""From a profile's YAML text to a validated :class:`~.model.Profile` (:func:`parse_profile`).

Building turns the composed document into model objects and reports every value of the wrong type
at its line, with a default standing in so that building can go on and the rules in
:mod:`.validate` can still judge the rest: one run names every fault. The part's variant (its nJ
factors) is applied here, and each metric without a ``group:`` gets the first group that counts
all its inputs together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sectormon.data.samples import LatencyBucket
from sectormon.profiles.compose import ComposedYaml
from sectormon.profiles.model import EventDef, GroupDef, MetricDef, Profile, SamplingDef
from sectormon.profiles.problems import KeyPath, Problem, ProfileError, suggest
from sectormon.profiles.validate import check_profile

TOP_KEYS = (
    "name",
    "description",
    "counters",
    "match",
    "variants",
    "constants",
    "events",
    "groups",
    "metrics",
    "sampling",
    "latency_buckets",
    "rotate_software",
)
EVENT_KEYS = ("code", "spec", "scope", "unit", "nj_per_count", "desc")
GROUP_KEYS = ("events", "desc")
METRIC_KEYS = ("formula", "unit", "better", "scope", "desc", "group")
MATCH_KEYS = ("a64fx", "model")
SAMPLING_KEYS = ("event", "period")
BUCKET_KEYS = ("name", "max_cycles", "desc")


class _Builder:
    """Turns the composed YAML into model objects, recording type problems with their lines."""

    def __init__(self, doc: ComposedYaml) -> None:
        self.doc = doc
        self.problems: list[Problem] = []
        self.counters_known = False

    def bad(self, path: KeyPath, problem: str, fix: str = "") -> None:
        self.problems.append(Problem(self.doc.line_of(path), problem, fix))

    def mapping(
        self, value: Any, path: KeyPath, what: str, keys: Sequence[str] | None = None
    ) -> dict[Any, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.bad(path, f"{what} must be a mapping", "write key: value lines under it")
            return {}
        if keys is not None:
            for key in value:
                if key not in keys:
                    hint = suggest(str(key), keys)
                    self.bad(
                        (*path, key), f"{what}: unknown key {key!r}", hint or "known keys: " + ", ".join(keys)
                    )
        return value

    def text(self, value: Any, path: KeyPath, what: str, default: str = "") -> str:
        if value is None:
            return default
        if not isinstance(value, str):
            self.bad(path, f"{what} must be text, not {value!r}", "quote it")
            return default
        return value

    def number(self, value: Any, path: KeyPath, what: str) -> float | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.bad(path, f"{what} must be a number, not {value!r}", "e.g. 8 or 0.5")
            return None
        return float(value)

    def build(self, source: str, variant: str) -> tuple[Profile, dict[str, Any]]:
        """The profile (``variant``'s nJ factors applied when it lists that variant) and its
        ``match``; faults go to ``problems``."""
        top = self.mapping(self.doc.data, (), "profile", TOP_KEYS)
        for key in ("name", "counters", "events", "groups"):
            if isinstance(self.doc.data, dict) and key not in top:
                self.bad((), f"missing required key {key!r}", f"add {key}: at the top level")
        name = self.text(top.get("name"), ("name",), "name")
        counters = self.counters(top)
        match = self.mapping(top.get("match"), ("match",), "match", MATCH_KEYS)
        events = self.events(self.mapping(top.get("events"), ("events",), "events"))
        factors, chosen = self.variants(top.get("variants"), events, variant)
        events = {
            n: replace(e, nj_per_count=factors.get(n)) if e.nj_per_count is not None else e
            for n, e in events.items()
        }
        constants = self.constants(top.get("constants"), factors)
        groups = self.groups(self.mapping(top.get("groups"), ("groups",), "groups"))
        metrics = self.metrics(self.mapping(top.get("metrics"), ("metrics",), "metrics"))
        sampling = self.sampling(top.get("sampling"))
        buckets = self.latency_buckets(top.get("latency_buckets"))
        profile = Profile(
            name=name,
            description=self.text(top.get("description"), ("description",), "description"),
            counters=counters,
            events=events,
            groups=groups,
            metrics=metrics,
            constants=constants,
            source=source,
            variant=chosen,
            sampling=sampling,
            latency_buckets=buckets,
            rotate_software=self.flag(top.get("rotate_software"), ("rotate_software",), "rotate_software"),
        )
        return profile, match

    def counters(self, top: Mapping[Any, Any]) -> int:
        """The PMU's counter count (0 when malformed; ``counters_known`` says whether to judge
        group sizes against it)."""
        counters_raw = top.get("counters", 0)
        if isinstance(counters_raw, bool) or not isinstance(counters_raw, int):
            self.bad(("counters",), f"counters must be an integer, not {counters_raw!r}", "e.g. counters: 8")
            return 0
        self.counters_known = "counters" in top
        return counters_raw

    def variants(
        self, raw: Any, events: Mapping[str, EventDef], variant: str
    ) -> tuple[dict[str, float], str]:
        """Every event's nJ factor with ``variant``'s overrides, and ``variant`` if the profile
        lists it (else "": the defaults apply). Every variant is checked, not only the chosen one."""
        factors = {n: e.nj_per_count for n, e in events.items() if e.nj_per_count is not None}
        chosen = ""
        for vname, overrides in self.mapping(raw, ("variants",), "variants").items():
            vpath: KeyPath = ("variants", vname)
            for event_name, value in self.mapping(overrides, vpath, f"variant {vname}").items():
                number = self.number(value, (*vpath, event_name), f"variant {vname}: {event_name}")
                if event_name not in events:
                    self.bad(
                        (*vpath, event_name),
                        f"variant {vname}: unknown event {event_name!r}",
                        suggest(str(event_name), events) or "name an event with nj_per_count",
                    )
                elif event_name not in factors:
                    self.bad(
                        (*vpath, event_name),
                        f"variant {vname}: event {event_name} has no nj_per_count",
                        "variants only override nj_per_count",
                    )
                elif number is not None and str(vname) == variant:
                    factors[event_name] = number
            if str(vname) == variant:
                chosen = variant
        return factors, chosen

    def constants(self, raw: Any, factors: Mapping[str, float]) -> dict[str, float]:
        """The profile's constants plus ``NJ_<EVENT>`` for every event's nJ factor."""
        constants: dict[str, float] = {}
        for cname, value in self.mapping(raw, ("constants",), "constants").items():
            number = self.number(value, ("constants", cname), f"constant {cname}")
            if number is not None:
                constants[str(cname)] = number
        for event_name, factor in factors.items():
            key = f"NJ_{event_name}"
            if key in constants:
                self.bad(
                    ("constants", key),
                    f"constant {key} clashes with the nJ factor derived from {event_name}",
                    "remove the constant: set nj_per_count on the event instead",
                )
            else:
                constants[key] = factor
        return constants

    def flag(self, raw: Any, path: KeyPath, what: str) -> bool:
        """A yes/no setting (absent: no)."""
        if raw is None:
            return False
        if not isinstance(raw, bool):
            self.bad(path, f"{what} must be true or false, not {raw!r}", f"write {what}: true")
            return False
        return raw

    def sampling(self, raw: Any) -> SamplingDef | None:
        if raw is None:
            return None
        fields = self.mapping(raw, ("sampling",), "sampling", SAMPLING_KEYS)
        event = self.text(fields.get("event"), ("sampling", "event"), "sampling: event")
        period = fields.get("period")
        if isinstance(period, bool) or not isinstance(period, int):
            self.bad(
                ("sampling", "period") if "period" in fields else ("sampling",),
                f"sampling: period must be an integer, not {period!r}",
                "e.g. period: 10007",
            )
            period = 1
        if not event:
            self.bad(("sampling",), "sampling: no event", "e.g. event: L1D_CACHE_REFILL")
        return SamplingDef(event, period)

    def latency_buckets(self, raw: Any) -> tuple[LatencyBucket, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            self.bad(
                ("latency_buckets",), "latency_buckets must be a list", "write - {name: ..., max_cycles: ...}"
            )
            return ()
        out = []
        for i, item in enumerate(raw):
            path: KeyPath = ("latency_buckets", i)
            fields = self.mapping(item, path, "latency bucket", BUCKET_KEYS)
            limit = fields.get("max_cycles")
            max_cycles = None if limit is None else self.number(limit, (*path, "max_cycles"), "max_cycles")
            out.append(
                LatencyBucket(
                    self.text(fields.get("name"), (*path, "name"), "latency bucket name"),
                    max_cycles,
                    self.text(fields.get("desc"), (*path, "desc"), "latency bucket desc"),
                )
            )
        return tuple(out)

    def events(self, raw: Mapping[Any, Any]) -> dict[str, EventDef]:
        out: dict[str, EventDef] = {}
        for name, body in raw.items():
            path: KeyPath = ("events", name)
            fields = self.mapping(body, path, f"event {name}", EVENT_KEYS)
            if body is None:
                self.bad(path, f"event {name} has no fields", "add code: 0x... or spec: name")
            code = fields.get("code")
            if code is not None and (isinstance(code, bool) or not isinstance(code, int) or code < 0):
                self.bad(
                    (*path, "code"),
                    f"event {name}: code must be a non-negative integer, not {code!r}",
                    "e.g. code: 0x0011",
                )
                code = None
            spec = self.text(fields.get("spec"), (*path, "spec"), f"event {name}: spec")
            if not spec and code is not None:
                spec = f"r{code:x}"
            nj = fields.get("nj_per_count")
            nj_value = (
                self.number(nj, (*path, "nj_per_count"), f"event {name}: nj_per_count")
                if nj is not None
                else None
            )
            out[str(name)] = EventDef(
                name=str(name),
                spec=spec,
                description=self.text(fields.get("desc"), (*path, "desc"), f"event {name}: desc"),
                code=code,
                scope=self.text(fields.get("scope"), (*path, "scope"), f"event {name}: scope", "pe"),
                unit=self.text(fields.get("unit"), (*path, "unit"), f"event {name}: unit", "count"),
                nj_per_count=nj_value,
            )
        return out

    def groups(self, raw: Mapping[Any, Any]) -> tuple[GroupDef, ...]:
        out = []
        for name, body in raw.items():
            path: KeyPath = ("groups", name)
            fields = self.mapping(body, path, f"group {name}", GROUP_KEYS)
            members = fields.get("events")
            if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
                self.bad(
                    (*path, "events") if "events" in fields else path,
                    f"group {name}: events must be a list of event names",
                    "e.g. events: [CPU_CYCLES, ...]",
                )
                members = [m for m in members if isinstance(m, str)] if isinstance(members, list) else []
            out.append(
                GroupDef(
                    str(name),
                    tuple(members),
                    self.text(fields.get("desc"), (*path, "desc"), f"group {name}: desc"),
                )
            )
        return tuple(out)

    def metrics(self, raw: Mapping[Any, Any]) -> tuple[MetricDef, ...]:
        out = []
        for name, body in raw.items():
            path: KeyPath = ("metrics", name)
            fields = self.mapping(body, path, f"metric {name}", METRIC_KEYS)
            formula = fields.get("formula")
            if isinstance(formula, (int, float)) and not isinstance(formula, bool):
                formula = str(formula)
            if not isinstance(formula, str):
                self.bad(
                    (*path, "formula") if "formula" in fields else path,
                    f"metric {name}: formula must be text",
                    "e.g. formula: INST_RETIRED / CPU_CYCLES",
                )
                formula = "0"
            out.append(
                MetricDef(
                    name=str(name),
                    formula=formula,
                    unit=self.text(fields.get("unit"), (*path, "unit"), f"metric {name}: unit"),
                    description=self.text(fields.get("desc"), (*path, "desc"), f"metric {name}: desc"),
                    better=self.text(
                        fields.get("better"), (*path, "better"), f"metric {name}: better", "none"
                    ),
                    scope=self.text(fields.get("scope"), (*path, "scope"), f"metric {name}: scope", "any"),
                    group_hint=self.text(fields.get("group"), (*path, "group"), f"metric {name}: group"),
                )
            )
        return tuple(out)


def with_group_hints(profile: Profile, metric_inputs: Mapping[str, frozenset[str]]) -> Profile:
    """Each metric without a ``group:`` gets the group that counts its inputs together, if any."""
    metrics = tuple(
        m
        if m.group_hint
        else replace(m, group_hint=_group_hint(profile, metric_inputs.get(m.name, frozenset())))
        for m in profile.metrics
    )
    return replace(profile, metrics=metrics)


def _group_hint(profile: Profile, inputs: frozenset[str]) -> str:
    """The first group that counts every event a metric needs together ("" if none does)."""
    if not inputs:
        return ""
    for group in profile.groups:
        if inputs <= set(group.events):
            return group.name
    return ""


def parse_profile(
    text: str, path: str, *, variant: str = "", source: str | None = None
) -> tuple[Profile, dict[str, Any]]:
    """Parse and validate profile YAML ``text`` (``path`` is used in messages); returns (profile, match)."""
    doc = ComposedYaml(text)
    builder = _Builder(doc)
    problems = list(doc.problems)
    if doc.data is None:
        empty = Problem(1, "empty profile", "see docs/profiles.md for the format")
        raise ProfileError(path, problems or [empty])
    profile, match = builder.build(source if source is not None else path, variant)
    problems += builder.problems
    checked, inputs = check_profile(profile, doc.line_of, counters_known=builder.counters_known)
    problems += checked
    if problems:
        raise ProfileError(path, problems)
    return with_group_hints(profile, inputs), match
