"""The quick stat's digest of the generic profile is the profile's own: regenerated it is the
committed module, and each generated formula gives the engine's value (n/a where it is n/a)."""

from __future__ import annotations

import ast
import importlib.util
import math
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from sectormon.commands.stat_quick import metric_value
from sectormon.profiles import expr, generic_digest
from sectormon.profiles.resolve import load_profile

REPO = Path(__file__).resolve().parents[2]


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("profile_digest", REPO / "scripts" / "profile_digest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_digest_is_what_the_profile_generates() -> None:
    committed = Path(generic_digest.__file__).read_text(encoding="utf-8")
    fresh = _generator().digest_text()
    assert ast.dump(ast.parse(fresh)) == ast.dump(ast.parse(committed)), (
        "generic.yaml changed: run python scripts/profile_digest.py"
    )


def test_the_digest_lists_every_metric_in_the_profiles_order() -> None:
    profile = load_profile("generic")
    assert [m[0] for m in generic_digest.METRICS] == [m.name for m in profile.metrics]
    assert [m[1] for m in generic_digest.METRICS] == [m.unit for m in profile.metrics]
    assert set(generic_digest.EVENTS) == {"task-clock", "page-faults", "minor-faults", "major-faults"}


VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=0, max_value=2**64), st.none()
)


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "TASK_CLOCK",
                "PAGE_FAULTS",
                "SECONDS",
                "CYCLES",
                "INSTRUCTIONS",
                "CACHE_MISSES",
                "CACHE_REFERENCES",
                "BRANCHES",
                "BRANCH_MISSES",
                "MAJOR_FAULTS",
                "CONTEXT_SWITCHES",
                "CPU_MIGRATIONS",
            ]
        ),
        VALUES,
    )
)
@example({"TASK_CLOCK": 1e6, "SECONDS": 0.0})
@example({"TASK_CLOCK": math.inf, "SECONDS": 1.0})
@example({"PAGE_FAULTS": 5, "SECONDS": None})
def test_each_generated_formula_gives_the_engines_value(env: dict[str, float | None]) -> None:
    profile = load_profile("generic")
    for (name, _, _, formula), metric in zip(generic_digest.METRICS, profile.metrics, strict=True):
        assert name == metric.name
        engine = expr.parse(metric.formula).evaluate(env)
        quick = metric_value(formula, env)  # type: ignore[arg-type]
        if engine is None:
            assert quick is None, name
        else:
            assert quick == engine, name
