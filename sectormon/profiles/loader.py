"""Load and validate profiles (YAML event catalogs + groups + metrics) into :mod:`.model` types.

Every problem is collected with its file and line before anything starts, so a bad profile names
all its faults at once. The YAML is composed (not just loaded) to keep node line numbers and to
reject duplicate keys, which ``yaml.safe_load`` would silently merge. A recording stores the
profile as :func:`profile_to_dict` and a replay rebuilds it with :func:`profile_from_dict`.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

import yaml

from sectormon.data.samples import LatencyBucket
from sectormon.errors import DataError, UsageError
from sectormon.profiles import safe_yaml
from sectormon.profiles.expr import ExprError
from sectormon.profiles.expr import parse as parse_formula
from sectormon.profiles.model import (
    BETTER,
    METRIC_SCOPES,
    SCOPES,
    EventDef,
    GroupDef,
    MetricDef,
    Profile,
    SamplingDef,
)
from sectormon.profiles.safe_yaml import BoundedSafeConstructor, YamlInputError, YamlLimitError

if TYPE_CHECKING:
    from sectormon.host.topology import Topology

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FUNCTIONS = ("min", "max")
RESERVED = ("SECONDS", *FUNCTIONS)
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

Path_ = tuple[Any, ...]
LineOf = Callable[[Path_], "int | None"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One fault in a profile: where, what, and how to fix it."""

    line: int | None
    problem: str
    fix: str = ""

    def render(self, path: str) -> str:
        where = f"{path}:{self.line}" if self.line is not None else path
        return f"{where}: {self.problem}" + (f" ({self.fix})" if self.fix else "")


class ProfileError(DataError):
    """A profile that cannot be used; the message has one ``FILE:LINE: problem (fix)`` line per fault."""

    def __init__(self, path: str, problems: Sequence[Problem]) -> None:
        ordered = sorted(problems, key=lambda p: (p.line is None, p.line or 0))
        first = ordered[0] if ordered else Problem(None, "invalid profile")
        super().__init__(path, first.line, first.problem, first.fix)
        self.problems = tuple(ordered) or (first,)
        text = "\n".join(p.render(path) for p in self.problems)
        self.message = text
        self.args = (text,)


# ---------------------------------------------------------------- YAML with line numbers


class _Composed:
    """Plain Python data from a composed YAML document plus the line of every key and item."""

    def __init__(self, text: str) -> None:
        self.lines: dict[Path_, int] = {(): 1}
        self.problems: list[Problem] = []
        self._constructor = BoundedSafeConstructor()
        try:
            node = safe_yaml.compose(text)
        except YamlLimitError as exc:
            mark = exc.problem_mark
            line = mark.line + 1 if mark is not None else None
            self.problems.append(
                Problem(line, f"YAML refused: {exc.problem}", "a profile needs no more: fix this line")
            )
            self.data: Any = None
            return
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else None
            what = exc.problem or exc.context or "invalid YAML"
            if exc.problem and exc.context and exc.context_mark is not None:
                what += f" ({exc.context} started at line {exc.context_mark.line + 1})"
            self.problems.append(
                Problem(line, f"YAML syntax error: {what}", "fix the YAML syntax at this line")
            )
            self.data = None
            return
        except yaml.YAMLError as exc:
            self.problems.append(Problem(None, f"YAML error: {exc}", "fix the YAML syntax"))
            self.data = None
            return
        self.data = self._convert(node, ()) if node is not None else None

    def _convert(self, node: yaml.Node, path: Path_) -> Any:
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                line = key_node.start_mark.line + 1
                if not isinstance(key_node, yaml.ScalarNode):
                    self.problems.append(Problem(line, "a key must be a plain name", "write name: value"))
                    continue
                key = self._scalar(key_node)
                if key in out:
                    first = self.lines.get((*path, key))
                    self.problems.append(
                        Problem(
                            line, f"duplicate key {key!r} (first at line {first})", "remove or rename one"
                        )
                    )
                    continue
                key_path = (*path, key)
                self.lines[key_path] = line
                out[key] = self._convert(value_node, key_path)
            return out
        if isinstance(node, yaml.SequenceNode):
            items = []
            for i, item in enumerate(node.value):
                item_path = (*path, i)
                self.lines[item_path] = item.start_mark.line + 1
                items.append(self._convert(item, item_path))
            return items
        return self._scalar(node)

    def _scalar(self, node: yaml.Node) -> Any:
        try:
            return self._constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            self.problems.append(
                Problem(node.start_mark.line + 1, f"bad value: {what}", "write a plain value")
            )
            return None

    def line_of(self, path: Path_) -> int | None:
        """The line of ``path``, or of its nearest located parent (the document starts at line 1)."""
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path)


