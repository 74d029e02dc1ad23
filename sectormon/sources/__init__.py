"""Counter sources: what the sampler opens and reads, on real hardware or on the simulated A64FX.

``base.py`` holds the protocol the sampler drives; ``perf/`` counts real threads, processes and
CPUs through perf_event_open, ``sim/`` counts the cache model, and each has its sample feed for
``--sample``. Everything above this package sees the same readings whichever source made them.
"""
