"""The counting thread: the sampler, the rotation plan, proxy stand-ins, inherited rows."""
