"""The files slicectl keeps on the host: the unit directory it owns part of, with its manifest
(unitdir) and its one lock, and tenants.yaml's (lock), how every file of slicectl's is written
and put back (owned: its digest, atomic writes, the undo journal), whether root may trust a
file (trust), paths inside another system's tree (rootpath), the one reader
and writer of tenants.yaml (tenantsfile),
the balancer's state file (balance_state_file), what apply changed to keep noise off isolated
CPUs (isolation_record), the generator's last good placement (placement_record) and the
unit-file templates every render is handed (templates)."""
