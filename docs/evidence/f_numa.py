#!/usr/bin/env python3
"""Experiment (f), Red Hat reference architecture §4.2: memory locality with and without
AllowedMemoryNodes.

A tenant on node 1's CPUs (`cpus: "1,5"`) allocates ALLOC of memory while node 1 is
nearly full, as a busy host's node is: most of it held by someone else (a huge-page ballast
on node 1, lab.ballast), the rest page cache (a file of ALLOC + 64 MiB read by a job on
node 1's CPUs), so that 64 MiB stay free. `bound` is slicectl's default,
`numa: local` (AllowedMemoryNodes=1): the kernel must make room on node 1 (it reclaims the
page cache). `unbound` (`numa: any`) pins only the CPUs: the kernel takes the nearest free
memory, on other nodes (zone_reclaim_mode 0, the default). Where the tenant's memory ended
up is read from its memory.numa_stat (`anon N0=… N1=…`).

Under TCG every guest node is the same host RAM, so remote access costs nothing here and
latency or throughput would tell nothing; locality, what the kernel decided, is real.

    tests/testbed/run docs/evidence/f_numa.py [--quick]     (docs/evidence/run f)

Writes f_numa.csv: setup, run, node, anon_mib, local (1 for the tenant's own node).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(os.environ.get("SLICECTL_CHECKOUT", Path(__file__).parent.parent
                                           .parent)) / "docs" / "evidence"))
import lab  # noqa: E402

MiB = 1 << 20
NODE = 1
ALLOC = 128 * MiB
CACHE = ALLOC + 64 * MiB  # page cache on node 1, reclaimable: room for ALLOC when bound
FREE = 64 * MiB  # what stays free on node 1
SETUPS = {"bound": "local", "unbound": "any"}
RUNS, QUICK_RUNS = 3, 1
HOG_FILE = Path("/var/tmp/ev-node-filler")
# Allocate and touch ALLOC bytes, say so, and hold them.
ALLOCATE = ("import sys, time\nb = bytearray({size})\nfor i in range(0, len(b), 4096):\n"
            "    b[i] = 1\nopen(sys.argv[1], 'w').write('done')\ntime.sleep(3600)\n")


@dataclass(frozen=True)
class Row:
    setup: str  # bound (AllowedMemoryNodes=1) or unbound
    run: int
    node: int
    anon_mib: float  # the tenant's anonymous memory on this node
    local: int  # 1: the node of the tenant's CPUs


@dataclass(frozen=True)
class Result:
    locality_bound: float  # share of the tenant's memory on its own node, AllowedMemoryNodes
    locality_unbound: float  # the same with the CPUs pinned only


def cache_on(node: int) -> None:
    """Page cache on `node` (all but FREE of its free memory), read by a job on its CPUs in
    system.slice: the kernel's local allocation puts it there while the node has free memory.
    A file of a node's whole free memory took too long to read under TCG, so the huge-page
    ballast holds the rest. The reader is `dd` to /dev/null: the earlier reader, `cat`, wrote
    the file to its standard output, which systemd-run sends to the journal, and 190 MiB of it
    did not get through journald in 600 s (with `numactl --membind`) nor in 300 s (with
    `--cpunodebind`)."""
    size = lab.node_meminfo(node, "MemFree") - FREE
    lab.run("truncate", "-s", str(size), str(HOG_FILE))
    lab.run("systemd-run", "--wait", "--quiet", "--collect", f"--unit={lab.PREFIX}filler",
            "--slice=system.slice", "numactl", f"--cpunodebind={node}",
            "dd", f"if={HOG_FILE}", "of=/dev/null", "bs=1M", "status=none", timeout=300)


def node_memory(node: int) -> str:
    """A node's free memory and page cache, for the log."""
    free, cache = (lab.node_meminfo(node, k) / MiB for k in ("MemFree", "FilePages"))
    return f"node {node}: {free:.0f} MiB free, {cache:.0f} MiB page cache"


def run_once(setup: str, run: int) -> list[Row]:
    cpus = ",".join(map(str, lab.numa_nodes()[NODE]))
    text = f'version: 1\ntenants:\n  db: {{cpus: "{cpus}", numa: {SETUPS[setup]}}}\n'
    lab.apply(lab.tenants_file(f"f_{setup}", text))
    lab.drop_caches()
    with lab.ballast({NODE: CACHE + FREE}) as taken:
        print(f"f_numa: {setup} run {run}: ballast {taken / MiB:.0f} MiB, "
              f"{node_memory(NODE)}", flush=True)
        cache_on(NODE)
        print(f"f_numa: {setup} run {run}: page cache read, {node_memory(NODE)}", flush=True)
        script, done = lab.WORK / "allocate.py", lab.WORK / "allocated"
        script.write_text(ALLOCATE.format(size=ALLOC))
        done.unlink(missing_ok=True)
        lab.start("allocate", "tenants-db.slice", f"exec python3 {script} {done}")
        deadline = time.monotonic() + 300
        while not done.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the allocation did not finish in 300 s")
            time.sleep(0.5)
        anon = lab.numa_stat(lab.control_group("tenants-db.slice"))
        print(f"f_numa: {setup} run {run}: allocated, {node_memory(NODE)}; the tenant's anon "
              f"memory per node (MiB): { {n: round(b / MiB) for n, b in anon.items()} }",
              flush=True)
        lab.stop_units()
    return [Row(setup, run, node, size / MiB, int(node == NODE))
            for node, size in sorted(anon.items())]


def main(quick: bool = False) -> Result:
    rows: list[Row] = []
    with lab.experiment():
        try:
            for run in range(1, (QUICK_RUNS if quick else RUNS) + 1):
                for setup in SETUPS:
                    rows += run_once(setup, run)
                    lab.reset()
        finally:
            HOG_FILE.unlink(missing_ok=True)
    lab.write_csv("f_numa", rows)

    def locality(setup: str) -> float:
        mine = [r for r in rows if r.setup == setup]
        return sum(r.anon_mib for r in mine if r.local) / sum(r.anon_mib for r in mine)
    result = Result(locality("bound"), locality("unbound"))
    print(f"f_numa: {result}", flush=True)
    return result


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
