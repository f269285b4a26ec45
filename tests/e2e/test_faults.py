"""apply under faults on the real guest: SIGKILL at random moments, power cuts, a full file
system, and systemd re-executing itself mid-apply. Each run ends converged: the next apply
succeeds, `plan --exit-code` finds nothing to change, no temporary file is left and no foreign
file changed.

The kill campaign runs SLICECTL_KILLS kills (default 3, CI's tier), the power-cut campaign
SLICECTL_POWER_CUTS cuts (default 1, CI's tier: each is a boot, 1.5-2.5 min under TCG); the
long tier sets them higher (`SLICECTL_TESTBED_ENV="SLICECTL_KILLS=25 SLICECTL_POWER_CUTS=10"
tests/testbed/e2e tests/e2e/test_faults.py`).
The counts of the last run are written to the results share (faults.json) for the testbed
README.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import guest

Run = Callable[..., subprocess.CompletedProcess[str]]
ETC = Path("/etc/systemd/system")
# Two configurations that differ in weights and memory of every tenant and in the CPUs of two
# (each node of the testbed has 2 CPUs: every tenant stays on one node, and A and B placed in
# turn give the same CPUs each time, which the power-cut test compares): each apply
# changes files, reloads, sets live properties and verifies.
A = """\
version: 1
tenants:
  db1: {cpus: 2, cpu_weight: 300, memory_max: 256M, memory_low: 32M}
  db2: {cpus: 2, cpu_weight: 100, memory_max: 128M}
  db3: {cpus: 1, cpu_weight: 50, memory_max: 64M}
"""
B = """\
version: 1
tenants:
  db1: {cpus: 1, cpu_weight: 100, memory_max: 128M, memory_low: 16M}
  db2: {cpus: 2, cpu_weight: 400, memory_max: 192M}
  db3: {cpus: 2, cpu_weight: 200, memory_max: 96M}
