"""The advisor's configurations as the machine takes them: register values, Fujitsu's directives."""

from __future__ import annotations

from sectormon.sim.advisor import Candidate
from sectormon.sim.directives import fujitsu, registers


def test_register_values_follow_the_field_layout() -> None:
    c = Candidate((1, 0), (1, 3, 0, 0), (2, 12))
    assert registers(c) == {
        "IMP_SCCR_L1_EL0": "0x0031",
        "IMP_SCCR_SET0_L2_EL1": "0x0c02",
        "IMP_SCCR_SET1_L2_EL1": "0x0c02",
    }


def test_fujitsu_form_for_two_sectors_only() -> None:
    names = ("reused", "stream")
    two = fujitsu(Candidate((1, 0), (1, 3, 0, 0), (2, 12)), names, 14)
    assert two["expressible"] is True
    assert "FLIB_L2_SECTOR_NWAYS_INIT=2,12" in two["environment"]
    assert two["directives"] == [
        "#pragma statement scache_isolate_way L2=12 L1=3",
        "#pragma statement scache_isolate_assign reused",
    ]
    flat = fujitsu(Candidate((1, 0), (1, 3, 0, 0), (14, 14)), names, 14)
    assert flat["expressible"] is False and "not partitioned" in flat["why"]
    three = fujitsu(Candidate((0, 1, 2), (1, 1, 2, 0), (2, 12)), ("A", "B", "C"), 14)
    assert three["expressible"] is False and "sector ids 2-3" in three["why"]


def test_fujitsu_fortran_directives_name_the_same_arrays() -> None:
    two = fujitsu(Candidate((1, 1, 0), (0, 3, 0, 0), (4, 10)), ("a", "b", "c"), 14)
    assert two["directives"][1] == "#pragma statement scache_isolate_assign a, b"
    assert two["fortran"] == ["!ocl scache_isolate_way(L2=10,L1=3)", "!ocl scache_isolate_assign(a, b)"]
    assert two["not_variables"] == []


def test_fujitsu_names_only_variables_in_the_directive() -> None:
    names = ("table", "[other]", "count.0")
    mixed = fujitsu(Candidate((1, 1, 0), (0, 3, 0, 0), (4, 10)), names, 14)
    assert mixed["directives"][1] == "#pragma statement scache_isolate_assign table"
    assert mixed["not_variables"] == ["[other]"]
    none = fujitsu(Candidate((0, 1, 1), (0, 3, 0, 0), (4, 10)), names, 14)
    assert none["directives"] == ["#pragma statement scache_isolate_way L2=10 L1=3"]  # no empty assign
    assert none["fortran"] == ["!ocl scache_isolate_way(L2=10,L1=3)"]
    assert none["not_variables"] == ["[other]", "count.0"]


def test_the_fortran_form_names_a_gfortran_module_variable_by_its_own_name() -> None:
    names = ("__grid_MOD_table", "__hidden", "stream")
    two = fujitsu(Candidate((1, 1, 0), (0, 3, 0, 0), (4, 10)), names, 14)
    assert two["directives"][1] == "#pragma statement scache_isolate_assign __grid_MOD_table, __hidden"
    assert two["fortran"][1] == "!ocl scache_isolate_assign(table)"  # no Fortran name starts with _
