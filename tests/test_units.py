"""Every unit slicectl ships (units/*.service) or generates (the schedule's
slicectl-profile@.service) is hardened: the sandboxing directives each one must carry,
`systemd-analyze security --offline=yes` under a bound per unit, and a clean
`systemd-analyze verify`. A new unit fails here until it has a bound in EXPOSURE.

The units at work on the real guest (the exporter reading cgroupfs, asking systemd over
D-Bus and serving HTTP as its own user) are tests/e2e/test_exporter.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from unitcheck import parse_unit

ROOT = Path(__file__).resolve().parent.parent
UNITS = sorted((ROOT / "units").glob("*.service"))
# The highest exposure each unit may reach (systemd-analyze's 0-10 scale; what it rates them
# now is in each unit's header). The exporter listens on the network and uses the system bus,
# so it keeps AF_INET/AF_INET6 and AF_UNIX; the recorder has no network at all.
EXPOSURE = {"slicectl-exporter.service": 1.5, "slicectl-record.service": 1.0,
            "slicectl-balance.service": 1.5}
# The schedule's service runs apply as root (systemd takes SetUnitProperties from root), with
# no capability, no network, and write access to the unit directory only (and systemd's
# runtime control drop-ins, which apply puts back as it found them); rated 1.2 now.
GENERATED_EXPOSURE = 1.5
# The directives every shipped service sets, and the value each must have.
HARDENED = {"ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
            "NoNewPrivileges": "yes", "ProtectKernelTunables": "yes",
            "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes",
            "ProtectControlGroups": "yes", "CapabilityBoundingSet": "",
            "DynamicUser": "yes", "MemoryDenyWriteExecute": "yes"}
# Where a unit departs from HARDENED, and why. The balancer changes slices' properties over
# D-Bus (SetUnitProperties), which systemd allows to root holding CAP_SYS_ADMIN (else it asks
# polkit): root with that one capability, no user of its own.
DEPARTS = {"slicectl-balance.service": {"DynamicUser": None,
                                        "CapabilityBoundingSet": "CAP_SYS_ADMIN"}}
# Runtime directories besides the unit's own: the balancer's second is where systemd records
# a runtime property (it removes the record again), kept at stop (Preserve).
RUNTIME = {"slicectl-balance.service": "slicectl systemd/system.control"}


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed (tests/run installs systemd)")
    return path


def test_every_shipped_unit_has_a_bound() -> None:
    assert {u.name for u in UNITS} == set(EXPOSURE)


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_unit_sets_the_sandboxing_directives(unit: Path) -> None:
    service = parse_unit(unit.read_text())["Service"]
    assert {k: service.get(k) for k in HARDENED} == HARDENED | DEPARTS.get(unit.name, {})
    assert service["RestrictAddressFamilies"] and service["SystemCallFilter"]
    # Writable: nothing, or its own state or runtime directories (RUNTIME).
    assert service.get("ReadWritePaths") is None
    assert service.get("StateDirectory", "slicectl") == "slicectl"
    assert service.get("RuntimeDirectory", "slicectl") == RUNTIME.get(unit.name, "slicectl")
    if unit.name in RUNTIME:
        assert service["RuntimeDirectoryPreserve"] == "yes"


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_systemd_analyze_security_rates_it_under_its_bound(unit: Path, tmp_path: Path) -> None:
    (tmp_path / unit.name).write_text(unit.read_text())
    proc = subprocess.run([tool("systemd-analyze"), "security", "--offline=yes", "--no-pager",
                           str(tmp_path / unit.name)], capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "SYSTEMD_COLORS": "0"})
    match = re.search(rf"Overall exposure level for {re.escape(unit.name)}: ([0-9.]+)",
                      proc.stdout)
    assert match, proc.stdout + proc.stderr
    assert float(match.group(1)) <= EXPOSURE[unit.name], proc.stdout


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_systemd_analyze_verify_is_silent(unit: Path, tmp_path: Path) -> None:
    """verify checks that ExecStart's program exists: where slicectl is not installed at
    /usr/local/bin, the copy points at the slicectl of this interpreter."""
    text = unit.read_text()
    if not Path("/usr/local/bin/slicectl").exists():
        beside = Path(sys.executable).with_name("slicectl")
        installed = str(beside) if beside.exists() else shutil.which("slicectl")
        if installed is None:
            pytest.fail("no slicectl to stand in for /usr/local/bin/slicectl: pip install .")
        text = text.replace("/usr/local/bin/slicectl", installed)
    (tmp_path / unit.name).write_text(text)
    proc = subprocess.run([tool("systemd-analyze"), "verify", "--man=no", unit.name],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"SYSTEMD_UNIT_PATH": f"{tmp_path}:", "SYSTEMD_LOG_COLOR": "0",
                               "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0 and not proc.stdout + proc.stderr, proc.stdout + proc.stderr


SCHEDULED = """\
version: 1
tenants:
  db: {cpus: 2}
