"""fapp cpupa data: the reader, Fujitsu's CPU PA report, the PMU document's section-3 metrics.

``run_metrics(path)`` is the entry point for ``sectormon compare``; ``analyze(path)`` gives the
report and section-3 tables; ``to_recording`` turns a measurement into a sectormon recording.
"""

from __future__ import annotations

from sectormon.fapp.analysis import Analysis, analyze, run_metrics

__all__ = ["Analysis", "analyze", "run_metrics"]
