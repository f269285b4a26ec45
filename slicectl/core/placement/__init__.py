"""The host's NUMA topology (topology) and the tenants placed on it, CPUs and memory nodes
per tenant (placement, its result in layout), with its parts: which node each tenant lands on
(packing), who holds which CPU and whole cores (cores), the fewest moves that keep every local
tenant on one node (repack), why a tenant got its CPUs (explain), CPUs the firmware lists
twice (shared_cpus), which CPUs share a last-level cache (cache_groups), and memory protection
that must fit (protection)."""
