"""Immutable records passed between the layers: readings, samples, hot spots, frames."""
