"""Metrics: rolling windows, the engine that turns readings into frames, and frame building.

:class:`MetricsEngine` consumes slices and marks and produces frames; :func:`evaluate_metrics`
evaluates a profile's metrics over one set of counts (the simulator's summary, compare, fapp).
"""

from __future__ import annotations

from sectormon.metrics.engine import MetricsEngine
from sectormon.metrics.formulas import MetricSet, evaluate_metrics

__all__ = ["MetricSet", "MetricsEngine", "evaluate_metrics"]
