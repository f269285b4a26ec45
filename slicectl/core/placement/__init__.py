"""Placement: the host's NUMA topology (topology) and tenants laid out on it, CPUs and
memory nodes per tenant (placement), with its parts: which node each tenant lands on
(packing), who holds which CPU and whole cores (cores), CPUs the firmware lists twice
(shared_cpus), and memory protection that must fit (protection)."""
