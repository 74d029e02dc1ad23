"""Event catalogs, groups and metric formulas as validated data (YAML), and the way to them.

Every A64FX fact (codes, scopes, nJ factors, errata formulas) lives in ``a64fx.yaml``; adding a CPU
is adding a YAML profile. :mod:`.resolve` picks a profile and reads it, :mod:`.build` turns its
YAML (:mod:`.compose`) into a :class:`Profile` that :mod:`.validate` has judged, :mod:`.codec`
writes and reads it in a recording's header, and :mod:`.problems` reports what is wrong with it.
:mod:`.expr` is the formula language the metrics are written in.

Importing the package imports none of them: a command that needs only the records
(:mod:`.model`) does not pay for the YAML reader (``benchmarks/bench_start.py``).
"""
