"""The ctypes perf_event_open wrapper (knows nothing of A64FX: every CPU fact lives in profiles/).

The package is the one place that talks to the kernel's perf interface: the ABI as ctypes data, the
syscall binding, typed errors, event spec parsing, counter groups, probing, and sampling events with
their ring buffers and record parser. It imports the standard library and ``sectormon.errors`` only,
so every A64FX fact (codes, scopes, errata) stays in the profiles. Import the modules themselves:
this file imports nothing, so ``sectormon stat``'s quick start reads :mod:`.abi` without the
errors' and events' dataclasses.
"""
