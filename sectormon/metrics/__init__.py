"""Metrics: the formula language, rolling windows and the engine that turns readings into frames.

``parse`` compiles one formula; :class:`MetricsEngine` consumes slices and marks and produces
frames; :func:`evaluate_metrics` evaluates a profile's metrics over one set of counts (for the
simulator's summary, compare and the fapp report).
"""

from __future__ import annotations

from sectormon.metrics.engine import MetricsEngine
from sectormon.metrics.expr import Expr, ExprError, parse
from sectormon.metrics.formulas import MetricSet, evaluate_metrics

__all__ = ["Expr", "ExprError", "MetricSet", "MetricsEngine", "evaluate_metrics", "parse"]
