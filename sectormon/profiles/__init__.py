"""sectormon.profiles."""
