"""Jobs: several nodes' recordings seen as one run (``sectormon merge``, job replay and compare).

:mod:`.nodes` aligns the nodes by their wall-clock start and says which started late or ended
early; :mod:`.jobfile` writes and reads a merged job file; :mod:`.combine` turns the nodes' frames
of one interval into a job frame (job totals, and each node's scopes under its host);
:mod:`.replay` plays a job as frames.
"""
