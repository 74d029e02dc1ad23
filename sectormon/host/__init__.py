"""What this host is and runs: topology, host facts, processes, CPU time (sysfs and procfs)."""
