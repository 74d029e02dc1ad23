"""sectormon: live monitor for hardware performance counters, first for the A64FX sector cache."""

__version__ = "0.1.0"
