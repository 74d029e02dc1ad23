"""Real programs on the simulated A64FX: ``sectormon sim -- CMD ARGS`` (docs/sim.md, "Real programs").

QEMU's user-mode emulator runs the program with sectormon's TCG plugin (``plugin.c``), which hands
every load and store, per thread, with the thread's instruction count, to sectormon in batches
through a shared-memory ring (``ring.h``). The compiled consumer (``_capture.c``) keeps each thread
as a file of run-length records (``records.h``), and a run of the model reads them back
(``reader.c``) as packed records the compiled core consumes directly: no access passes through
Python one at a time.

- :mod:`.target`: which QEMU runs the binary (its ELF header), and what is missing to run it.
- :mod:`.capture`: run the program under QEMU, its stdio and exit status its own, and capture it.
- :mod:`.workload`: the captured threads as the simulator's workload, flagged by data object.
- :mod:`.live_threads`: a running program's threads that wait or have ended, so that they do not
  hold the simulated machine.
- :mod:`.symbols` and :mod:`.heap`: the data objects' names: global variables from the ELF
  symbols; heap blocks by allocation site and thread stacks, which the preloaded ``shim.c``
  reports through the ring (``blocks.h``: the reader's live blocks; ``marks.h``: marker names).
- :mod:`.live_objects`: a running program's heap sites and stacks, named as its threads meet them.
"""