def _no_lines(path: Path_) -> int | None:
    return None


# ---------------------------------------------------------------- formulas


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class FormulaSyntaxError(ValueError):
    """A formula that is not numbers, names, + - * /, parentheses, min(...) and max(...)."""


def formula_names(formula: str) -> tuple[str, ...]:
    """The names a formula refers to (not ``min``/``max``), in order of first use.

    The grammar is checked by the metrics engine's own parser, so the loader can never accept a
    formula the engine rejects (or the other way round).
    """
    try:
        names = parse_formula(formula).names
    except ExprError as exc:
        raise FormulaSyntaxError(exc.message) from exc
    ordered = (m.group(0) for m in _IDENTIFIER.finditer(formula))
    return tuple(dict.fromkeys(name for name in ordered if name in names))


# ---------------------------------------------------------------- semantic checks (YAML and dict forms)


def _suggest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"did you mean {close[0]}?" if close else ""


def _event_inputs(
    profile: Profile, names: Iterable[str], metric_inputs: Mapping[str, frozenset[str]]
) -> frozenset[str]:
    out: set[str] = set()
    for name in names:
        if name in profile.events:
            out.add(name)
        elif name in metric_inputs:
            out |= metric_inputs[name]
    return frozenset(out)


def _check(
    profile: Profile, line_of: LineOf, *, counters_known: bool = True
) -> tuple[list[Problem], dict[str, frozenset[str]]]:
    """Checks shared by the YAML and the recorded (dict) forms; returns problems and metric inputs.

    ``counters_known`` is False when ``counters`` itself was already reported missing or malformed:
    then the group sizes cannot be judged and are not (no cascade of follow-up errors).
    """
    problems: list[Problem] = []

    def bad(path: Path_, problem: str, fix: str = "") -> None:
        problems.append(Problem(line_of(path), problem, fix))

    if counters_known and profile.counters < 1:
        bad(("counters",), f"counters must be a positive integer, not {profile.counters}", "e.g. counters: 8")
    seen: dict[str, str] = {}
    for kind, table in (("constant", profile.constants), ("event", profile.events)):
        for name in table:
            path: Path_ = ("constants" if kind == "constant" else "events", name)
            if not IDENT.fullmatch(name):
                bad(path, f"{kind} name {name!r} is not an identifier", "use letters, digits and _")
            elif name in RESERVED:
                bad(path, f"{kind} name {name!r} is reserved", "rename it")
            elif name in seen:
                bad(path, f"{kind} {name} clashes with the {seen[name]} of the same name", "rename one")
            seen.setdefault(name, kind)

    codes: dict[int, str] = {}
    specs: dict[str, str] = {}
    for name, event in profile.events.items():
        if event.scope not in SCOPES:
            bad(("events", name, "scope"), f"event {name}: unknown scope {event.scope!r}", "use pe or cmg")
        duplicate_code = event.code is not None and event.code in codes
        if event.code is not None:
            if duplicate_code:
                bad(
                    ("events", name, "code"),
                    f"event {name}: code 0x{event.code:x} is already used by {codes[event.code]}",
                    "each code once: remove or fix one",
                )
            codes.setdefault(event.code, name)
        if not event.spec:
            bad(("events", name), f"event {name} has neither code nor spec", "add code: 0x... or spec: name")
        elif event.spec in specs and not duplicate_code:
            bad(
                ("events", name, "spec"),
                f"event {name}: spec {event.spec!r} is already used by {specs[event.spec]}",
                "each event once: remove one",
            )
        specs.setdefault(event.spec, name)
        if event.nj_per_count is not None and not event.nj_per_count > 0:
            bad(
                ("events", name, "nj_per_count"),
                f"event {name}: nj_per_count must be > 0",
                "e.g. nj_per_count: 8",
            )

    group_names: set[str] = set()
    for group in profile.groups:
        gpath: Path_ = ("groups", group.name)
        if group.name in group_names:
            bad(gpath, f"group {group.name} is defined twice", "rename one")
        group_names.add(group.name)
        if not group.events:
            bad(gpath, f"group {group.name} has no events", "list at least one event")
        if counters_known and len(group.events) > profile.counters:
            bad(
                (*gpath, "events"),
                f"group {group.name} has {len(group.events)} events but the PMU counts "
                f"{profile.counters} at once",
                f"split it into groups of at most {profile.counters}",
            )
        members: set[str] = set()
        for i, event_name in enumerate(group.events):
            if event_name not in profile.events:
                hint = _suggest(event_name, profile.events)
                bad(
                    (*gpath, "events", i),
                    f"group {group.name}: unknown event {event_name!r}",
                    hint or "define it under events:",
                )
            elif event_name in members:
                bad((*gpath, "events", i), f"group {group.name} lists {event_name} twice", "remove one")
            members.add(event_name)

    metric_inputs: dict[str, frozenset[str]] = {}
    later = {m.name for m in profile.metrics}
    for metric in profile.metrics:
        mpath: Path_ = ("metrics", metric.name)
        later.discard(metric.name)
        if not IDENT.fullmatch(metric.name):
            bad(mpath, f"metric name {metric.name!r} is not an identifier", "use letters, digits and _")
        elif metric.name in RESERVED:
            bad(mpath, f"metric name {metric.name!r} is reserved", "rename it")
        elif metric.name in seen:
            bad(
                mpath,
                f"metric {metric.name} clashes with the {seen[metric.name]} of the same name",
                "rename one",
            )
        if metric.better not in BETTER:
            bad(
                (*mpath, "better"),
                f"metric {metric.name}: unknown better {metric.better!r}",
                "use lower, higher or none",
            )
        if metric.scope not in METRIC_SCOPES:
            bad(
                (*mpath, "scope"),
                f"metric {metric.name}: unknown scope {metric.scope!r}",
                "use " + ", ".join(METRIC_SCOPES),
            )
        if metric.group_hint and metric.group_hint not in group_names:
            bad(
                (*mpath, "group"),
                f"metric {metric.name}: unknown group {metric.group_hint!r}",
                _suggest(metric.group_hint, group_names) or "name a group defined under groups:",
            )
        try:
            names = formula_names(metric.formula)
        except FormulaSyntaxError as exc:
            bad(
                (*mpath, "formula"),
                f"metric {metric.name}: bad formula: {exc}",
                "use numbers, names, + - * /, parentheses, min(...), max(...)",
            )
            seen.setdefault(metric.name, "metric")
            continue
        known = [*profile.events, *profile.constants, "SECONDS", *metric_inputs]
        for name in names:
            if (
                name in profile.events
                or name in profile.constants
                or name == "SECONDS"
                or name in metric_inputs
            ):
                continue
            if name == metric.name:
                bad(
                    (*mpath, "formula"),
                    f"metric {metric.name}: formula refers to itself",
                    "remove the reference",
                )
            elif name in later:
                bad(
                    (*mpath, "formula"),
                    f"metric {metric.name}: formula uses metric {name}, defined later",
                    f"move {name} above {metric.name}",
                )
            else:
                bad(
                    (*mpath, "formula"),
                    f"metric {metric.name}: unknown name {name!r} in formula",
                    _suggest(name, known)
                    or "use an event, a constant, NJ_<EVENT>, SECONDS or an earlier metric",
                )
        inputs = _event_inputs(profile, names, metric_inputs)
        metric_inputs[metric.name] = inputs
        seen.setdefault(metric.name, "metric")
        if metric.scope == "cmg":
            per_pe = sorted(e for e in inputs if profile.events[e].scope != "cmg")
            if per_pe:
                bad(
                    (*mpath, "scope"),
                    f"metric {metric.name} has scope cmg but uses per-PE event {per_pe[0]}",
                    "use scope: any",
                )
    problems += _check_sampling(profile, line_of)
    return problems, metric_inputs


