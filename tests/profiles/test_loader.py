"""Loader: validation errors with FILE:LINE, round trips, built-ins, formula names (incl. properties)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sectormon.errors import DataError, UsageError
from sectormon.host import roots
from sectormon.host.topology import load_topology
from sectormon.profiles.codec import profile_from_dict, profile_to_dict
from sectormon.profiles.expr import FormulaSyntaxError, formula_names
from sectormon.profiles.problems import ProfileError
from sectormon.profiles.resolve import auto_profile_name, builtin_profiles, load_profile

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sysfs"

GOOD = """\
name: tiny
description: A tiny profile
counters: 3
match: {}
variants:
  fast: {E_POWER: 2}
constants: {SCALE: 100}
events:
  CYC: {code: 0x11, scope: pe, unit: cycles, desc: cycles}
  INS: {code: 0x8, desc: instructions}
  CMG_EV: {code: 0x309, scope: cmg}
  E_POWER: {code: 0x1e0, nj_per_count: 1.5}
  TASK: {spec: task-clock, unit: ns}
groups:
  G1: {desc: first, events: [CYC, INS]}
  G2:
    desc: second
    events: [CYC, CMG_EV, E_POWER]
metrics:
  ipc: {formula: INS / CYC, unit: inst/cycle, better: higher}
  scaled: {formula: "max(ipc, 0) * SCALE + min(1, 2)", unit: "%"}
  cmg_only: {formula: CMG_EV / SECONDS, scope: cmg, better: lower}
  energy: {formula: E_POWER * NJ_E_POWER, unit: nJ, group: G2}
