"""The Grafana dashboard's queries (for the tests that check them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboards" / "sectormon-job.json"


def dashboard_queries() -> list[str]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    queries = [t["expr"] for p in data["panels"] for t in p.get("targets", [])]
    queries += [v["query"]["query"] for v in data["templating"]["list"] if v["type"] == "query"]
    return queries
