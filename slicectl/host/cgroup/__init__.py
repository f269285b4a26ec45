"""cgroupfs and procfs read for monitoring and advice: a unit's cgroup files read once
(cgroupfs), the sampler that keeps them open (sampler) and learns by inotify which changed
(inotify), samples recorded into SQLite (recorder), and the readers behind lint --live,
contention and recommend (readers)."""
