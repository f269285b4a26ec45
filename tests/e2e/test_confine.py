"""Confinement and protection on the real guest (issue 5, seed 001).

- A hog under cron.service is held at cron's MemoryMax.
- A page-cache hog in system.slice forces global reclaim: a tenant protected with MemoryLow
  keeps its page cache, an identical unprotected tenant loses it (measured side by side).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from . import guest

Run = Callable[..., subprocess.CompletedProcess[str]]
MiB = 1 << 20
PRESSURE = 4096  # pages the unprotected tenant must read back: 16 MiB of its working set


@pytest.fixture
def manifest_cleanup() -> Iterator[None]:
    yield
    Path("/etc/systemd/system/.slicectl-manifest.json").unlink(missing_ok=True)


def stat(unit: str) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in
                                   guest.cgroup_file(unit, "memory.stat").splitlines())}


def events(unit: str) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in
                                   guest.cgroup_file(unit, "memory.events").splitlines())}


def test_cron_hog_is_held_at_its_memory_max(slicectl: Run, tmp_path: Path, units: Any,
                                            manifest_cleanup: None) -> None:
    (tmp_path / "t.yaml").write_text(
        "version: 1\nconfine:\n  cron.service: {memory_max: 64M, memory_swap_max: 0}\n"
        "tenants:\n  a: {}\n")
    was_active = guest.unit_property("cron.service", "ActiveState") == "active"
    guest.systemctl("start", "cron.service")
    if not was_active:
        units.track("cron.service")
    proc = slicectl("apply", str(tmp_path / "t.yaml"), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert guest.cgroup_file("cron.service", "memory.max") == str(64 * MiB)
    procs = guest.control_group("cron.service") / "cgroup.procs"
    before = events("cron.service")
    # A job cron started: the process joins cron.service's cgroup, then grows 8 MiB at a time
    # (touching every page) towards 200 MiB, printing how much it holds.
    grow = ("import sys\nheld = []\nfor i in range(25):\n"
            "    held.append(bytearray(8 << 20))\n    print(8 * (i + 1), flush=True)\n")
    hog = subprocess.run(["sh", "-c", f"echo $$ > {procs} && exec python3 -c '{grow}'"],
                         capture_output=True, text=True, timeout=guest.HANG)
    after = events("cron.service")
    held = [int(x) for x in hog.stdout.split()]
    peak = int(guest.cgroup_file("cron.service", "memory.peak"))
    detail = f"rc={hog.returncode} held={held[-1:]} peak={peak} {before} -> {after} {hog.stderr}"
    assert hog.returncode != 0, detail  # it could not get its 200 MiB
    assert held and held[-1] <= 64, detail
    assert peak <= 64 * MiB, detail
    assert after["max"] > before["max"], detail  # it ran into cron's MemoryMax
    assert guest.unit_property("cron.service", "ActiveState") == "active"  # cron survives


def bytes_read(pid: str) -> str:
    """How much process `pid` has read so far, in MiB, from /proc/PID/io."""
    try:
        io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    except (OSError, ValueError):
        return "its whole file (it had ended)"
    return f"{int(io['rchar']) // MiB} MiB"


def refaults(unit: str) -> int:
    """Pages of files the unit read back after the kernel had evicted them (memory.stat)."""
    return stat(unit).get("workingset_refault_file", 0)


def meminfo(key: str) -> int:
    """One /proc/meminfo value, in bytes (kB values) or as is (counts)."""
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    number, *unit = info[key].split()
    return int(number) * (1024 if unit == ["kB"] else 1)


NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")


@contextmanager
def ballast(keep_free: int) -> Iterator[int]:
    """Take all of the host's free memory but `keep_free` bytes, as the rest of a busy host
    would, and give it back at the end; yields the bytes taken.

    Reserved as huge pages: the kernel moves free memory into the pool at once and zeroes a
    huge page only when a process maps it. A process allocating and touching the same 2.5 GiB
    took 137-276 s under TCG on a busy host.
    """
    before = int(NR_HUGEPAGES.read_text())
    page = meminfo("Hugepagesize")
    NR_HUGEPAGES.write_text(f"{before + max(0, meminfo('MemFree') - keep_free) // page}\n")
    try:
        yield (int(NR_HUGEPAGES.read_text()) - before) * page
    finally:
        NR_HUGEPAGES.write_text(f"{before}\n")


def test_memory_low_protects_a_tenants_page_cache(slicectl: Run, tmp_path: Path, units: Any,
                                                  manifest_cleanup: None) -> None:
    """Two identical tenants keep re-reading a working set (page cache); a housekeeping job in
    system.slice streams a big file through the cache. The load is sized by what it must show,
    not by time or by the guest's RAM: the host's free memory is taken first (a ballast), so
    the hog's cache competes with the tenants' at once; the hog runs until the unprotected
    tenant has had to read PRESSURE pages back, then stops. By then the protected one has read
    back next to nothing. The hog's file (twice the RAM) only bounds the work if the pressure
    never comes."""
    mem_total = meminfo("MemTotal")
    size = mem_total // 8  # each tenant's working set
    (tmp_path / "t.yaml").write_text(
        "version: 1\ntenants:\n"
        f"  kept: {{memory_low: {size * 5 // 4 // MiB}M}}\n"
        "  lost: {}\n")
    proc = slicectl("apply", str(tmp_path / "t.yaml"), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = ("kept", "lost")
    files = {name: Path(f"/var/tmp/ws-{name}") for name in names}
    big = Path("/var/tmp/hog")
    phases: dict[str, float] = {}
    clock = time.monotonic()
    try:
        for name, path in files.items():
            guest.run(["truncate", "-s", str(size), str(path)], check=True)
            # Re-read the file over and over: its page cache is the tenant's working set.
            loop = f"while :; do cat {path} > /dev/null; sleep 0.5; done"
            guest.run(["systemd-run", f"--unit=ws-{name}", f"--slice=tenants-{name}.slice",
                       "sh", "-c", loop], check=True)
            units.track(f"ws-{name}.service")

        def warmed_up() -> dict[str, int] | None:
            cached = {n: stat(f"tenants-{n}.slice")["file"] for n in names}
            return cached if all(v >= size * 0.8 for v in cached.values()) else None

        warm = guest.wait_until(warmed_up, "both tenants to hold their working set in cache")
        phases["warm-up"], clock = time.monotonic() - clock, time.monotonic()
        with ballast(keep_free=256 * MiB) as taken:
            phases["ballast"], clock = time.monotonic() - clock, time.monotonic()
            base = {n: refaults(f"tenants-{n}.slice") for n in names}
            guest.run(["truncate", "-s", str(mem_total * 2), str(big)], check=True)
            guest.run(["systemd-run", "--unit=pagecache-hog", "--slice=system.slice",
                       "dd", f"if={big}", "of=/dev/null", "bs=1M"], check=True)
            units.track("pagecache-hog.service")

            def hog_done() -> bool:
                lost = refaults("tenants-lost.slice") - base["lost"]
                state = guest.unit_property("pagecache-hog.service", "ActiveState")
                return lost >= PRESSURE or state not in ("active", "activating")

            guest.wait_until(hog_done, f"the hog to evict {PRESSURE} pages of tenant 'lost'",
                             interval=1)
            # Measure before removing the files: deleting a file drops its page cache.
            after = {n: stat(f"tenants-{n}.slice") for n in names}
            hogged = bytes_read(guest.unit_property("pagecache-hog.service", "MainPID"))
            phases["hog"] = time.monotonic() - clock
            guest.systemctl("stop", "pagecache-hog.service", check=False)
    finally:
        big.unlink(missing_ok=True)
        for f in files.values():
            f.unlink(missing_ok=True)
    refaulted = {n: after[n].get("workingset_refault_file", 0) - base[n] for n in names}
    # Measured on the guest: kept 0 refaults while lost read PRESSURE pages back.
    print(f"page cache before: {warm}; after: kept={after['kept']['file']} "
          f"lost={after['lost']['file']}; workingset refaults: {refaulted}; ballast "
          f"{taken // MiB} MiB; the hog read {hogged}; seconds: "
          + ", ".join(f"{k} {v:.0f}" for k, v in phases.items()))
    # The unprotected tenant's pages were evicted and had to be read back (it keeps reading,
    # so its cache refills: refaults, not the final size, show the damage — seed 001).
    assert refaulted["lost"] >= PRESSURE, (
        f"the hog streamed its whole file ({mem_total * 2} bytes) without evicting the "
        f"unprotected tenant's page cache: {refaulted}")
    assert refaulted["kept"] * 10 < refaulted["lost"], refaulted
    assert after["kept"]["file"] >= size * 0.8, "MemoryLow did not keep the page cache"
