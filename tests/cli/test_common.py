"""What the verbs share (slicectl.cli.common): exit codes, the topology with its repairs said on
stderr, tenants.yaml with every check, and where plan and apply act from the host options."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from paths import TESTS

from slicectl.cli import common
from slicectl.cli.parser import build_parser
from slicectl.core.errors import ConfigError
from slicectl.core.plan import ScheduleCommand
from slicectl.host.files.lock import LOCK_TIMEOUT
from slicectl.host.systemd import systemd_calendar

FIXTURES = TESTS / "fixtures"


def test_exit_codes() -> None:
    """One table of every exit code, the errors' codes among them."""
    from slicectl.core.errors import SlicectlError, UsageError

    assert (common.EXIT_OK, common.EXIT_ERROR, common.EXIT_USAGE, common.EXIT_DIFF,
            common.EXIT_OFFLINE, common.EXIT_INTERRUPTED) == (0, 1, 2, 3, 4, 130)
    assert [code for code, _ in common.EXIT_STATUS] == [0, 1, 2, 3, 4, 130]
    assert {SlicectlError.exit_code, UsageError.exit_code} <= {c for c, _ in common.EXIT_STATUS}


def test_topology_repairs_are_said_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """duplicate-nodes: firmware lists the same CPUs in two nodes, which become one."""
    topo = common.load_topology(argparse.Namespace(
        sysfs=str(FIXTURES / "sysfs" / "duplicate-nodes")))
    err = capsys.readouterr().err.splitlines()
    assert len(topo.warnings) == len(err) >= 1
    assert err == [f"warning: {w}" for w in topo.warnings]


def test_load_config_applies_the_profile_and_warns(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("version: 1\ntenants:\n  db1: {cpus: 2}\nprofiles:\n  night:\n"
                    "    db1: {cpus: 1}\nschedule:\n  night: 'Mon 22:00'\n")
    monkeypatch.setattr(systemd_calendar, "available", lambda: False)
    config = common.load_config(argparse.Namespace(tenants=str(path), profile="night"))
    assert config.tenant("db1").cpus == 1
    assert capsys.readouterr().err == (
        "warning: schedule: not checked (systemd-analyze is not installed); the timers check "
        "it on the host\n")
    path.write_text("version: 1\ntenants:\n  db1: {cpus: 0}\n")
    with pytest.raises(ConfigError):
        common.load_config(argparse.Namespace(tenants=str(path)))


def test_apply_options_from_the_command_line(tmp_path: Path) -> None:
    tenants = tmp_path / "t.yaml"
    args = build_parser().parse_args([
        "apply", str(tenants), "--unit-dir", str(tmp_path / "units"), "--cgroup-root",
        str(tmp_path / "cg"), "--bus", "unix:path=/run/bus", "--lock-timeout", "5", "--force"])
    options = common.apply_options(args)
    assert (options.unit_dir, options.cgroup_root, options.bus_address) == (
        tmp_path / "units", tmp_path / "cg", "unix:path=/run/bus")
    assert options.lock_timeout == 5.0 and options.force
    assert isinstance(options.schedule_command, ScheduleCommand)
    assert options.schedule_command.tenants == str(tenants)


def test_apply_runs_the_timers_on_the_target_tenants_yaml_declares(tmp_path: Path) -> None:
    """`target:` names the paths on the hosts the units are for: apply (on such a host, as
    the Ansible role runs it) writes the timers with them, as generate and plan do."""
    tenants = tmp_path / "t.yaml"
    tenants.write_text("version: 1\ntenants:\n  a: {cpus: 1}\nprofiles:\n  night:\n"
                       "    a: {cpus: 2}\nschedule:\n  night: '22:00'\ntarget:\n"
                       "  slicectl: /opt/slicectl/bin/slicectl\n"
                       "  tenants: /etc/slicectl/tenants.yaml\n")
    args = build_parser().parse_args(["apply", str(tenants)])
    options = common.apply_options(args, common.load_config(args))
    assert options.schedule_command == ScheduleCommand(("/opt/slicectl/bin/slicectl",),
                                                       "/etc/slicectl/tenants.yaml")


def test_apply_options_default_to_the_host() -> None:
    options = common.apply_options(argparse.Namespace(unit_dir=None,
                                                      cgroup_root="/sys/fs/cgroup", bus=None))
    assert (str(options.unit_dir), str(options.control_dir)) == (
        "/etc/systemd/system", "/run/systemd/system.control")
    assert options.lock_timeout == LOCK_TIMEOUT and options.schedule_command is None
    assert options.bus_address is None and not options.force
