"""Metrics: rolling windows, the engine that turns readings into frames, and frame building.

:class:`MetricsEngine` consumes slices and marks and produces frames; :func:`evaluate_metrics`
evaluates a profile's metrics over one set of counts (the simulator's summary, compare, fapp).
Importing the package imports neither: a command pays only for the modules it uses.
"""