profiles:
  night:
    db: {cpus: 4}
schedule:
  night: "*-*-* 22:00"
"""


@pytest.fixture
def profile_service(tmp_path: Path) -> Path:
    """slicectl-profile@.service as `generate` writes it, as an instance (security rates
    instances), with ExecStart on this interpreter's slicectl (verify checks it exists)."""
    from slicectl.core.config.config import load_yaml, parse_config
    from slicectl.core.placement.topology import Topology
    from slicectl.core.plan import SCHEDULE_SERVICE, ScheduleCommand, build_plan
    from slicectl.core.render import render
    from slicectl.host.files.templates import load_templates

    config = parse_config(load_yaml(SCHEDULED, "tenants.yaml"), "/etc/slicectl/tenants.yaml")
    topo = Topology.from_json(json.loads(
        (ROOT / "tests/fixtures/topologies/xeon-2s-smt.json").read_text()))
    beside = Path(sys.executable).with_name("slicectl")
    command = ScheduleCommand((str(beside) if beside.exists() else "/bin/true",),
                              config.path)
    plan = build_plan(config, topo, command=command, shares=False)
    text = render(plan, load_templates())[SCHEDULE_SERVICE]
    path = tmp_path / "slicectl-profile@night.service"
    path.write_text(text)
    return path


def test_generated_profile_service_sets_the_sandboxing_directives(profile_service: Path
                                                                   ) -> None:
    service = parse_unit(profile_service.read_text())["Service"]
    # apply needs root; a tenants file may be under /home (read, never written) or /tmp
    wanted = {k: v for k, v in HARDENED.items() if k != "DynamicUser"} | {
        "ProtectHome": "read-only", "PrivateTmp": None}
    assert {k: service.get(k) for k in wanted} == wanted
    assert service["RestrictAddressFamilies"] == "AF_UNIX"  # the system bus, nothing else
    assert service["ReadWritePaths"].split() == [
        "/etc/systemd/system", "-/etc/slicectl", "-/run/systemd/system.control"]
    # the unit directory's lock is in /run/slicectl/locks, which /run (read-only) may lack;
    # kept at stop, with the balancer's state beside it
    assert (service["RuntimeDirectory"], service["RuntimeDirectoryMode"],
            service["RuntimeDirectoryPreserve"]) == ("slicectl", "0755", "yes")
    assert service["PrivateNetwork"] == "yes" and service["AmbientCapabilities"] == ""


def test_generated_profile_service_is_rated_under_its_bound(profile_service: Path) -> None:
    proc = subprocess.run([tool("systemd-analyze"), "security", "--offline=yes", "--no-pager",
                           str(profile_service)], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "SYSTEMD_COLORS": "0"})
    match = re.search(r"Overall exposure level for [^:]+: ([0-9.]+)", proc.stdout)
    assert match, proc.stdout + proc.stderr
    assert float(match.group(1)) <= GENERATED_EXPOSURE, proc.stdout


def test_generated_profile_service_verifies(profile_service: Path) -> None:
    proc = subprocess.run([tool("systemd-analyze"), "verify", "--man=no", profile_service.name],
                          cwd=profile_service.parent, capture_output=True, text=True,
                          timeout=120, env={"SYSTEMD_UNIT_PATH": f"{profile_service.parent}:",
                                            "SYSTEMD_LOG_COLOR": "0", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0 and not proc.stdout + proc.stderr, proc.stdout + proc.stderr