def _check_sampling(profile: Profile, line_of: LineOf) -> list[Problem]:
    """The sampling event must be in the catalog; buckets need names and rising bounds."""
    problems: list[Problem] = []
    sampling = profile.sampling
    if sampling is not None:
        if sampling.event not in profile.events:
            problems.append(
                Problem(
                    line_of(("sampling", "event")),
                    f"sampling: unknown event {sampling.event!r}",
                    _suggest(sampling.event, profile.events) or "name an event defined under events:",
                )
            )
        if sampling.period < 1:
            problems.append(
                Problem(
                    line_of(("sampling", "period")),
                    f"sampling: period must be a positive integer, not {sampling.period}",
                    "e.g. period: 10007",
                )
            )
    names: set[str] = set()
    previous: float | None = None
    last = len(profile.latency_buckets) - 1
    for i, bucket in enumerate(profile.latency_buckets):
        path: Path_ = ("latency_buckets", i)
        if not bucket.name:
            problems.append(Problem(line_of(path), "latency bucket without a name", "add name: L1 hit"))
        elif bucket.name in names:
            problems.append(
                Problem(line_of(path), f"latency bucket {bucket.name!r} is defined twice", "rename one")
            )
        names.add(bucket.name)
        if bucket.max_cycles is None:
            if i != last:
                problems.append(
                    Problem(
                        line_of(path),
                        f"latency bucket {bucket.name!r} has no max_cycles but is not the last",
                        "only the last bucket may be open-ended: add max_cycles",
                    )
                )
            continue
        if not bucket.max_cycles > 0 or (previous is not None and bucket.max_cycles <= previous):
            problems.append(
                Problem(
                    line_of((*path, "max_cycles")),
                    f"latency bucket {bucket.name!r}: max_cycles {bucket.max_cycles:g} must be > 0 and "
                    "above the previous bucket's",
                    "list buckets from fastest to slowest",
                )
            )
        previous = bucket.max_cycles
    return problems


