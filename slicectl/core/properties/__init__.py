"""The property table: every tenants.yaml setting and the systemd property it becomes
(properties), the kinds of values and their forms (kinds), which systemd version takes each key
(versions), and the live values on D-Bus and in cgroup files (live_values), with unit files
read as systemd reads them (unitfile), cpuset partitions as the kernel reports them
(partition) and the host noise kept off their isolated CPUs (isolation)."""
