"""What this host is and runs, read from sysfs and procfs under one root (``roots``): topology and
host facts, the threads and processes of a target, their CPU time and their mappings."""
