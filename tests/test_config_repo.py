"""The config-repo workflow, as a repository's CI runs it on a machine without systemd:
`generate` into the repo's units, then `plan --unit-dir --exit-code` says whether the committed
units are what generate writes (0) or not (3: a hand edit, a file missing, a tenants.yaml whose
units were not regenerated); the `target:` section names the paths on the hosts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGY = str(ROOT / "tests" / "fixtures" / "topologies" / "xeon-2s-smt.json")
TENANTS = """\
version: 1
housekeeping: {cpus: 2}
tenants:
  db: {cpus: 4, memory_max: 8G}
  batch: {cpus: 2, cpu_weight: 50}
profiles:
  night:
    batch: {cpus: 4}
schedule:
  night: "22:00"
"""
TARGET = "target:\n  slicectl: /opt/slicectl/bin/slicectl\n  tenants: /etc/slicectl/tenants.yaml\n"


def slicectl(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """slicectl in `repo`, with no system bus to reach (as in a repository's CI)."""
    env = {**os.environ, "DBUS_SYSTEM_BUS_ADDRESS": f"unix:path={repo}/no-bus",
           "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "slicectl", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)


def check(repo: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return slicectl(repo, "plan", "tenants.yaml", "--topology", TOPOLOGY, "--unit-dir",
                    "units", "--exit-code", *extra)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A config repo: tenants.yaml with a target, and the units generate wrote from it."""
    (tmp_path / "tenants.yaml").write_text(TENANTS + TARGET)
    proc = slicectl(tmp_path, "generate", "tenants.yaml", "--topology", TOPOLOGY, "--out",
                    "units")
    assert proc.returncode == 0, proc.stderr
    assert "note:" not in proc.stderr  # nothing of this machine's in the units
    return tmp_path


def test_committed_units_match(repo: Path) -> None:
    proc = check(repo)
    assert proc.returncode == 0, proc.stderr
    assert "This host matches the plan." in proc.stdout
    assert "note: files only: compared units with what generate writes" in proc.stderr


@pytest.mark.parametrize("change", ["hand edit", "file missing", "tenants.yaml changed"])
def test_a_difference_exits_3(repo: Path, change: str) -> None:
    unit = repo / "units" / "tenants-db.slice.d" / "50-slicectl.conf"
    if change == "hand edit":
        unit.write_text(unit.read_text().replace("MemoryMax=", "MemoryMax=1"))
        expected = "update units/tenants-db.slice.d/50-slicectl.conf"
    elif change == "file missing":
        unit.unlink()
        expected = "create units/tenants-db.slice.d/50-slicectl.conf"
    else:
        tenants = repo / "tenants.yaml"
        tenants.write_text(tenants.read_text().replace("memory_max: 8G", "memory_max: 6G"))
        expected = "update units/tenants-db.slice.d/50-slicectl.conf"
    proc = check(repo)
    assert proc.returncode == 3, proc.stderr
    assert expected in proc.stdout


def test_the_target_is_what_the_timers_run(repo: Path) -> None:
    service = (repo / "units" / "slicectl-profile@.service").read_text()
    assert "ExecStart=/opt/slicectl/bin/slicectl apply /etc/slicectl/tenants.yaml" in service


def test_flags_override_the_target_and_plan_takes_them_too(repo: Path) -> None:
    """plan takes every option of generate that changes a file: else a spurious change."""
    flags = ("--target-slicectl", "/usr/bin/slicectl")
    proc = slicectl(repo, "generate", "tenants.yaml", "--topology", TOPOLOGY, "--out",
                    "units", *flags)
    assert proc.returncode == 0, proc.stderr
    assert "ExecStart=/usr/bin/slicectl apply /etc/slicectl/tenants.yaml" in \
        (repo / "units" / "slicectl-profile@.service").read_text()
    assert check(repo, *flags).returncode == 0
    assert check(repo).returncode == 3  # without the flag: the target's path


def test_without_a_target_generate_says_it_wrote_this_machine_s_paths(tmp_path: Path) -> None:
    (tmp_path / "tenants.yaml").write_text(TENANTS)
    proc = slicectl(tmp_path, "generate", "tenants.yaml", "--topology", TOPOLOGY, "--out",
                    "units")
    assert proc.returncode == 0, proc.stderr
    assert (f"note: slicectl-profile@.service runs {sys.executable} -m slicectl and "
            f"{tmp_path}/tenants.yaml: paths of this machine") in proc.stderr
    assert "declare `target: {slicectl: PATH, tenants: PATH}`" in proc.stderr


def test_a_plan_of_this_host_without_a_bus_compares_files_and_says_so(repo: Path) -> None:
    """Not for another host (no --topology): systemd would be asked; without a bus the files
    are still compared, with --exit-code too."""
    proc = slicectl(repo, "plan", "tenants.yaml", "--sysfs", "/nonexistent", "--unit-dir",
                    "units", "--exit-code")
    assert proc.returncode == 1  # no topology at all: an error, not a comparison
    from argparse import Namespace

    from slicectl.cli.pipeline import _no_bus
    from slicectl.core.errors import SystemdError

    error = SystemdError("cannot connect", name="org.freedesktop.DBus.Error.Disconnected")
    assert _no_bus(error, Namespace(bus=None))
    assert not _no_bus(error, Namespace(bus="unix:path=/run/x"))  # a bus named must answer


@pytest.mark.parametrize(("text", "message"), [
    ("target: /usr/bin/slicectl\n", "target: expected a mapping, got str '/usr/bin/slicectl'"),
    ("target: {slicectl: bin/slicectl}\n",
     "target.slicectl: expected an absolute path, got 'bin/slicectl'"),
    ("target: {tenant: /etc/t.yaml}\n", "target.tenant: unknown key"),
    ('target: {slicectl: "/usr/bin/slicectl\\nExecStartPre=/bin/sh"}\n',
     "target.slicectl: '/usr/bin/slicectl\\nExecStartPre=/bin/sh' is not a path systemd can "
     "run"),
])
def test_a_target_that_is_not_a_path_is_located(tmp_path: Path, text: str,
                                                message: str) -> None:
    (tmp_path / "tenants.yaml").write_text(TENANTS + text)
    proc = slicectl(tmp_path, "validate", "tenants.yaml")
    assert proc.returncode == 1
    assert f"error: tenants.yaml:11: {message}" in proc.stderr, proc.stderr
