"""The live perf source: targets and how a command is launched, counting units from threads,
counter groups, and sampling beside counting."""
