"""slicectl.host.systemd.systemd_calendar over the real `systemd-analyze calendar` (systemd's own
parser)."""

from __future__ import annotations

import calendar as stdcal
import time

import pytest

from slicectl.host.systemd import systemd_calendar
from slicectl.host.systemd.systemd_calendar import Elapses, InForce

# Sun 2026-11-22 12:00:00 UTC
NOW = float(stdcal.timegm((2026, 11, 22, 12, 0, 0)))


def utc(*fields: int) -> float:
    return float(stdcal.timegm((*fields, 0)[:6]))


@pytest.fixture(autouse=True)
def utc_host(monkeypatch: pytest.MonkeyPatch) -> None:
    # Calendar events are in the host's local time; the tests fix it to UTC (and one test
    # checks another zone).
    monkeypatch.setenv("TZ", "UTC")
    if not systemd_calendar.available():
        pytest.fail("systemd-analyze is not installed (tests/run installs systemd)")


def test_evaluate_gives_the_next_elapses() -> None:
    got = systemd_calendar.evaluate("Mon..Fri 22:00", base=NOW, iterations=3)
    assert isinstance(got, Elapses)
    assert got.normalized == "Mon..Fri *-*-* 22:00:00"
    assert got.times == (utc(2026, 11, 23, 22, 0, 0), utc(2026, 11, 24, 22, 0, 0),
                         utc(2026, 11, 25, 22, 0, 0))


def test_times_are_utc_whatever_the_hosts_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Berlin")  # 22:00 CET is 21:00 UTC
    got = systemd_calendar.evaluate("Mon..Fri 22:00", base=NOW)
    assert isinstance(got, Elapses) and got.times == (utc(2026, 11, 23, 21, 0, 0),)


def test_invalid_and_never() -> None:
    assert systemd_calendar.evaluate("Mon..Fri 25:00") == (
        "Failed to parse calendar specification 'Mon..Fri 25:00': Invalid argument")
    assert systemd_calendar.next_elapse("2020-01-01", NOW) is None


def test_last_elapse_looks_back_as_far_as_needed() -> None:
    assert systemd_calendar.last_elapse("Mon..Fri 22:00", NOW) == utc(2026, 11, 20, 22, 0, 0)
    assert systemd_calendar.last_elapse("minutely", NOW) == NOW  # elapses exactly now
    assert systemd_calendar.last_elapse("*-01-01 00:00", NOW) == utc(2026, 1, 1, 0, 0, 0)
    assert systemd_calendar.last_elapse("2030-01-01", NOW) is None


def test_the_profile_whose_schedule_elapsed_last_is_in_force() -> None:
    schedule = {"night": ("Mon..Fri 22:00",), "default": ("Mon..Fri 07:00", "Sat 09:00")}
    # Sunday noon: Saturday 09:00 (the base file) came after Friday 22:00 (night).
    assert systemd_calendar.in_force(schedule, NOW) == InForce(None, utc(2026, 11, 21, 9, 0, 0))
    monday_night = utc(2026, 11, 23, 23, 0, 0)
    assert systemd_calendar.in_force(schedule, monday_night) == InForce("night",
                                                                utc(2026, 11, 23, 22, 0, 0))
    # A profile really named "default" is that profile, not the base file.
    assert systemd_calendar.in_force(schedule, NOW, base_name=None).profile == "default"
    assert systemd_calendar.in_force({}, NOW) == InForce(None, None)


def test_now_defaults_to_the_clock() -> None:
    before = time.time()
    got = systemd_calendar.in_force({"p": ("minutely",)})
    assert got.profile == "p" and got.since is not None and before - 61 <= got.since <= \
        time.time()


def test_the_schedule_table_shows_local_time_and_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """plan's JSON keeps UTC; the table for people says the host's time and names its zone."""
    import io
    import time

    from rich.console import Console

    from slicectl.views.tables import schedule_table

    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        table = schedule_table({
            "timers": [{"profile": "night", "timer": "slicectl-profile@night.timer",
                        "calendars": ["Mon..Fri 22:00"], "next_elapse": "2026-11-23T21:00:00Z"}],
            "in_force": {"profile": "night", "since": "2026-11-20T21:00:00Z"}})
        out = io.StringIO()
        Console(file=out, width=200, color_system=None).print(table)
    finally:
        monkeypatch.undo()
        time.tzset()
    text = out.getvalue()
    assert "since Fri 2026-11-20 22:00:00 CET (21:00 UTC)" in text
    assert "Mon 2026-11-23 22:00:00 CET (21:00 UTC)" in text


def test_many_expressions_take_a_few_runs_and_each_invalid_one_is_located(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """320 calendar events (40 profiles of 8, every fourth profile with one systemd refuses
    among them) are checked in a few runs of systemd-analyze, not one each; each refused
    one is reported at its profile's line with systemd's own words."""
    import subprocess

    from slicectl.core.config.config import load_yaml, parse_config

    runs: list[list[str]] = []
    real = subprocess.run

    def counted(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        runs.append(cmd)
        return real(cmd, **kw)  # type: ignore[call-overload,no-any-return]

    profiles, schedule, bad = [], [], {}
    for p in range(40):
        events = [f"*-*-* {(8 * p + k) // 60:02d}:{(8 * p + k) % 60:02d}" for k in range(8)]
        if p % 4 == 0:
            events[p % 8] = bad[f"p{p}"] = f"Mon..Fri 25:{p:02d}"
        profiles.append(f"  p{p}: {{db: {{cpus: 1}}}}")
        schedule.append(f"  p{p}: [{', '.join(repr(e) for e in events)}]")
    text = "\n".join(["version: 1", "tenants:", "  db: {cpus: 2}", "profiles:", *profiles,
                      "schedule:", *schedule]) + "\n"
    config = parse_config(load_yaml(text, "t.yaml"), "t.yaml")
    monkeypatch.setattr(subprocess, "run", counted)
    problems = systemd_calendar.schedule_problems(config)
    assert len(runs) <= 6, [len(r) for r in runs]
    first = text.splitlines().index("schedule:") + 2  # line numbers count from 1
    assert [(p.line, p.key, p.message) for p in problems] == [
        (first + int(name[1:]), f"schedule.{name}",
         f"{e!r} is not a calendar event systemd understands (Failed to parse calendar "
         f"specification {e!r}: Invalid argument)") for name, e in bad.items()]


def test_an_expression_that_looks_like_an_option_is_an_expression() -> None:
    got = systemd_calendar.evaluate_all(["-1", "Mon..Fri 22:00", "--help"], base=NOW)
    assert got["-1"] == "Failed to parse calendar specification '-1': Invalid argument"
    assert got["--help"] == "Failed to parse calendar specification '--help': Invalid argument"
    assert isinstance(got["Mon..Fri 22:00"], Elapses)
    assert got["Mon..Fri 22:00"].times == (utc(2026, 11, 23, 22, 0, 0),)
