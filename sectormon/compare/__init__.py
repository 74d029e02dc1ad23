"""Baseline vs tuned run: the comparison itself (runs), loading its sides, and rendering it."""
