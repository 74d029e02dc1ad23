"""How a configuration of the sector advisor is set on the machine: the sector registers' values,
and the Fujitsu runtime's environment and compiler directives (C ``#pragma statement``, Fortran
``!ocl``) where they can express it. Kept apart from the search: this is the facts sheet's
register layout and Fujitsu's (secondary-source) directive forms, which change for other reasons
than the search does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol


class Candidate(Protocol):
    """A configuration as the advisor's search describes it (:class:`~.advisor.Candidate`)."""

    @property
    def assignment(self) -> tuple[int, ...]:
        """Sector id per object."""

    @property
    def l1(self) -> tuple[int, int, int, int]:
        """L1D maximum ways of sectors 0-3."""

    @property
    def l2(self) -> tuple[int, int]:
        """L2 maximum ways of sectors 0/1 of each set."""


def registers(c: Candidate) -> dict[str, str]:
    """The sector registers' values (facts sheet: IMP_SCCR_L1_EL0 sector maxima at bits [2:0],
    [6:4], [10:8], [14:12]; IMP_SCCR_SETn_L2_EL1 two 5-bit maxima at [4:0] and [12:8])."""
    l1 = c.l1[0] | c.l1[1] << 4 | c.l1[2] << 8 | c.l1[3] << 12
    l2 = c.l2[0] | c.l2[1] << 8
    return {
        "IMP_SCCR_L1_EL0": f"0x{l1:04x}",
        "IMP_SCCR_SET0_L2_EL1": f"0x{l2:04x}",
        "IMP_SCCR_SET1_L2_EL1": f"0x{l2:04x}",
    }


def fujitsu(c: Candidate, names: Sequence[str], l2_ways: int) -> dict[str, Any]:
    """The Fujitsu runtime's environment and compiler directives (facts sheet; Fujitsu's C and
    Fortran user's guides, secondary sources): they know two sectors, 0 (default) and 1
    (``scache_isolate_assign``), each directive setting sector 1's ways and sector 0 keeping the
    rest. The directive names variables: an object whose name is not one (``[other]``, a static's
    ``count.0``, a heap block by allocation site) is listed under ``not_variables``, for the
    programmer to name the array or pointer variable that holds it."""
    isolated = [n for n, s in zip(names, c.assignment, strict=True) if s == 1]
    if set(c.assignment) != {0, 1}:
        return {"expressible": False, "why": "needs sector ids 2-3: set the tag bits and IMP_SCCR_* directly"}
    if c.l2[0] + c.l2[1] != l2_ways:
        return {
            "expressible": False,
            "why": f"the L2 not partitioned and an L1D split: FLIB_L2_SECTOR_NWAYS_INIT={l2_ways},{l2_ways} "
            "with no directive for the L1D alone",
        }
    variables = [n for n in isolated if _IDENTIFIER.fullmatch(n)]
    assign = ", ".join(variables)
    fortran = ", ".join(dict.fromkeys(f for n in variables if (f := _fortran_name(n)) is not None))
    return {
        "expressible": True,
        "environment": [
            "FLIB_SCCR_CNTL=TRUE",
            "FLIB_L1_SCCR_CNTL=TRUE",
            f"FLIB_L2_SECTOR_NWAYS_INIT={c.l2[0]},{c.l2[1]}",
        ],
        "directives": [
            f"#pragma statement scache_isolate_way L2={c.l2[1]} L1={c.l1[1]}",
            *([f"#pragma statement scache_isolate_assign {assign}"] if variables else []),
        ],
        "fortran": [
            f"!ocl scache_isolate_way(L2={c.l2[1]},L1={c.l1[1]})",
            *([f"!ocl scache_isolate_assign({fortran})"] if fortran else []),
        ],
        "not_variables": [n for n in isolated if n not in variables],
        "compile": "-Khpctag (compile and link)",
    }


# A name the directives can take: a C identifier.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# gfortran's symbol of module variable NAME in module MOD: __MOD_MOD_NAME (lower case).
_GFORTRAN_MODULE = re.compile(r"__[a-z0-9_]+?_MOD_([a-z][a-z0-9_]*)")


def _fortran_name(symbol: str) -> str | None:
    """The Fortran name of a variable's symbol: a module variable's own name, a plain name as it
    is, None for a name Fortran cannot have (one starting with ``_``)."""
    if (module := _GFORTRAN_MODULE.fullmatch(symbol)) is not None:
        return module.group(1)
    return symbol if symbol[:1].isalpha() else None
