"""sectormon.perf."""
