#!/usr/bin/env python3
"""Experiment (d), LinkedIn, 2016: memory_low keeps a tenant's page cache under global pressure.

Two identical tenants re-read a file of an eighth of RAM over and over (their working set is
page cache); `kept` has memory_low above it, `lost` has none. The rest of the host's free
memory is then taken, node by node (a huge-page ballast, as the rest of a busy host would
hold it; lab.ballast), and a
housekeeping job in system.slice streams a file of twice the RAM through the page cache (001:
the unbounded housekeeping that evicts the tenants' cache). The hog stops once the
unprotected tenant has read PRESSURE evicted pages back (the full run: 4 × PRESSURE); the
file only bounds the work if the pressure never comes.
Every second: each tenant's page cache (memory.stat `file`)
and its refaults (`workingset_refault_file`: pages evicted and read back).

    tests/testbed/run docs/evidence/d_pagecache.py [--quick]     (docs/evidence/run d)

Writes d_pagecache.csv: t, phase, tenant, page_cache_mib, refaults (since the hog started).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(os.environ.get("SLICECTL_CHECKOUT", Path(__file__).parent.parent
                                           .parent)) / "docs" / "evidence"))
import lab  # noqa: E402

MiB = 1 << 20
NAMES = ("kept", "lost")
HOG_RAM_MULTIPLE = 2.0
PRESSURE = 4096  # pages tenant `lost` reads back before the (quick) run stops the hog
KEEP_FREE = 256 * MiB  # free memory the ballast leaves (spread over the nodes)
AFTER = 5.0  # seconds recorded after the hog
WARM_TIMEOUT = 180.0


@dataclass(frozen=True)
class Sample:
    t: float
    phase: str  # warm, ballast, hog, after
    tenant: str
    page_cache_mib: float
    refaults: int  # workingset_refault_file since the hog started


@dataclass(frozen=True)
class Result:
    refaults_kept: int
    refaults_lost: int
    cache_kept_mib: float  # page cache at the end of the hog
    cache_lost_mib: float
    working_set_mib: float  # each tenant's file
    low_events_kept: int  # memory.events `low` of kept during the hog: reclaimed though
    #                       under memory_low (the kernel's own count of a breach)


CGROUPS: dict[str, Path] = {}


def stat(tenant: str, name: str = "memory.stat") -> dict[str, int]:
    if tenant not in CGROUPS:  # one `systemctl show` per tenant, not one per sample
        CGROUPS[tenant] = lab.control_group(f"tenants-{tenant}.slice")
    return lab.keyed(CGROUPS[tenant] / name)


def main(quick: bool = False) -> Result:
    mem_total = lab.meminfo("MemTotal")
    size = mem_total // 8
    text = (f"version: 1\ntenants:\n  kept: {{memory_low: {size * 5 // 4 // MiB}M}}\n"
            "  lost: {}\n")
    files = {n: Path(f"/var/tmp/ev-ws-{n}") for n in NAMES}
    hog = Path("/var/tmp/ev-hog")
    samples: list[Sample] = []
    start = time.monotonic()
    base = dict.fromkeys(NAMES, 0)

    def sample(phase: str) -> None:
        for n in NAMES:
            s = stat(n)
            samples.append(Sample(time.monotonic() - start, phase, n, s["file"] / MiB,
                                  s.get("workingset_refault_file", 0) - base[n]))

    CGROUPS.clear()
    with lab.experiment():
        try:
            lab.drop_caches()
            lab.apply(lab.tenants_file("d_pagecache", text))
            for n, f in files.items():
                lab.run("truncate", "-s", str(size), str(f))
                # re-read the file over and over: its page cache is the tenant's working set
                lab.start(f"ws-{n}", f"tenants-{n}.slice",
                          f"while :; do cat {f} > /dev/null; sleep 0.5; done")
            deadline = time.monotonic() + WARM_TIMEOUT
            while min(stat(n)["file"] for n in NAMES) < 0.9 * size:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the working sets were not cached in {WARM_TIMEOUT} s")
                sample("warm")
                time.sleep(1.0)
            sample("warm")
            nodes = lab.numa_nodes()
            with lab.ballast({n: KEEP_FREE // len(nodes) for n in nodes}) as taken:
                print(f"d_pagecache: ballast {taken // MiB} MiB", flush=True)
                lab.run("truncate", "-s", str(int(mem_total * HOG_RAM_MULTIPLE)), str(hog))
                base = {n: stat(n).get("workingset_refault_file", 0) for n in NAMES}
                sample("ballast")
                low = stat("kept", "memory.events")["low"]
                proc = subprocess.Popen(
                    ["systemd-run", "--wait", "--quiet", f"--unit={lab.PREFIX}pagecache-hog",
                     "--slice=system.slice", "dd", f"if={hog}", "of=/dev/null", "bs=1M"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                while proc.poll() is None:
                    sample("hog")
                    lost = stat("lost").get("workingset_refault_file", 0) - base["lost"]
                    if lost >= (PRESSURE if quick else 4 * PRESSURE):
                        lab.run("systemctl", "stop", f"{lab.PREFIX}pagecache-hog.service",
                                check=False)
                        proc.wait()
                        break
                    time.sleep(1.0)
                sample("hog")
                end = {n: stat(n) for n in NAMES}  # before the files go (that drops the cache)
                low = stat("kept", "memory.events")["low"] - low
            for _ in lab.sample_every(1.0, AFTER):
                sample("after")
        finally:
            hog.unlink(missing_ok=True)
            lab.stop_units()
            for f in files.values():
                f.unlink(missing_ok=True)
    lab.write_csv("d_pagecache", samples)
    refaults = {n: end[n].get("workingset_refault_file", 0) - base[n] for n in NAMES}
    result = Result(refaults["kept"], refaults["lost"], end["kept"]["file"] / MiB,
                    end["lost"]["file"] / MiB, size / MiB, low)
    print(f"d_pagecache: {result}", flush=True)
    return result


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