"""
FOREIGN = ETC / "foreign-probe.service"


def ours_and_foreign() -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(ETC.rglob("*")) if p.is_file()}


def temporary_files() -> list[str]:
    return [str(p) for p in ETC.rglob("*") if ".tmp" in p.name or p.name.startswith(".#")]


def converged(slicectl: Run, tenants: Path) -> None:
    proc = slicectl("apply", str(tenants), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    plan = slicectl("plan", str(tenants), "--exit-code")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert temporary_files() == []


def record(name: str, counts: dict[str, int]) -> None:
    results = Path(os.environ.get("SLICECTL_RESULTS", "/tmp"))
    path = results / "faults.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data[name] = counts
    path.write_text(json.dumps(data, indent=2) + "\n")


@pytest.fixture
def configs(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(A)
    b.write_text(B)
    FOREIGN.write_text("[Service]\nExecStart=/bin/true\n")
    yield a, b
    FOREIGN.unlink(missing_ok=True)
    (ETC / ".slicectl-manifest.json").unlink(missing_ok=True)


def test_sigkill_at_random_moments_then_apply_converges(slicectl: Run,
                                                        configs: tuple[Path, Path]) -> None:
    a, b = configs
    converged(slicectl, a)
    foreign = FOREIGN.read_bytes()
    kills = int(os.environ.get("SLICECTL_KILLS", "3"))
    rng = random.Random(int(os.environ.get("SLICECTL_FAULT_SEED", "7")))
    # How long one apply takes here, to spread the kills over all of it (files, reload,
    # property calls, verify).
    start = time.monotonic()
    converged(slicectl, b)
    span = time.monotonic() - start
    survived = 0
    for i in range(kills):
        target = (a, b)[i % 2]
        proc = subprocess.Popen(["slicectl", "apply", str(target), "--yes"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, span))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        converged(slicectl, target)
        assert FOREIGN.read_bytes() == foreign
        survived += 1
    record("sigkill", {"kills": kills, "converged": survived, "files_lost": 0})


def test_a_full_file_system_fails_clearly_and_changes_nothing(
        slicectl: Run, configs: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = configs
    converged(slicectl, a)
    files, live = ours_and_foreign(), _live(("db1", "db2", "db3"))
    small = Path("/run/slicectl-full")
    small.mkdir(exist_ok=True)
    guest.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small)])
    try:
        guest.run(["cp", "-a", f"{ETC}/.", str(small)])
        # Fill what is left: the next file written gets ENOSPC.
        guest.run(["sh", "-c", f"dd if=/dev/zero of={small}/.filler bs=4k 2>/dev/null; true"])
        guest.run(["mount", "--bind", str(small), str(ETC)])
        try:
            proc = slicectl("apply", str(b), "--yes")
        finally:
            guest.run(["umount", str(ETC)])
    finally:
        guest.run(["umount", str(small)])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "No space left on device" in proc.stderr and "Traceback" not in proc.stderr
    assert ours_and_foreign() == files
    assert _live(("db1", "db2", "db3")) == live
    converged(slicectl, b)
    record("enospc", {"faults": 1, "converged": 1, "files_lost": 0})


@pytest.mark.parametrize("fault", ["daemon-reexec", "restart dbus"])
def test_a_restart_during_apply_ends_in_success_or_exact_rollback(
        slicectl: Run, configs: tuple[Path, Path], fault: str) -> None:
    """systemd re-executing itself, or the bus daemon restarting (`systemctl restart dbus`),
    at a random moment of an apply."""
    a, b = configs
    converged(slicectl, a)
    rng = random.Random(11)
    outcomes = []
    for target in (b, a):
        files, live = ours_and_foreign(), _live(("db1", "db2", "db3"))
        proc = subprocess.Popen(["slicectl", "apply", str(target), "--yes"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(0.2, 2.0))
        guest.systemctl(*fault.split())
        out, err = proc.communicate(timeout=guest.HANG)
        assert "Traceback" not in err
        if proc.returncode == 0:
            outcomes.append("success")
        else:
            # Refused before changing anything (systemd gone from the bus while apply asked
            # it something) or rolled back: either way exactly the state before.
            assert err.startswith("error: "), out + err
            assert ours_and_foreign() == files, out + err
            assert _live(("db1", "db2", "db3")) == live, out + err
            outcomes.append("rolled back" if "rolled back" in err else "refused")
        converged(slicectl, target)
    record(fault, {"faults": len(outcomes), "converged": len(outcomes), "files_lost": 0,
                   **Counter(outcomes)})


def test_two_applies_and_a_generate_started_together_are_serialized(
        slicectl: Run, configs: tuple[Path, Path]) -> None:
    """One lock for every writer of /etc/systemd/system: each run waits for the one before it,
    and the last one's state is the host's, consistent."""
    a, b = configs
    converged(slicectl, a)
    runs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for cmd in (["slicectl", "apply", str(b), "--yes"],
                        ["slicectl", "generate", str(b), "--out", str(ETC)],
                        ["slicectl", "apply", str(b), "--yes"])]
    outputs = [p.communicate(timeout=guest.HANG) for p in runs]
    for p, (out, err) in zip(runs, outputs, strict=True):
        assert p.returncode == 0, out + err
    assert any("waiting for" in err or "in use by" in err for _, err in outputs)
    plan = slicectl("plan", str(b), "--exit-code")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert temporary_files() == []
    record("concurrent writers", {"runs": 3, "converged": 3, "files_lost": 0})


MANIFEST = ".slicectl-manifest.json"


def owned() -> dict[str, str | None]:
    """slicectl's files in /etc/systemd/system (those its manifest names, and the manifest)."""
    manifest_path = ETC / MANIFEST
    manifest = json.loads(manifest_path.read_text())
    paths = {*manifest["files"], *manifest.get("pending", {})}
    return {rel: (ETC / rel).read_text() if (ETC / rel).exists() else None
            for rel in sorted(paths)} | {manifest_path.name: manifest_path.read_text()}


