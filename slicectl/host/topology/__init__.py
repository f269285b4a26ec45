"""Where the NUMA topology comes from: a sysfs tree or an export file (sysfs), with the CPUs
that share a last-level cache (cpu_caches)."""
