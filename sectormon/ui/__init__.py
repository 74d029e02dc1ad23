"""sectormon.ui."""
