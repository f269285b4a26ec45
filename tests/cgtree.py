"""The test suite's fixture cgroup trees, built with slicectl.demo.cgtree (the synthetic trees
the demo moves): a tree whose counters move between samples (MovingTree), the static tree
under tests/fixtures/cgroup and the NUMA trees.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from slicectl.core.cpulist import format_cpulist
from slicectl.demo.cgtree import FakeCgroup, make_root, write_files


@dataclass
class Motion:
    """How a cgroup's counters move per second of simulated time."""

    cpu_cores: float = 0.0
    throttled_fraction: float = 0.0  # of the quota periods
    psi_some: dict[str, float] = field(default_factory=dict)  # resource -> % of time stalled
    psi_full: dict[str, float] = field(default_factory=dict)
    memory_bytes: int = 0
    events: dict[str, int] = field(default_factory=dict)  # per advance() call
    io_read_bps: int = 0  # bytes read and written per second (io.stat)
    io_write_bps: int = 0


class MovingTree:
    """A fake cgroup tree whose counters advance between samples."""

    def __init__(self, root: Path, cpus: str = "0-7", mems: str = "0-1") -> None:
        self.root = root
        self.cpus = cpus
        self.mems = mems
        self.cgroups: dict[str, FakeCgroup] = {}
        self.motion: dict[str, Motion] = {}
        make_root(root, cpus, mems)

    def add(self, path: str, motion: Motion | None = None, **values: object) -> FakeCgroup:
        """Create a cgroup (and write it) with the given starting values."""
        cg = FakeCgroup(path, cpus=self.cpus, mems=self.mems, host_mems=self.mems)
        for key, value in values.items():
            setattr(cg, key, value)
        self.cgroups[path] = cg
        self.motion[path] = motion or Motion()
        write_files(self.root / path, cg.files())
        return cg

    def advance(self, seconds: float) -> None:
        """Move every cgroup's counters forward by `seconds` and rewrite the files."""
        for path, cg in self.cgroups.items():
            m = self.motion[path]
            usec = seconds * 1e6
            cg.usage_usec += int(m.cpu_cores * usec)
            quota, _, period = cg.cpu_max.partition(" ")
            if quota != "max":
                periods = int(usec / int(period))
                cg.nr_periods += periods
                cg.nr_throttled += int(periods * m.throttled_fraction)
                cg.throttled_usec += int(usec * m.throttled_fraction / 2)
            for res, pct in m.psi_some.items():
                cg.psi[res][0] = pct
                cg.psi[res][1] += pct / 100 * usec
            for res, pct in m.psi_full.items():
                cg.psi[res][2] = pct
                cg.psi[res][3] += pct / 100 * usec
            cg.memory_current += m.memory_bytes
            cg.anon += m.memory_bytes
            for name, n in m.events.items():
                cg.events[name] += n
            cg.io_rbytes += int(m.io_read_bps * seconds)
            cg.io_wbytes += int(m.io_write_bps * seconds)
            write_files(self.root / path, cg.files())

    def remove(self, path: str) -> None:
        """Delete a cgroup directory, as systemd does when a slice stops."""
        shutil.rmtree(self.root / path)
        del self.cgroups[path]

    def recreate(self, path: str) -> None:
        """Replace a cgroup by a new directory of the same name (so a new inode)."""
        cg = self.cgroups[path]
        fresh = self.root / (path + ".new")
        write_files(fresh, cg.files())  # both exist at once, so the inodes must differ
        shutil.rmtree(self.root / path)
        fresh.rename(self.root / path)


def build_fixture(root: Path) -> None:
    """The static tree under tests/fixtures/cgroup (regenerate: `python tests/cgtree.py`)."""
    tree = MovingTree(root, cpus="0-15")
    tree.add("init.scope", tasks=1, memory_current=9 << 20, anon=3 << 20, file=5 << 20,
             active_file=3 << 20, inactive_file=2 << 20)  # fmt: skip
    tree.add("system.slice", cpu_weight=50, memory_high=str(2 << 30), memory_max=str(3 << 30),
             usage_usec=987654321, tasks=57)  # fmt: skip
    tree.add("system.slice/cron.service", memory_max=str(512 << 20), cpu_max="50000 100000")
    tree.add("user.slice", memory_max=str(2 << 30), usage_usec=55555555, tasks=12)
    tree.add("user.slice/user-1000.slice", usage_usec=44444444, tasks=9)
    tree.add("tenants.slice", usage_usec=7777777777, tasks=0)
    tree.add(
        "tenants.slice/tenants-db1.slice", cpus="0-3,8-11", mems="0", cpu_weight=200,
        cpu_max="600000 100000", nr_periods=50000, nr_throttled=1200, throttled_usec=3456789,
        usage_usec=5555555555, memory_current=20 << 30, memory_low=str(16 << 30),
        memory_high=str(22 << 30), memory_max=str(24 << 30), swap_max="0",
        anon=16 << 30, file=4 << 30, active_file=3 << 30, inactive_file=1 << 30, tasks=212,
        psi={"cpu": [1.5, 900000, 0.5, 300000], "memory": [0.25, 120000, 0.1, 50000],
             "io": [3.0, 4000000, 2.0, 2500000]},
    )  # fmt: skip
    tree.add(
        "tenants.slice/tenants-web.slice", controllers="cpu io memory pids", cpu_weight=100,
        usage_usec=1111111111, memory_current=3 << 30, memory_max=str(4 << 30), tasks=48,
    )  # fmt: skip