"""


def write(tmp_path: Path, text: str, name: str = "p.yaml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def errors_of(path: str) -> list[str]:
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert isinstance(info.value, DataError)
    lines = str(info.value).splitlines()
    assert all(line.startswith(path) for line in lines)
    return lines


def replace(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


# ---------------------------------------------------------------- a good profile


def test_good_profile_loads(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    profile = load_profile(path)
    assert profile.name == "tiny" and profile.counters == 3 and profile.source == path
    assert list(profile.events) == ["CYC", "INS", "CMG_EV", "E_POWER", "TASK"]
    assert profile.events["CYC"].spec == "r11" and profile.events["CYC"].code == 0x11
    assert profile.events["INS"].scope == "pe" and profile.events["INS"].unit == "count"
    assert profile.events["TASK"].code is None and profile.events["TASK"].spec == "task-clock"
    assert profile.constants == {"SCALE": 100.0, "NJ_E_POWER": 1.5}
    assert [g.events for g in profile.groups] == [("CYC", "INS"), ("CYC", "CMG_EV", "E_POWER")]
    assert profile.metric("ipc").group_hint == "G1"  # derived: the first group counting all inputs
    assert profile.metric("scaled").group_hint == "G1"
    assert profile.metric("energy").group_hint == "G2"  # explicit
    assert profile.metric("scaled").better == "none" and profile.metric("scaled").scope == "any"
    assert profile.cmg_events(profile.group("G2")) == ("CMG_EV",)
    fast = load_profile(path, variant="fast")
    assert fast.variant == "fast" and fast.constants["NJ_E_POWER"] == 2.0
    assert load_profile(path, variant="other").variant == ""


@pytest.mark.parametrize("name", ["a64fx", "generic"])
@pytest.mark.parametrize("variant", ["", "24c-2.6GHz"])
def test_round_trip_through_json_is_exact(name: str, variant: str) -> None:
    profile = load_profile(name, variant=variant)
    data = json.loads(json.dumps(profile_to_dict(profile)))
    again = profile_from_dict(data)
    assert again == profile
    assert list(again.events) == list(profile.events)
    assert profile_to_dict(again) == profile_to_dict(profile)


def test_round_trip_of_a_file_profile(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, GOOD), variant="fast")
    assert profile_from_dict(json.loads(json.dumps(profile_to_dict(profile)))) == profile


def test_from_dict_rejects_damaged_headers() -> None:
    data = profile_to_dict(load_profile("generic"))
    with pytest.raises(ProfileError, match=r"^rec.jsonl: bad profile in header: missing field 'counters'"):
        profile_from_dict({k: v for k, v in data.items() if k != "counters"}, source="rec.jsonl")
    bad_group = {**data, "groups": [{"name": "X", "events": ["NOPE"]}]}
    with pytest.raises(
        ProfileError, match=r"<recording>: bad profile in header: group X: unknown event 'NOPE'"
    ):
        profile_from_dict(bad_group)
    bad_formula = {**data, "metrics": [{"name": "m", "formula": "CYCLES / nothing"}]}
    with pytest.raises(ProfileError, match="unknown name 'nothing'"):
        profile_from_dict(bad_formula)
    with pytest.raises(ProfileError, match="expected an integer"):
        profile_from_dict({**data, "counters": "4"})


# ---------------------------------------------------------------- validation errors, each with its line


def test_group_larger_than_the_counters(tmp_path: Path) -> None:
    text = replace(GOOD, "events: [CYC, INS]}", "events: [CYC, INS, CMG_EV, E_POWER]}")
    lines = errors_of(write(tmp_path, text))
    assert lines == [
        f"{tmp_path}/p.yaml:15: group G1 has 4 events but the PMU counts 3 at once "
        "(split it into groups of at most 3)"
    ]


def test_unknown_event_in_a_group_names_the_line_of_the_item(tmp_path: Path) -> None:
    text = replace(GOOD, "    events: [CYC, CMG_EV, E_POWER]", "    events:\n      - CYC\n      - CMG_EVT")
    (line,) = errors_of(write(tmp_path, text))
    assert line.startswith(f"{tmp_path}/p.yaml:20: group G2: unknown event 'CMG_EVT' (did you mean CMG_EV?)")


def test_duplicate_codes(tmp_path: Path) -> None:
    text = replace(GOOD, "INS: {code: 0x8,", "INS: {code: 0x0011,")
    (line,) = errors_of(write(tmp_path, text))
    assert (
        line == f"{tmp_path}/p.yaml:10: event INS: code 0x11 is already used by CYC "
        "(each code once: remove or fix one)"
    )


def test_unknown_scope_and_better(tmp_path: Path) -> None:
    text = replace(GOOD, "CMG_EV: {code: 0x309, scope: cmg}", "CMG_EV: {code: 0x309, scope: core}")
    text = replace(text, "better: higher}", "better: up}")
    lines = errors_of(write(tmp_path, text))
    assert lines[0] == f"{tmp_path}/p.yaml:11: event CMG_EV: unknown scope 'core' (use pe or cmg)"
    assert f"{tmp_path}/p.yaml:20: metric ipc: unknown better 'up' (use lower, higher or none)" in lines
    # cmg_only now reads a per-PE event while claiming scope cmg
    assert any(":22: metric cmg_only has scope cmg but uses per-PE event CMG_EV" in line for line in lines)


def test_formula_names_that_do_not_resolve(tmp_path: Path) -> None:
    text = replace(GOOD, "formula: INS / CYC,", "formula: INSN / CYC,")
    text = replace(text, "formula: E_POWER * NJ_E_POWER,", "formula: E_POWER * NJ_E_POWER + later,")
    text += (
        "  later: {formula: ipc * 2}\n  self_ref: {formula: self_ref + 1}\n  broken: {formula: '(CYC + '}\n"
    )
    lines = errors_of(write(tmp_path, text))
    path = f"{tmp_path}/p.yaml"
    assert lines[0] == f"{path}:20: metric ipc: unknown name 'INSN' in formula (did you mean INS?)"
    assert (
        f"{path}:23: metric energy: formula uses metric later, defined later (move later above energy)"
        in lines
    )
    assert f"{path}:25: metric self_ref: formula refers to itself (remove the reference)" in lines
    assert any(
        line.startswith(f"{path}:26: metric broken: bad formula: unexpected end of formula") for line in lines
    )


def test_bad_yaml_syntax_reports_the_yaml_line(tmp_path: Path) -> None:
    text = replace(
        GOOD, "  INS: {code: 0x8, desc: instructions}", "  INS: {code: 0x8, desc: instructions\n  X: 1"
    )
    (line,) = errors_of(write(tmp_path, text))
    assert line.startswith(f"{tmp_path}/p.yaml:11: YAML syntax error:")
    assert "(fix the YAML syntax at this line)" in line


def test_duplicate_keys_are_rejected_not_merged(tmp_path: Path) -> None:
    text = replace(
        GOOD,
        "  TASK: {spec: task-clock, unit: ns}",
        "  TASK: {spec: task-clock, unit: ns}\n  CYC: {code: 0x12}",
    )
    text = replace(
        text,
        "  G1: {desc: first, events: [CYC, INS]}",
        "  G1: {desc: first, desc: again, events: [CYC, INS]}",
    )
    lines = errors_of(write(tmp_path, text))
    assert lines[0] == f"{tmp_path}/p.yaml:14: duplicate key 'CYC' (first at line 9) (remove or rename one)"
    assert lines[1] == f"{tmp_path}/p.yaml:16: duplicate key 'desc' (first at line 16) (remove or rename one)"


def test_unknown_keys_missing_keys_and_types(tmp_path: Path) -> None:
    text = replace(GOOD, "counters: 3", "counter: 3")
    text = replace(
        text, "CYC: {code: 0x11, scope: pe, unit: cycles, desc: cycles}", "CYC: {code: 0x11, unitt: cycles}"
    )
    text = replace(text, "constants: {SCALE: 100}", "constants: {SCALE: lots}")
    lines = errors_of(write(tmp_path, text))
    path = f"{tmp_path}/p.yaml"
    assert lines[0] == f"{path}:1: missing required key 'counters' (add counters: at the top level)"
    assert f"{path}:3: profile: unknown key 'counter' (did you mean counters?)" in lines
    assert f"{path}:7: constant SCALE must be a number, not 'lots' (e.g. 8 or 0.5)" in lines
    assert f"{path}:9: event CYC: unknown key 'unitt' (did you mean unit?)" in lines


def test_variant_overrides_must_name_energy_events(tmp_path: Path) -> None:
    text = replace(GOOD, "fast: {E_POWER: 2}", "fast: {CYC: 2, NOPE: 3}")
    lines = errors_of(write(tmp_path, text))
    path = f"{tmp_path}/p.yaml"
    assert lines == [
        f"{path}:6: variant fast: event CYC has no nj_per_count (variants only override nj_per_count)",
        f"{path}:6: variant fast: unknown event 'NOPE' (name an event with nj_per_count)",
    ]


def test_name_clashes(tmp_path: Path) -> None:
    text = replace(GOOD, "constants: {SCALE: 100}", "constants: {CYC: 1, NJ_E_POWER: 2}")
    text = replace(text, "  ipc: {formula", "  INS: {formula: 1}\n  ipc: {formula")
    lines = errors_of(write(tmp_path, text))
    path = f"{tmp_path}/p.yaml"
    assert (
        f"{path}:7: constant NJ_E_POWER clashes with the nJ factor derived from E_POWER "
        "(remove the constant: set nj_per_count on the event instead)" in lines
    )
    assert f"{path}:9: event CYC clashes with the constant of the same name (rename one)" in lines
    assert f"{path}:20: metric INS clashes with the event of the same name (rename one)" in lines


def test_all_problems_are_reported_sorted_by_line(tmp_path: Path) -> None:
    text = replace(GOOD, "better: higher}", "better: up}")
    text = replace(text, "CMG_EV: {code: 0x309, scope: cmg}", "CMG_EV: {code: 0x309, scope: x}")
    lines = errors_of(write(tmp_path, text))
    numbers = [int(line.split(":")[1]) for line in lines]
    assert numbers == sorted(numbers) and len(lines) >= 3


def test_empty_and_non_mapping_files(tmp_path: Path) -> None:
    assert errors_of(write(tmp_path, "")) == [
        f"{tmp_path}/p.yaml:1: empty profile (see docs/profiles.md for the format)"
    ]
    (line,) = errors_of(write(tmp_path, "- a\n- b\n"))
    assert "profile must be a mapping" in line


def test_missing_file_and_unknown_builtin(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(ProfileError, match=r"nope.yaml: cannot read profile: No such file or directory"):
        load_profile(missing)
    with pytest.raises(UsageError, match=r"--profile: unknown profile 'a64fy' \(built-in: a64fx, generic"):
        load_profile("a64fy")


# ---------------------------------------------------------------- built-ins and automatic choice


def test_builtins_and_auto_choice() -> None:
    assert builtin_profiles() == ("a64fx", "generic")
    for name, expected in (("fx1000", "a64fx"), ("fx700", "a64fx"), ("x86", "generic")):
        with roots.use(sysfs=FIXTURES / name / "sys", procfs=FIXTURES / name / "proc"):
            topo = load_topology()
        assert auto_profile_name(topo) == expected
    assert load_profile("a64fx").source == "builtin:a64fx"


def test_generic_profile() -> None:
    profile = load_profile("generic")
    assert profile.counters == 4
    assert {g.name: g.events for g in profile.groups} == {
        "HW1": ("CYCLES", "INSTRUCTIONS", "CACHE_REFERENCES", "CACHE_MISSES"),
        "HW2": ("CYCLES", "BRANCHES", "BRANCH_MISSES"),
        "SW1": ("TASK_CLOCK", "PAGE_FAULTS"),
        "SW2": ("TASK_CLOCK", "CONTEXT_SWITCHES", "CPU_MIGRATIONS"),
        "SW3": ("TASK_CLOCK", "MINOR_FAULTS", "MAJOR_FAULTS"),
    }
    assert profile.events["TASK_CLOCK"].spec == "task-clock" and profile.events["TASK_CLOCK"].unit == "ns"
    assert all(e.code is None and e.scope == "pe" for e in profile.events.values())
    assert [m.name for m in profile.metrics] == [
        "IPC",
        "cache_miss_rate",
        "branch_miss_rate",
        "cpu_utilization",
        "page_fault_rate",
        "major_fault_rate",
        "context_switch_rate",
        "migration_rate",
    ]
    assert profile.metric("cpu_utilization").formula == "TASK_CLOCK / 1e9 / SECONDS"
    assert profile.metric("cpu_utilization").unit == "cores"


# ---------------------------------------------------------------- formula names


@pytest.mark.parametrize(
    ("formula", "names"),
    [
        ("A / B", ("A", "B")),
        ("(A + B) / (A - 1e9)", ("A", "B")),
        ("max(A, min(B, 2), -C) * SECONDS", ("A", "B", "C", "SECONDS")),
        ("-A", ("A",)),
        ("2.5e-3 * .5", ()),
    ],
)
def test_formula_names(formula: str, names: tuple[str, ...]) -> None:
    assert formula_names(formula) == names


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("", "empty formula"),
        ("A +", "unexpected end of formula .* at column 3"),
        ("A B", "unexpected 'B' at column 2"),
        ("(A", "expected '\\)'"),
        ("A)", "unexpected '\\)' at column 1"),
        ("A, B", "unexpected ','"),
        ("log(A)", "unknown function 'log'"),
        ("min + 1", "expected '\\(' after 'min'"),
        ("A ** 2", "unexpected '\\*' .* at column 3"),
        ("A % 2", "unexpected character '%' at column 2"),
        ("A / B;", "unexpected character ';'"),
        ("(" * 3000 + "A" + ")" * 3000, "nested too deeply"),
    ],
)
def test_formula_syntax_errors(formula: str, message: str) -> None:
    with pytest.raises(FormulaSyntaxError, match=message):
        formula_names(formula)


NAME = st.sampled_from(["A", "B", "CPU_CYCLES", "x1", "SECONDS"])
ATOM = NAME | st.integers(min_value=0, max_value=10**6).map(str) | st.sampled_from(["1e9", "0.5", ".25"])


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(children, st.sampled_from(["+", "-", "*", "/"]), children).map(
        lambda t: f"{t[0]} {t[1]} {t[2]}"
    )
    call = st.tuples(st.sampled_from(["min", "max"]), st.lists(children, min_size=1, max_size=3)).map(
        lambda t: f"{t[0]}({', '.join(t[1])})"
    )
    return binary | call | children.map(lambda c: f"({c})") | children.map(lambda c: f"-{c}")


FORMULA = st.recursive(ATOM, _combine, max_leaves=12)


@given(FORMULA)
def test_generated_formulas_parse_and_agree_with_the_engine(formula: str) -> None:
    names = formula_names(formula)
    assert len(names) == len(set(names))
    assert all(n not in ("min", "max") for n in names)
    try:
        from sectormon.profiles import expr
    except ImportError:  # the engine is another area; the loader must not depend on it
        return
    assert set(expr.parse(formula).names) == set(names)


@given(st.text(alphabet="AB1.e+-*/(), %", max_size=16))
def test_random_text_fails_only_with_formula_syntax_error(text: str) -> None:
    try:
        formula_names(text)
    except FormulaSyntaxError:
        return


def test_the_documented_example_profile_is_valid(tmp_path: Path) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "profiles.md").read_text()
    example = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    profile = load_profile(write(tmp_path, example), variant="24c-2.6GHz")
    assert profile.name == "mycpu" and profile.constants["NJ_EA_CORE"] == 9.0
    assert profile.metric("power_W").group_hint == "G1"