def _group_hint(profile: Profile, inputs: frozenset[str]) -> str:
    """The first group that counts every event a metric needs together ("" if none does)."""
    if not inputs:
        return ""
    for group in profile.groups:
        if inputs <= set(group.events):
            return group.name
    return ""


# ---------------------------------------------------------------- YAML form


class _Builder:
    """Turns the composed YAML into model objects, recording type problems with their lines."""

    def __init__(self, doc: _Composed) -> None:
        self.doc = doc
        self.problems: list[Problem] = []
        self.counters_known = False

    def bad(self, path: Path_, problem: str, fix: str = "") -> None:
        self.problems.append(Problem(self.doc.line_of(path), problem, fix))

    def mapping(
        self, value: Any, path: Path_, what: str, keys: Sequence[str] | None = None
    ) -> dict[Any, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.bad(path, f"{what} must be a mapping", "write key: value lines under it")
            return {}
        if keys is not None:
            for key in value:
                if key not in keys:
                    hint = _suggest(str(key), keys)
                    self.bad(
                        (*path, key), f"{what}: unknown key {key!r}", hint or "known keys: " + ", ".join(keys)
                    )
        return value

    def text(self, value: Any, path: Path_, what: str, default: str = "") -> str:
        if value is None:
            return default
        if not isinstance(value, str):
            self.bad(path, f"{what} must be text, not {value!r}", "quote it")
            return default
        return value

    def number(self, value: Any, path: Path_, what: str) -> float | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.bad(path, f"{what} must be a number, not {value!r}", "e.g. 8 or 0.5")
            return None
        return float(value)

    def build(self, source: str, variant: str) -> tuple[Profile, dict[str, Any]]:
        top = self.mapping(self.doc.data, (), "profile", TOP_KEYS)
        for key in ("name", "counters", "events", "groups"):
            if isinstance(self.doc.data, dict) and key not in top:
                self.bad((), f"missing required key {key!r}", f"add {key}: at the top level")
        name = self.text(top.get("name"), ("name",), "name")
        counters_raw = top.get("counters", 0)
        counters = 0
        if isinstance(counters_raw, bool) or not isinstance(counters_raw, int):
            self.bad(("counters",), f"counters must be an integer, not {counters_raw!r}", "e.g. counters: 8")
        else:
            counters = counters_raw
            self.counters_known = "counters" in top
        match = self.mapping(top.get("match"), ("match",), "match", MATCH_KEYS)

        events = self.events(self.mapping(top.get("events"), ("events",), "events"))
        factors = {n: e.nj_per_count for n, e in events.items() if e.nj_per_count is not None}
        variants = self.mapping(top.get("variants"), ("variants",), "variants")
        chosen = ""
        for vname, overrides in variants.items():
            vpath: Path_ = ("variants", vname)
            for event_name, value in self.mapping(overrides, vpath, f"variant {vname}").items():
                number = self.number(value, (*vpath, event_name), f"variant {vname}: {event_name}")
                if event_name not in events:
                    self.bad(
                        (*vpath, event_name),
                        f"variant {vname}: unknown event {event_name!r}",
                        _suggest(str(event_name), events) or "name an event with nj_per_count",
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
        events = {
            n: _replace_nj(e, factors.get(n)) if e.nj_per_count is not None else e for n, e in events.items()
        }

        constants: dict[str, float] = {}
        for cname, value in self.mapping(top.get("constants"), ("constants",), "constants").items():
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
            elif factor is not None:
                constants[key] = factor

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

    def flag(self, raw: Any, path: Path_, what: str) -> bool:
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
            path: Path_ = ("latency_buckets", i)
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
            path: Path_ = ("events", name)
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
            path: Path_ = ("groups", name)
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
            path: Path_ = ("metrics", name)
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


def _replace_nj(event: EventDef, factor: float | None) -> EventDef:
    return EventDef(event.name, event.spec, event.description, event.code, event.scope, event.unit, factor)


def _with_hints(profile: Profile, metric_inputs: Mapping[str, frozenset[str]]) -> Profile:
    metrics = tuple(
        m
        if m.group_hint
        else MetricDef(
            m.name,
            m.formula,
            m.unit,
            m.description,
            m.better,
            m.scope,
            _group_hint(profile, metric_inputs.get(m.name, frozenset())),
        )
        for m in profile.metrics
    )
    return Profile(
        profile.name,
        profile.description,
        profile.counters,
        profile.events,
        profile.groups,
        metrics,
        profile.constants,
        profile.source,
        profile.variant,
        profile.sampling,
        profile.latency_buckets,
        profile.rotate_software,
    )


def parse_profile(
    text: str, path: str, *, variant: str = "", source: str | None = None
) -> tuple[Profile, dict[str, Any]]:
    """Parse and validate profile YAML ``text`` (``path`` is used in messages); returns (profile, match)."""
    doc = _Composed(text)
    builder = _Builder(doc)
    problems = list(doc.problems)
    if doc.data is None:
        empty = Problem(1, "empty profile", "see docs/profiles.md for the format")
        raise ProfileError(path, problems or [empty])
    profile, match = builder.build(source if source is not None else path, variant)
    problems += builder.problems
    checked, inputs = _check(profile, doc.line_of, counters_known=builder.counters_known)
    problems += checked
    if problems:
        raise ProfileError(path, problems)
    return _with_hints(profile, inputs), match


# ---------------------------------------------------------------- public API


def builtin_profiles() -> tuple[str, ...]:
    """Names of the profiles shipped with sectormon."""
    files = resources.files("sectormon.profiles")
    return tuple(sorted(p.name[: -len(".yaml")] for p in files.iterdir() if p.name.endswith(".yaml")))


def _is_path(name_or_path: str) -> bool:
    return "/" in name_or_path or name_or_path.endswith((".yaml", ".yml"))


def _builtin(name: str, variant: str) -> tuple[Profile, dict[str, Any]]:
    resource = resources.files("sectormon.profiles").joinpath(f"{name}.yaml")
    return parse_profile(
        resource.read_text(encoding="utf-8"), str(resource), variant=variant, source=f"builtin:{name}"
    )


@functools.cache
def _builtin_match(name: str) -> tuple[tuple[str, Any], ...]:
    """A built-in profile's ``match`` (cached: profiles themselves are rebuilt per load, they hold dicts)."""
    return tuple(_builtin(name, "")[1].items())


def load_profile(name_or_path: str, *, variant: str = "") -> Profile:
    """Load a built-in profile by name (``a64fx``, ``generic``) or a YAML file by path.

    ``variant`` (from :attr:`Topology.variant`) selects the part's nJ factors when the profile lists
    that variant; ``Profile.variant`` is then set to it, else left ``""`` (the defaults apply).
    """
    if not _is_path(name_or_path):
        if name_or_path not in builtin_profiles():
            raise UsageError(
                f"--profile: unknown profile {name_or_path!r} (built-in: {', '.join(builtin_profiles())}; "
                "or give a path to a .yaml file)"
            )
        return _builtin(name_or_path, variant)[0]
    try:
        text = safe_yaml.read_yaml_text(name_or_path)
    except (OSError, YamlInputError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ProfileError(
            name_or_path, [Problem(None, f"cannot read profile: {reason}", "check the --profile path")]
        ) from exc
    return parse_profile(text, name_or_path, variant=variant)[0]


def _matches(match: Mapping[str, Any], topology: Topology) -> bool:
    if "a64fx" in match and bool(match["a64fx"]) != topology.is_a64fx:
        return False
    return not ("model" in match and str(match["model"]).lower() not in topology.model.lower())


def auto_profile_name(topology: Topology) -> str:
    """The built-in profile for this host: the first whose ``match`` fits, else the ``match: {}`` one."""
    fallback = ""
    for name in builtin_profiles():
        match = dict(_builtin_match(name))
        if not match:
            fallback = fallback or name
        elif _matches(match, topology):
            return name
    return fallback or "generic"


def resolve_profile(name: str | None, topology: Topology | None) -> tuple[Profile, str]:
    """The profile ``--profile NAME`` selects, and how it was chosen: ``auto`` (or ``None``) picks
    by the host's CPU (:func:`auto_profile_name`), or ``a64fx`` for the simulated A64FX
    (``topology`` None)."""
    if name not in (None, "auto"):
        return load_profile(name, variant=topology.variant if topology else ""), "--profile"
    if topology is None:
        return load_profile("a64fx"), "auto: simulated A64FX"
    why = "auto: A64FX detected" if topology.is_a64fx else "auto: not an A64FX"
    return load_profile(auto_profile_name(topology), variant=topology.variant), why


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
    problems, _ = _check(profile, _no_lines)
    if problems:
        # One line, as every error about a recording: the first fault, and how many more.
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise fail(problems[0].problem + more)
    return profile


def _strict_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value
