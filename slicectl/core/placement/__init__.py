"""The host's NUMA topology (topology) and the tenants placed on it, CPUs and memory nodes
per tenant (placement), with its parts: which node each tenant lands on (packing), who holds
which CPU and whole cores (cores), CPUs the firmware lists twice (shared_cpus), which CPUs
share a last-level cache (cache_groups), and memory protection that must fit (protection)."""
