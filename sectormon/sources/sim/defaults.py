"""The simulated source's defaults, apart from the source: the monitor's parser shows them in its
help, and importing the source for that (the simulator, its kernels, the region marks) would slow
every start of the monitor, ``--pid`` counting included, by a tenth.
"""

from __future__ import annotations

SIM_DEFAULT_TIMESLICE = 10e-6
SIM_DEFAULT_INTERVAL = 250e-6
TUI_PACE = 0.5  # wall seconds per frame interval in the TUI: a monitor's refresh, not a flood
DEFAULT_THREADS = 2
DEFAULT_WARMUP = 50e-6  # simulated seconds: the kernels' cold misses are over by then
