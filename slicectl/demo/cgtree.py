"""Synthetic cgroup v2 trees: directories of realistic interface files under a root folder,
for the demo (slicectl.demo.scenario) and the tests (whose moving trees, tests/cgtree.py, are
built of these).

Files are rewritten in place (same inode), as the kernel does, so a sampler holding them open
sees new values through `pread`. A recreated cgroup gets a new directory inode.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from slicectl.core.cpulist import parse_cpulist

ALL_CONTROLLERS = "cpuset cpu io memory hugetlb pids rdma misc"


@dataclass
class FakeCgroup:
    """Counters and limits of one fake cgroup; strings are written as the kernel shows them."""

    path: str
    controllers: str = ALL_CONTROLLERS
    usage_usec: int = 0
    nr_periods: int = 0
    nr_throttled: int = 0
    throttled_usec: int = 0
    cpu_max: str = "max 100000"
    cpu_weight: int = 100
    cpus: str = "0-7"
    mems: str = "0-1"
    # cpuset.cpus.partition as the kernel shows it ("isolated invalid (<reason>)" when it
    # refuses one), and cpuset.cpus.effective when it is not `cpus` (a partition that lost
    # CPUs); None: `cpus`
    partition: str = "member"
    cpus_effective: str | None = None
    memory_current: int = 64 << 20
    memory_low: str = "0"
    memory_min: str = "0"
    memory_high: str = "max"
    memory_max: str = "max"
    swap_current: int = 0
    swap_max: str = "max"
    anon: int = 40 << 20
    file: int = 20 << 20
    active_file: int = 12 << 20
    inactive_file: int = 8 << 20
    refault_anon: int = 0
    refault_file: int = 0
    events: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("low", "high", "max", "oom", "oom_kill"), 0)
    )
    # resource -> [some avg10, some total µs, full avg10, full total µs]
    psi: dict[str, list[float]] = field(
        default_factory=lambda: {r: [0.0, 0.0, 0.0, 0.0] for r in ("cpu", "memory", "io")}
    )
    tasks: int = 3
    # cgroup.events: whether a task is in it or below it (a slice holding busy services is
    # populated with no task of its own)
    populated: bool = True
    # io.stat: bytes read and written on device 8:0 (no line until there was IO)
    io_rbytes: int = 0
    io_wbytes: int = 0
    # The host's memory nodes: memory.numa_stat has a column for each.
    host_mems: str = "0-1"
    # node -> (anon, file) bytes in memory.numa_stat; None: all of `anon` and `file` on the
    # first node of `mems`.
    numa: dict[int, tuple[int, int]] | None = None

    def files(self) -> dict[str, str]:
        """The interface files this cgroup shows, given its enabled controllers."""
        on = set(self.controllers.split())
        user = self.usage_usec * 7 // 10
        cpu_stat = (
            f"usage_usec {self.usage_usec}\nuser_usec {user}\n"
            f"system_usec {self.usage_usec - user}\n"
        )
        out = {"cgroup.controllers": self.controllers + "\n",
               "cgroup.events": f"populated {int(self.populated)}\n"}
        for res, (s10, stot, f10, ftot) in self.psi.items():
            out[f"{res}.pressure"] = (
                f"some avg10={s10:.2f} avg60={s10 * 0.8:.2f} avg300={s10 * 0.5:.2f} "
                f"total={int(stot)}\n"
                f"full avg10={f10:.2f} avg60={f10 * 0.8:.2f} avg300={f10 * 0.5:.2f} "
                f"total={int(ftot)}\n"
            )
        if "cpu" in on:
            cpu_stat += (
                f"nr_periods {self.nr_periods}\nnr_throttled {self.nr_throttled}\n"
                f"throttled_usec {self.throttled_usec}\nnr_bursts 0\nburst_usec 0\n"
            )
            out["cpu.max"] = self.cpu_max + "\n"
            out["cpu.weight"] = f"{self.cpu_weight}\n"
            out["cpu.weight.nice"] = "0\n"
        out["cpu.stat"] = cpu_stat
        if "io" in on:
            out["io.stat"] = (f"8:0 rbytes={self.io_rbytes} wbytes={self.io_wbytes} rios=1 "
                              "wios=1 dbytes=0 dios=0\n"
                              if self.io_rbytes or self.io_wbytes else "")
        if "cpuset" in on:
            out["cpuset.cpus"] = self.cpus + "\n"
            out["cpuset.cpus.effective"] = (self.cpus_effective or self.cpus) + "\n"
            out["cpuset.cpus.partition"] = self.partition + "\n"
            out["cpuset.mems"] = self.mems + "\n"
            out["cpuset.mems.effective"] = self.mems + "\n"
        if "memory" in on:
            out.update(
                {
                    "memory.current": f"{self.memory_current}\n",
                    "memory.low": self.memory_low + "\n",
                    "memory.min": self.memory_min + "\n",
                    "memory.high": self.memory_high + "\n",
                    "memory.max": self.memory_max + "\n",
                    "memory.swap.current": f"{self.swap_current}\n",
                    "memory.swap.max": self.swap_max + "\n",
                    "memory.stat": self._memory_stat(),
                    "memory.numa_stat": self._numa_stat(),
                    "memory.events": "".join(f"{k} {v}\n" for k, v in self.events.items())
                    + "oom_group_kill 0\n",
                }
            )
        if "pids" in on:
            out["pids.current"] = f"{self.tasks}\n"
            out["pids.max"] = "max\n"
        return out

    def _memory_stat(self) -> str:
        rows = [
            ("anon", self.anon), ("file", self.file), ("kernel", 1 << 20),
            ("kernel_stack", 98304), ("pagetables", 262144), ("sec_pagetables", 0),
            ("percpu", 4096), ("sock", 0), ("vmalloc", 0), ("shmem", 0), ("zswap", 0),
            ("zswapped", 0), ("file_mapped", self.file // 4), ("file_dirty", 0),
            ("file_writeback", 0), ("swapcached", 0), ("anon_thp", 0), ("file_thp", 0),
            ("shmem_thp", 0), ("inactive_anon", self.anon), ("active_anon", 0),
            ("inactive_file", self.inactive_file), ("active_file", self.active_file),
            ("unevictable", 0), ("slab_reclaimable", 65536), ("slab_unreclaimable", 131072),
            ("slab", 196608), ("workingset_refault_anon", self.refault_anon),
            ("workingset_refault_file", self.refault_file), ("workingset_activate_anon", 0),
            ("workingset_activate_file", 0), ("workingset_restore_anon", 0),
            ("workingset_restore_file", 0), ("workingset_nodereclaim", 0), ("pgscan", 0),
            ("pgsteal", 0), ("pgfault", 12345), ("pgmajfault", 12), ("pgrefill", 0),
            ("pgactivate", 0), ("pgdeactivate", 0), ("pglazyfree", 0), ("pglazyfreed", 0),
            ("thp_fault_alloc", 0), ("thp_collapse_alloc", 0),
        ]  # fmt: skip
        return "".join(f"{k} {v}\n" for k, v in rows)


    def _numa_stat(self) -> str:
        """memory.numa_stat as kernel 6.1 shows it (bytes per node), the rows we read first."""
        nodes = sorted(parse_cpulist(self.host_mems))
        placed = self.numa
        if placed is None:
            placed = {min(parse_cpulist(self.mems)): (self.anon, self.file)}
        anon = {n: a for n, (a, _) in placed.items()}
        file = {n: f for n, (_, f) in placed.items()}
        rows = [("anon", anon), ("file", file), ("kernel_stack", {}), ("pagetables", {}),
                ("shmem", {}), ("file_mapped", {}), ("file_dirty", {}), ("file_writeback", {}),
                ("swapcached", {}), ("anon_thp", {}), ("file_thp", {}), ("shmem_thp", {}),
                ("inactive_anon", anon), ("active_anon", {}), ("inactive_file", {}),
                ("active_file", file), ("unevictable", {}), ("slab_reclaimable", {}),
                ("slab_unreclaimable", {}), ("workingset_refault_anon", {}),
                ("workingset_refault_file", {}), ("workingset_activate_anon", {}),
                ("workingset_activate_file", {}), ("workingset_restore_anon", {}),
                ("workingset_restore_file", {}), ("workingset_nodereclaim", {})]
        return "".join(
            f"{key} " + " ".join(f"N{n}={values.get(n, 0)}" for n in nodes) + "\n"
            for key, values in rows
        )


def write_files(directory: Path, files: dict[str, str]) -> None:
    """Write files in place (keeping inodes, like kernfs) and create missing ones."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        fd = os.open(directory / name, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, text.encode(), 0)
            os.ftruncate(fd, len(text.encode()))
        finally:
            os.close(fd)


def make_root(root: Path, cpus: str = "0-7", mems: str = "0-1") -> None:
    """The root cgroup's own files (it has no limits, only stats and the controller lists)."""
    write_files(
        root,
        {
            "cgroup.controllers": ALL_CONTROLLERS + "\n",
            "cgroup.subtree_control": "cpuset cpu io memory pids\n",
            "cgroup.procs": "1\n",
            "cpuset.cpus.effective": cpus + "\n",
            "cpuset.mems.effective": mems + "\n",
            "cpu.stat": "usage_usec 123456789\nuser_usec 100000000\nsystem_usec 23456789\n",
            "cpu.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        },
    )
