"""The rules a profile must keep, whichever form it came in: YAML with lines, or a recording's header.

A profile is checked after it is built, so the same rules judge a file being loaded and a profile
read back from a recording (which has no lines: its faults are reported without them). Each rule
is one method of :class:`_Checks`, run in a fixed order; the order is the order of the problems,
which a recording's one-line error relies on (it names the first). Besides the problems, the
check returns every metric's event inputs (formulas may use earlier metrics), which the builder
uses to pick a metric's group.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from sectormon.profiles.expr import FUNCTIONS, FormulaSyntaxError, formula_names
from sectormon.profiles.model import BETTER, METRIC_SCOPES, SCOPES, MetricDef, Profile
from sectormon.profiles.problems import KeyPath, LineOf, Problem, suggest

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RESERVED = ("SECONDS", *FUNCTIONS)


def check_profile(
    profile: Profile, line_of: LineOf, *, counters_known: bool = True
) -> tuple[list[Problem], dict[str, frozenset[str]]]:
    """Every fault of ``profile``, in rule order, and each metric's event inputs.

    ``counters_known`` is False when ``counters`` itself was already reported missing or malformed:
    then the group sizes cannot be judged and are not (no cascade of follow-up errors).
    """
    checks = _Checks(profile, line_of, counters_known)
    checks.counters()
    seen = checks.names()
    checks.events()
    group_names = checks.groups()
    metric_inputs = checks.metrics(seen, group_names)
    checks.sampling()
    checks.latency_buckets()
    return checks.problems, metric_inputs


def _event_inputs(
    profile: Profile, names: Iterable[str], metric_inputs: Mapping[str, frozenset[str]]
) -> frozenset[str]:
    """The events behind ``names``: events themselves, and the inputs of the metrics named."""
    out: set[str] = set()
    for name in names:
        if name in profile.events:
            out.add(name)
        elif name in metric_inputs:
            out |= metric_inputs[name]
    return frozenset(out)


class _Checks:
    """The rules, one per method, each adding its faults to ``problems``."""

    def __init__(self, profile: Profile, line_of: LineOf, counters_known: bool) -> None:
        self.profile = profile
        self.line_of = line_of
        self.counters_known = counters_known
        self.problems: list[Problem] = []

    def bad(self, path: KeyPath, problem: str, fix: str = "") -> None:
        self.problems.append(Problem(self.line_of(path), problem, fix))

    def counters(self) -> None:
        counters = self.profile.counters
        if self.counters_known and counters < 1:
            self.bad(
                ("counters",), f"counters must be a positive integer, not {counters}", "e.g. counters: 8"
            )

    def names(self) -> dict[str, str]:
        """Constant and event names are identifiers, not reserved, and unique across both kinds;
        returns each name's kind (metrics must not clash with them either)."""
        seen: dict[str, str] = {}
        for kind, table in (("constant", self.profile.constants), ("event", self.profile.events)):
            for name in table:
                path: KeyPath = ("constants" if kind == "constant" else "events", name)
                if not IDENT.fullmatch(name):
                    self.bad(path, f"{kind} name {name!r} is not an identifier", "use letters, digits and _")
                elif name in RESERVED:
                    self.bad(path, f"{kind} name {name!r} is reserved", "rename it")
                elif name in seen:
                    self.bad(
                        path, f"{kind} {name} clashes with the {seen[name]} of the same name", "rename one"
                    )
                seen.setdefault(name, kind)
        return seen

    def events(self) -> None:
        """Known scopes, each code and spec once, something to count by, positive nJ factors."""
        codes: dict[int, str] = {}
        specs: dict[str, str] = {}
        for name, event in self.profile.events.items():
            if event.scope not in SCOPES:
                self.bad(
                    ("events", name, "scope"), f"event {name}: unknown scope {event.scope!r}", "use pe or cmg"
                )
            duplicate_code = event.code is not None and event.code in codes
            if event.code is not None:
                if duplicate_code:
                    self.bad(
                        ("events", name, "code"),
                        f"event {name}: code 0x{event.code:x} is already used by {codes[event.code]}",
                        "each code once: remove or fix one",
                    )
                codes.setdefault(event.code, name)
            if not event.spec:
                self.bad(
                    ("events", name),
                    f"event {name} has neither code nor spec",
                    "add code: 0x... or spec: name",
                )
            elif event.spec in specs and not duplicate_code:
                self.bad(
                    ("events", name, "spec"),
                    f"event {name}: spec {event.spec!r} is already used by {specs[event.spec]}",
                    "each event once: remove one",
                )
            specs.setdefault(event.spec, name)
            if event.nj_per_count is not None and not event.nj_per_count > 0:
                self.bad(
                    ("events", name, "nj_per_count"),
                    f"event {name}: nj_per_count must be > 0",
                    "e.g. nj_per_count: 8",
                )

    def groups(self) -> set[str]:
        """Groups are unique, not empty, fit the PMU's counters and list known events once each;
        returns their names."""
        profile = self.profile
        group_names: set[str] = set()
        for group in profile.groups:
            gpath: KeyPath = ("groups", group.name)
            if group.name in group_names:
                self.bad(gpath, f"group {group.name} is defined twice", "rename one")
            group_names.add(group.name)
            if not group.events:
                self.bad(gpath, f"group {group.name} has no events", "list at least one event")
            if self.counters_known and len(group.events) > profile.counters:
                self.bad(
                    (*gpath, "events"),
                    f"group {group.name} has {len(group.events)} events but the PMU counts "
                    f"{profile.counters} at once",
                    f"split it into groups of at most {profile.counters}",
                )
            members: set[str] = set()
            for i, event_name in enumerate(group.events):
                if event_name not in profile.events:
                    hint = suggest(event_name, profile.events)
                    self.bad(
                        (*gpath, "events", i),
                        f"group {group.name}: unknown event {event_name!r}",
                        hint or "define it under events:",
                    )
                elif event_name in members:
                    self.bad(
                        (*gpath, "events", i), f"group {group.name} lists {event_name} twice", "remove one"
                    )
                members.add(event_name)
        return group_names

    def metrics(self, seen: dict[str, str], group_names: set[str]) -> dict[str, frozenset[str]]:
        """Each metric in profile order: its name and fields, then its formula, which may use
        events, constants, SECONDS and the metrics above it; returns each metric's event inputs."""
        metric_inputs: dict[str, frozenset[str]] = {}
        later = {m.name for m in self.profile.metrics}
        for metric in self.profile.metrics:
            later.discard(metric.name)
            self.metric_name(metric, seen)
            self.metric_fields(metric, group_names)
            names = self.formula(metric, metric_inputs, later)
            if names is not None:
                inputs = _event_inputs(self.profile, names, metric_inputs)
                metric_inputs[metric.name] = inputs
                self.cmg_scope(metric, inputs)
            seen.setdefault(metric.name, "metric")
        return metric_inputs

    def metric_name(self, metric: MetricDef, seen: Mapping[str, str]) -> None:
        mpath: KeyPath = ("metrics", metric.name)
        if not IDENT.fullmatch(metric.name):
            self.bad(mpath, f"metric name {metric.name!r} is not an identifier", "use letters, digits and _")
        elif metric.name in RESERVED:
            self.bad(mpath, f"metric name {metric.name!r} is reserved", "rename it")
        elif metric.name in seen:
            self.bad(
                mpath,
                f"metric {metric.name} clashes with the {seen[metric.name]} of the same name",
                "rename one",
            )

    def metric_fields(self, metric: MetricDef, group_names: set[str]) -> None:
        mpath: KeyPath = ("metrics", metric.name)
        if metric.better not in BETTER:
            self.bad(
                (*mpath, "better"),
                f"metric {metric.name}: unknown better {metric.better!r}",
                "use lower, higher or none",
            )
        if metric.scope not in METRIC_SCOPES:
            self.bad(
                (*mpath, "scope"),
                f"metric {metric.name}: unknown scope {metric.scope!r}",
                "use " + ", ".join(METRIC_SCOPES),
            )
        if metric.group_hint and metric.group_hint not in group_names:
            self.bad(
                (*mpath, "group"),
                f"metric {metric.name}: unknown group {metric.group_hint!r}",
                suggest(metric.group_hint, group_names) or "name a group defined under groups:",
            )

    def formula(
        self, metric: MetricDef, metric_inputs: Mapping[str, frozenset[str]], later: set[str]
    ) -> tuple[str, ...] | None:
        """The formula parses and every name in it is known by now; returns its names (None when
        it does not parse: then it has no inputs to judge)."""
        profile = self.profile
        path: KeyPath = ("metrics", metric.name, "formula")
        try:
            names = formula_names(metric.formula)
        except FormulaSyntaxError as exc:
            self.bad(
                path,
                f"metric {metric.name}: bad formula: {exc}",
                "use numbers, names, + - * /, parentheses, min(...), max(...)",
            )
            return None
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
                self.bad(path, f"metric {metric.name}: formula refers to itself", "remove the reference")
            elif name in later:
                self.bad(
                    path,
                    f"metric {metric.name}: formula uses metric {name}, defined later",
                    f"move {name} above {metric.name}",
                )
            else:
                self.bad(
                    path,
                    f"metric {metric.name}: unknown name {name!r} in formula",
                    suggest(name, known)
                    or "use an event, a constant, NJ_<EVENT>, SECONDS or an earlier metric",
                )
        return names

    def cmg_scope(self, metric: MetricDef, inputs: frozenset[str]) -> None:
        """A CMG-scoped metric reads CMG-scoped events only."""
        if metric.scope != "cmg":
            return
        per_pe = sorted(e for e in inputs if self.profile.events[e].scope != "cmg")
        if per_pe:
            self.bad(
                ("metrics", metric.name, "scope"),
                f"metric {metric.name} has scope cmg but uses per-PE event {per_pe[0]}",
                "use scope: any",
            )

    def sampling(self) -> None:
        """The sampling event must be in the catalog, its period positive."""
        sampling = self.profile.sampling
        if sampling is None:
            return
        if sampling.event not in self.profile.events:
            self.bad(
                ("sampling", "event"),
                f"sampling: unknown event {sampling.event!r}",
                suggest(sampling.event, self.profile.events) or "name an event defined under events:",
            )
        if sampling.period < 1:
            self.bad(
                ("sampling", "period"),
                f"sampling: period must be a positive integer, not {sampling.period}",
                "e.g. period: 10007",
            )

    def latency_buckets(self) -> None:
        """Buckets need unique names and rising bounds; only the last may be open-ended."""
        names: set[str] = set()
        previous: float | None = None
        last = len(self.profile.latency_buckets) - 1
        for i, bucket in enumerate(self.profile.latency_buckets):
            path: KeyPath = ("latency_buckets", i)
            if not bucket.name:
                self.bad(path, "latency bucket without a name", "add name: L1 hit")
            elif bucket.name in names:
                self.bad(path, f"latency bucket {bucket.name!r} is defined twice", "rename one")
            names.add(bucket.name)
            if bucket.max_cycles is None:
                if i != last:
                    self.bad(
                        path,
                        f"latency bucket {bucket.name!r} has no max_cycles but is not the last",
                        "only the last bucket may be open-ended: add max_cycles",
                    )
                continue
            if not bucket.max_cycles > 0 or (previous is not None and bucket.max_cycles <= previous):
                self.bad(
                    (*path, "max_cycles"),
                    f"latency bucket {bucket.name!r}: max_cycles {bucket.max_cycles:g} must be > 0 and "
                    "above the previous bucket's",
                    "list buckets from fastest to slowest",
                )
            previous = bucket.max_cycles
