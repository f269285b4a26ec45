"""The kernel's own work steered off isolated CPUs: IRQ affinities under procfs and the unbound
workqueues' mask under sysfs, read and written under a root, with a process's environment
(kernelfiles)."""
