"""Fixtures these tests share with the folder they came from (defined there, re-exported here)."""

from __future__ import annotations

from tests.perf.conftest import child  # noqa: F401
