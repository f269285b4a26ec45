"""CPU shares under contention: what each entity of a cgroup tree gets when all are busy
(shares), and what each tenant is guaranteed when the whole host is busy (contention)."""
