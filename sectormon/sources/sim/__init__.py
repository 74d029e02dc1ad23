"""The simulated A64FX as a counter source and its samples."""
