"""Fixtures for the perf tests: a controllable child process and a stand-in topology."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.perf.perf_helpers import Child, FakeTopology, host_topology


@pytest.fixture
def child() -> Iterator[Child]:
    proc = Child()
    try:
        yield proc
    finally:
        proc.kill()


@pytest.fixture
def topology() -> FakeTopology:
    return host_topology()
