"""Fixtures of the attribution tests."""

from __future__ import annotations

import pytest

from tests.attribution.attribution_helpers import Program, build_program


@pytest.fixture(scope="session")
def program(tmp_path_factory: pytest.TempPathFactory) -> Program:
    """The demo C program, built with -g (and a stripped copy)."""
    return build_program(tmp_path_factory.mktemp("elf"))