# Why the kernel refuses the partition of tenants-broken.slice in `build_partition_fixture`.
NOT_EXCLUSIVE = "Cpu list in cpuset.cpus not exclusive"


def build_partition_fixture(root: Path) -> MovingTree:
    """A tree of tenants with cpuset partitions (`cpuset_partition:`) as the kernel shows
    them: a valid isolated one (iso, CPUs 2-3), one it refused (broken, 4-5), a valid one
    that lost CPU 1 of its 0-1 (lacking: Linux 7.0 gave it to a sibling claiming it), and
    a tenant that is no partition (plain, 6-7)."""
    tree = MovingTree(root, cpus="0-7")
    tree.add("system.slice")
    tree.add("tenants.slice")
    tree.add("tenants.slice/tenants-iso.slice", cpus="2-3", partition="isolated")
    tree.add("tenants.slice/tenants-broken.slice", cpus="4-5",
             partition=f"isolated invalid ({NOT_EXCLUSIVE})")
    tree.add("tenants.slice/tenants-lacking.slice", cpus="0-1", cpus_effective="0",
             partition="root")
    tree.add("tenants.slice/tenants-plain.slice", cpus="6-7")
    return tree


# Hosts of the NUMA fixture trees, by number of nodes: sysfs fixtures under fixtures/sysfs.
NUMA_HOSTS = {1: "single-node", 2: "xeon-2s-smt", 4: "nehalem-ex-4node"}
MIB = 1 << 20


def build_numa_fixture(root: Path, node_cpus: dict[int, frozenset[int]]) -> MovingTree:
    """A tree whose slices hold memory.numa_stat on the host `node_cpus` describes (1, 2 or 4
    nodes, from `NUMA_HOSTS`): what each slice's local and outside shares should be is in its
    name and in tests/core/monitor/test_metrics.py."""
    nodes = sorted(node_cpus)
    all_cpus = format_cpulist(frozenset().union(*node_cpus.values()))
    tree = MovingTree(root, cpus=all_cpus, mems=format_cpulist(nodes))

    def cpus(*ns: int) -> str:
        return format_cpulist(frozenset().union(*(node_cpus[n] for n in ns)))

    even = {n: (64 * MIB // len(nodes), 32 * MIB // len(nodes)) for n in nodes}
    tree.add("init.scope", numa=even)
    tree.add("system.slice", numa=even)
    tree.add("tenants.slice", numa=even)
    # Bound to node 0, every page there: 100 % local, nothing outside.
    tree.add("tenants.slice/tenants-local.slice", numa={0: (200 * MIB, 56 * MIB)},
             cpus=cpus(0), mems="0")
    # Nothing charged yet: the shares are unknown.
    tree.add("tenants.slice/tenants-empty.slice", numa={}, anon=0, file=0,
             cpus=cpus(0), mems="0")
    if len(nodes) > 1:
        # Moved from node 0 to node 1 (a profile switch): 3/4 of its memory still on node 0,
        # which it may no longer use: 25 % local, 75 % outside.
        tree.add("tenants.slice/tenants-moved.slice",
                 numa={0: (96 * MIB, 96 * MIB), 1: (64 * MIB, 0)}, cpus=cpus(1), mems="1")
        # `numa: any`: node 0's CPUs, every node's memory, half of it on the last node.
        tree.add("tenants.slice/tenants-any.slice",
                 numa={0: (64 * MIB, 0), nodes[-1]: (32 * MIB, 32 * MIB)},
                 cpus=cpus(0), mems=format_cpulist(nodes))
    if len(nodes) > 2:
        # Spread over nodes 0 and 1, memory on both and a little on node 2: 90 % local.
        tree.add("tenants.slice/tenants-spread.slice",
                 numa={0: (90 * MIB, 0), 1: (90 * MIB, 0), 2: (20 * MIB, 0)},
                 cpus=cpus(0, 1), mems="0-1")
    return tree


if __name__ == "__main__":
    import sys

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/cgroup")
    shutil.rmtree(target, ignore_errors=True)
    build_fixture(target)
