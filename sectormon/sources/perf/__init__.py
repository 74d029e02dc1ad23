"""The live perf source: targets, counter groups, sampling beside counting."""
