"""What the monitors compute, without I/O: the cgroup files slicectl samples and how each
parses (cgroupfiles), what one read of the tree holds (samples), per-slice metrics from two
samples (metrics) with a slice's cpuset partition (cpuset_partition), the one table of those
metrics and every output of each (fields), and the live NUMA map next to the plan (numa_map)."""
