"""What the pipeline verbs add for schedules and the target's systemd (slicectl.cli.schedule):
the version check's source, the profile in force (systemd's calendar answers stubbed here; the
real `systemd-analyze` is in test_systemd_calendar.py), `plan --json`'s schedule, and the
command line the schedule's timers run."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from paths import TESTS

from slicectl.cli.schedule import check_target_version, in_force, schedule_command, schedule_json
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.tenants import Config
from slicectl.core.errors import ConfigError
from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.core.plan import ScheduleCommand
from slicectl.host.systemd import systemd_calendar
from slicectl.host.systemd.systemd_calendar import InForce

YAML = """\
version: 1
tenants:
  db1: {cpus: 1, cpu_weight: idle}
profiles:
  night:
    db1: {cpus: 1}
schedule:
  night: "Mon..Fri 22:00"
  default: ["Mon..Fri 06:00", "Sat 08:00"]
"""
TOPO = Topology((Node(0, frozenset({0, 1}), 1 << 30),),
                (Cpu(0, True, 0), Cpu(1, True, 0)), "host.json")
NIGHT_STARTED = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


@pytest.fixture
def config() -> Config:
    return parse_config(load_yaml(YAML, "t.yaml"), "t.yaml")


def args(**values: object) -> argparse.Namespace:
    return argparse.Namespace(**{"systemd_version": None, "topology": "host.json",
                                 "tenants": "t.yaml", **values})


def test_the_version_asked_for_wins(config: Config) -> None:
    with pytest.raises(ConfigError) as e:
        check_target_version(args(systemd_version=251), config, replace(TOPO,
                                                                        systemd_version=256))
    assert e.value.message == ("t.yaml:3: tenants.db1.cpu_weight: needs systemd 252 or later, "
                               "but the target runs systemd 251 (--systemd-version)")


def test_else_the_version_the_export_recorded(config: Config) -> None:
    with pytest.raises(ConfigError) as e:
        check_target_version(args(), config, replace(TOPO, systemd_version=250))
    assert e.value.message.endswith("the target runs systemd 250 (recorded in host.json)")
    check_target_version(args(), config, TOPO)  # an export of unknown version: no check


def test_the_profile_in_force(config: Config, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    asked: list[object] = []

    def night(schedule: object, base_name: str | None = "default") -> InForce:
        asked.append(base_name)
        return InForce("night", NIGHT_STARTED)

    monkeypatch.setattr(systemd_calendar, "in_force", night)
    monkeypatch.setenv("TZ", "Europe/Paris")  # said in local time, and in UTC
    time.tzset()
    try:
        assert in_force(config.with_profile("night"))
        assert not in_force(config)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert capsys.readouterr().err == (
        "slicectl: profile default (the base file) is not in force now: night (since "
        "Tue 2023-11-14 23:13:20 CET (22:13 UTC)) is; nothing changed\n")
    assert asked == ["default", "default"]  # `default` in the schedule means the base file


def test_schedule_json(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    nexts = {"Mon..Fri 22:00": NIGHT_STARTED + 86400, "Mon..Fri 06:00": NIGHT_STARTED + 3600,
             "Sat 08:00": None}
    monkeypatch.setattr(systemd_calendar, "next_elapses", lambda es: {e: nexts[e] for e in es})
    monkeypatch.setattr(systemd_calendar, "in_force",
                        lambda schedule, base_name=None: InForce(None, None))
    assert schedule_json(config) == {
        "timers": [
            {"profile": "night", "timer": "slicectl-profile@night.timer",
             "calendars": ["Mon..Fri 22:00"], "next_elapse": "2023-11-15T22:13:20Z"},
            {"profile": "default", "timer": "slicectl-profile@default.timer",
             "calendars": ["Mon..Fri 06:00", "Sat 08:00"],
             "next_elapse": "2023-11-14T23:13:20Z"}],
        "in_force": {"profile": None, "since": None}}


def test_the_timers_run_the_target_slicectl_when_given() -> None:
    assert schedule_command(args(target_slicectl="/opt/bin/slicectl",
                                 target_tenants="/etc/slicectl/tenants.yaml")) == \
        ScheduleCommand(("/opt/bin/slicectl",), "/etc/slicectl/tenants.yaml")


def test_else_this_slicectl_on_the_absolute_tenants_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "bin" / "slicectl"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "argv", [str(script)])
    assert schedule_command(args()) == ScheduleCommand((str(script),), str(tmp_path / "t.yaml"))
    monkeypatch.setattr(sys, "argv", ["-m"])  # python -m slicectl
    assert schedule_command(args()).executable == (sys.executable, "-m", "slicectl")


SCHEDULE_CASE = str(TESTS / "cases" / "schedule.yaml")
XEON = str(TESTS / "fixtures" / "topologies" / "xeon-2s-smt.json")


@pytest.mark.parametrize("flag", ["--target-slicectl", "--target-tenants"])
@pytest.mark.parametrize("bad", ["\n", "\r", "\x1b", "\x7f", "\x85"])
def test_a_target_path_with_a_control_character_is_refused_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, bad: str) -> None:
    """A newline in a path written into ExecStart= would start a directive of its own."""
    from slicectl.cli import main

    out = tmp_path / "out"
    value = f"/opt/x{bad}ExecStartPre=/bin/sh -c id"
    assert main(["generate", SCHEDULE_CASE, "--topology", XEON, "--out", str(out),
                 flag, value]) == 1
    assert not out.exists()
    err = capsys.readouterr().err
    shown = value.replace(bad, ascii(bad)[1:-1])
    assert (f"error: {flag} {shown}: contains a control character (U+{ord(bad):04X}), which "
            "cannot be written into a unit's ExecStart= line") in err, err
    assert "hint: use a path without control characters" in err


def test_target_paths_are_quoted_for_systemd(tmp_path: Path) -> None:
    """Spaces, `%` (a specifier), `$` (a variable in an argument) and quotes reach the
    command as given: systemd-analyze verify finds the executable by the name written."""
    from unitcheck import systemd_verify

    from slicectl.cli import main

    executable = tmp_path / "my tools" / "100%" / "$HOME" / "slicectl"
    executable.parent.mkdir(parents=True)
    executable.write_text("#!/bin/sh\n")
    executable.chmod(0o755)
    out = tmp_path / "out"
    assert main(["generate", SCHEDULE_CASE, "--topology", XEON, "--out", str(out),
                 "--target-slicectl", str(executable),
                 "--target-tenants", '/etc/slice ctl/100% $x "y".yaml']) == 0
    service = (out / "slicectl-profile@.service").read_text()
    quoted = str(executable).replace("%", "%%")  # the executable's path is not expanded
    assert (f'ExecStart="{quoted}" apply "/etc/slice ctl/100%% $$x \\"y\\".yaml" --profile %i '
            "--if-in-force --yes\n") in service
    systemd_verify(out, tmp_path)


def test_this_slicectls_path_with_a_newline_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from slicectl.cli import main

    script = tmp_path / "a\nb" / "slicectl"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "argv", [str(script)])
    out = tmp_path / "out"
    assert main(["generate", SCHEDULE_CASE, "--topology", XEON, "--out", str(out)]) == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert "error: this slicectl's path (give --target-slicectl PATH) " in err
    assert "contains a control character (U+000A)" in err
