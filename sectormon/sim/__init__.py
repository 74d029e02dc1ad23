"""sectormon.sim."""
