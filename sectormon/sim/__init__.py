"""The simulated A64FX: per-core L1D and per-CMG L2 with sector partitioning, a stream prefetcher,
a timing and an energy model, kernels and din traces as workloads.

Modules: :mod:`config` (every parameter), :mod:`cache` (one sectored LRU cache), :mod:`stream`
(the access records a thread runs), :mod:`thread` (one thread's hot loop, the Python reference),
:mod:`counters` (the counters derived from its tallies, per thread and CMG), :mod:`engine` (the
machine: threads and CMGs in quanta, on the compiled or the Python core), :mod:`events` (A64FX raw
codes -> model counters), :mod:`kernels`, :mod:`trace`, :mod:`objects` (a trace's named data
objects), :mod:`workload`, :mod:`advisor` (the sector advisor over all of them). The counter source
over it is :mod:`sectormon.sources.sim.source`.
Pure Python, no third-party dependency; docs/sim.md documents the model and its limits. Importing
the package imports none of them (a command pays only for what it uses).
"""