def test_power_cuts_during_apply_leave_each_file_old_or_new_and_converge(
        slicectl: Run, configs: tuple[Path, Path]) -> None:
    """The guest reset without a sync (sysrq b) at a random moment of an apply, then booted
    again: each of slicectl's files is in its old or its new version (never empty or torn),
    the manifest names every file there as slicectl's, systemd booted with the placement the
    files say (no two tenants on one CPU), and the next apply converges."""
    a, b = configs
    cuts = int(os.environ.get("SLICECTL_POWER_CUTS", "1"))
    resumed = guest.resumed()
    state: dict[str, Any]
    if resumed is None:
        converged(slicectl, a)
        version_a = owned()
        start = time.monotonic()
        converged(slicectl, b)
        span = time.monotonic() - start
        version_b = owned()
        converged(slicectl, a)
        assert owned() == version_a  # applying A again writes the same files
        state = {"cut": 0, "span": span, "versions": [version_a, version_b],
                 "foreign": FOREIGN.read_text(), "mixed": 0}
    else:
        _, state = resumed
        cut = state["cut"]
        old, new = ({rel: text for rel, text in state["versions"][i].items() if rel != MANIFEST}
                    for i in (cut % 2, (cut + 1) % 2))
        now = owned()
        manifest = json.loads(now.pop(MANIFEST) or "")  # whole: never empty or torn
        for rel in sorted(set(old) | set(new)):
            current = now.get(rel)
            assert current in (old.get(rel), new.get(rel)), f"cut {cut}: {rel} is torn: {current!r}"
        assert set(now) <= set(old) | set(new)
        # The manifest agrees with the files: each one there is one it names as slicectl's
        # (its digest, or the one a write in progress was giving it).
        for rel, text in now.items():
            if text is not None:
                digest = hashlib.sha256(text.encode()).hexdigest()
                assert digest in (manifest["files"].get(rel), manifest.get("pending", {})
                                  .get(rel)), f"cut {cut}: the manifest does not name {rel}"
        # systemd booted with what the files say, and no CPU is two tenants'.
        placed = {t: guest.parse_cpulist(guest.cgroup_file(f"tenants-{t}.slice", "cpuset.cpus"))
                  for t in ("db1", "db2", "db3")
                  if guest.unit_property(f"tenants-{t}.slice", "ActiveState") == "active"}
        for t, cpus in placed.items():
            conf = now.get(f"tenants-{t}.slice.d/50-slicectl.conf") or ""
            allowed = next((line.split("=", 1)[1] for line in conf.splitlines()
                            if line.startswith("AllowedCPUs=")), "")
            assert cpus == guest.parse_cpulist(allowed), f"cut {cut}: {t}: {cpus} vs {allowed}"
        every = [c for cpus in placed.values() for c in cpus]
        assert len(every) == len(set(every)), f"cut {cut}: tenants share CPUs: {placed}"
        if now not in (old, new):
            state["mixed"] += 1  # some files old, some new: converged by the next apply
        target = (b, a)[cut % 2]
        converged(slicectl, target)
        assert FOREIGN.read_text() == state["foreign"]
        state["cut"] = cut = cut + 1
    if state["cut"] < cuts:
        target = (b, a)[state["cut"] % 2]
        subprocess.Popen(["slicectl", "apply", str(target), "--yes"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rng = random.Random(int(os.environ.get("SLICECTL_FAULT_SEED", "7")) + state["cut"])
        time.sleep(rng.uniform(0, state["span"]))
        guest.reboot("power cut", state, how="power-cut")
    record("power cut", {"cuts": cuts, "converged": cuts, "files_lost": 0,
                         "some files old, some new": state["mixed"]})


def _live(tenants: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for t in tenants:
        for name in ("cpuset.cpus", "cpu.weight", "memory.max"):
            try:
                out[f"{t}/{name}"] = guest.cgroup_file(f"tenants-{t}.slice", name).strip()
            except (OSError, AssertionError):
                out[f"{t}/{name}"] = "(none)"
    return out
