"""The newer controls on the real guest (systemd 252, kernel 6.1): each lands in its
cgroup file when applied live, IO limits hold a writer back, a fork bomb stops at TasksMax,
and a key systemd 252 cannot take is refused before anything is written."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from . import guest

Run = Callable[..., subprocess.CompletedProcess[str]]
ETC = Path("/etc/systemd/system")
DISK = "/dev/vda"  # the guest's root disk (virtio)


def disk_number() -> str:
    st = os.stat(DISK)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


TENANTS = f"""\
version: 1
tenants:
  io:
    io_weight: 50
    io_write_bandwidth_max: {{{DISK}: 2M}}
    tasks_max: 32
  batch: {{cpu_weight: idle}}
"""


@pytest.fixture
def tenants(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "tenants.yaml"
    path.write_text(TENANTS)
    yield path
    (ETC / ".slicectl-manifest.json").unlink(missing_ok=True)


def test_new_controls_land_in_their_cgroup_files(slicectl: Run, tenants: Path,
                                                 cgroup_file: Callable[[str, str], str]
                                                 ) -> None:
    proc = slicectl("apply", str(tenants), "--yes")
    assert proc.returncode == 0, proc.stderr
    assert cgroup_file("tenants-io.slice", "io.weight").splitlines()[0] == "default 50"
    assert f"{disk_number()} rbps=max wbps=2000000 riops=max wiops=max" in \
        cgroup_file("tenants-io.slice", "io.max").splitlines()
    assert cgroup_file("tenants-io.slice", "pids.max") == "32"
    assert cgroup_file("tenants-batch.slice", "cpu.idle") == "1"
    # systemd reports them back, and slicectl sees nothing left to change.
    assert guest.unit_property("tenants-batch.slice", "CPUWeight") == "idle"
    again = slicectl("plan", str(tenants), "--exit-code")
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_write_limit_holds_a_writer_back(slicectl: Run, tenants: Path) -> None:
    assert slicectl("apply", str(tenants), "--yes").returncode == 0
    target = Path("/var/tmp/slicectl-io-test")
    # 6 MB of direct writes at 2 MB/s take about 3 s (the first second's budget may go at
    # once); unlimited, the guest's disk takes them in well under a second. A busy host only
    # makes it slower, so the bound holds under load.
    start = time.monotonic()
    guest.run(["systemd-run", "--wait", "--quiet", "--slice=tenants-io.slice",
               "dd", "if=/dev/zero", f"of={target}", "bs=1M", "count=6", "oflag=direct"])
    elapsed = time.monotonic() - start
    target.unlink(missing_ok=True)
    assert elapsed >= 1.8, f"6 MB written in {elapsed:.2f} s despite the 2 MB/s limit"


def test_a_fork_bomb_stops_at_tasks_max(slicectl: Run, tenants: Path, units: object,
                                        cgroup_file: Callable[[str, str], str]) -> None:
    assert slicectl("apply", str(tenants), "--yes").returncode == 0
    # A bounded bomb that outlives its refused forks (a shell gives up at the first): 200
    # forks of sleepers; the kernel refuses every one beyond 32 tasks in the tenant.
    bomb = ("import os, time\n"
            "for _ in range(200):\n"
            "    try:\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(300)\n"
            "            os._exit(0)\n"
            "    except OSError:\n"
            "        pass\n"
            "time.sleep(300)\n")
    guest.run(["systemd-run", "--unit=slicectl-bomb", "--slice=tenants-io.slice",
               "python3", "-c", bomb])
    try:
        deadline = time.monotonic() + 120
        current = 0
        while time.monotonic() < deadline:  # wait until the bomb has used up its tasks
            current = int(cgroup_file("tenants-io.slice", "pids.current"))
            if current >= 32:
                break
            time.sleep(0.2)
        assert current == 32
        time.sleep(1)  # it keeps trying: still at the limit
        assert int(cgroup_file("tenants-io.slice", "pids.current")) == 32
        # "max N": forks refused. Linux before 6.10 counts them in the cgroup that forked (the
        # bomb's service), later ones also in the one whose limit was hit (the tenant).
        events = {unit: cgroup_file(unit, "pids.events")
                  for unit in ("tenants-io.slice", "slicectl-bomb.service")}
        assert sum(int(e.split()[1]) for e in events.values()) > 0, events
        # The host is fine: new processes start outside the tenant.
        assert guest.run(["sh", "-c", "echo host ok"]).stdout.strip() == "host ok"
    finally:
        guest.systemctl("stop", "slicectl-bomb.service", check=False)


def test_a_key_systemd_252_cannot_take_is_refused_before_anything_is_written(
        slicectl: Run, tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text("version: 1\ntenants:\n  z: {memory_zswap_max: 1G}\n")
    before = sorted(p.name for p in ETC.iterdir())
    proc = slicectl("apply", str(path), "--yes")
    assert proc.returncode == 1
    assert (f"{path}:3: tenants.z.memory_zswap_max: needs systemd 253 or later, but the "
            "target runs systemd 252 (systemd on this host)") in proc.stderr
    assert sorted(p.name for p in ETC.iterdir()) == before
    # generate for this host says the same (it asks the installed systemd).
    gen = slicectl("generate", str(path), "--out", str(tmp_path / "out"))
    assert gen.returncode == 1 and "needs systemd 253 or later" in gen.stderr
    assert not (tmp_path / "out").exists()
