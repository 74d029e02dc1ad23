"""OpenMetrics: a session's newest frame served for Prometheus (and PCP's pmdaopenmetrics) to scrape.

:mod:`.names` turns a profile's metrics and units into OpenMetrics names, :mod:`.collector`
renders a frame as metric families, :mod:`.server` serves them over HTTP, and :mod:`.options`
is the command-line side (``--openmetrics [HOST:]PORT``).
"""
