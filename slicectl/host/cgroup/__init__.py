"""cgroupfs and procfs read for monitoring and advice: a unit's cgroup files read once
(cgroupfs), the sampler that keeps them open (sampler) and learns by inotify which changed
(inotify), samples recorded into SQLite (recorder), the readers behind lint --live,
contention and recommend (readers), and which cgroup hierarchy the host runs, from its mount
table (mounts: cgroup v1 and hybrid hosts are refused)."""
