"""Shares of the kernel's task limit in TasksMax= ("50%"): what systemd takes, the count it
makes of them, and how they travel over D-Bus (slicectl.core.config.values.TaskShare,
slicectl.core.properties.kinds.Tasks)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize(("value", "permyriad", "text", "needs"), [
    ("50%", 5000, "50%", 231), ("100%", 10_000, "100%", 231), ("050%", 5000, "50%", 231),
    ("12.5%", 1250, "12.5%", 248), ("505‰", 5050, "505‰", 240), ("5050‱", 5050, "5050‱", 248),
])
def test_parse_tasks_max_takes_what_systemd_takes(value: str, permyriad: int, text: str,
                                                  needs: int) -> None:
    """systemd's TasksMax= parses with parse_permyriad (all accepted by systemd-analyze verify
    on 252; tests/cases/tasks-share.yaml verifies a generated file)."""
    from slicectl.core.config.parsers import parse_tasks_max
    from slicectl.core.config.values import TaskShare

    share = parse_tasks_max(value)
    assert share == TaskShare(permyriad, text)
    assert str(share) == text and share.needs() == needs


@pytest.mark.parametrize(("value", "message", "hint"), [
    ("101%", "'101%' is more than all of the kernel's task limit",
     "a share of the task limit is 0% to 100% of the least of kernel.threads-max, "
     "kernel.pid_max - 1 and the root cgroup's pids.max"),
    ("0%", "'0%' is out of range: systemd takes more than 0% here",
     "write at least 1 task, or infinity for no limit"),
    ("50.255%", "'50.255%' is not a share of the task limit systemd takes: % takes two "
     "decimals (50.25%)", "round it, e.g. 50.25%"),
    ("50 %", "'50 %' is not a number of tasks or a share of the task limit",
     "write a share as systemd does, 50%, 12.5%, 505‰ or 5050‱ (no space), or a number of "
     "tasks such as 4096"),
    ("4096", "expected a number of tasks, a share such as 50%, or infinity, got '4096'", None),
])
def test_parse_tasks_max_refuses_what_systemd_refuses(value: str, message: str,
                                                      hint: str | None) -> None:
    from slicectl.core.config.parsers import parse_tasks_max

    with pytest.raises(ValueError) as e:
        parse_tasks_max(value)
    assert (str(e.value), getattr(e.value, "hint", None)) == (message, hint)


@pytest.mark.parametrize(("limit", "permyriad", "file", "bus"), [
    # system_tasks_max_scale: scaled and rounded down; all of the limit at 100 %
    (32767, 5000, 16383, 16383),
    (32767, 10_000, 32767, 32767),
    (4194303, 1500, 629145, 629145),
    # 33.33% of 1000: the file's permyriad and the bus's UINT32 scale round one apart
    (1000, 3333, 333, 333),
    (30000, 3333, 9999, 9998),
    (50, 1, 0, 0),
])
def test_share_of_tasks_as_systemd_computes_it(limit: int, permyriad: int, file: int,
                                               bus: int) -> None:
    from slicectl.core.config.values import TaskShare

    share = TaskShare(permyriad, "x")
    assert (share.tasks_of(limit), share.tasks_over_dbus(limit)) == (file, bus)


def test_share_travels_as_tasks_max_scale_and_all_of_it_as_the_count() -> None:
    from slicectl.core.config.values import TaskShare
    from slicectl.core.properties.kinds import HostLimits, Tasks, TaskShareLive

    kind = Tasks(scale_since=231)
    half = kind.live_on(TaskShare(5000, "50%"), HostLimits(tasks=32767))
    assert half == TaskShareLive(TaskShare(5000, "50%"), 32767)
    assert kind.wire_name("TasksMax", half) == ("TasksMaxScale", "u")
    assert kind.to_wire(half) == 2**31
    assert kind.same(16383, half) and not kind.same(16384, half)
    assert kind.show(half) == "50% of the task limit (16383)"
    full = kind.live_on(TaskShare(10_000, "100%"), HostLimits(tasks=32767))
    assert kind.wire_name("TasksMax", full) == ("TasksMax", "t")
    assert kind.to_wire(full) == 32767
    unknown = kind.live_on(TaskShare(5000, "50%"), HostLimits())
    assert not kind.same(16383, unknown) and kind.show(unknown) == "50% of the task limit"
    assert kind.file(TaskShare(5050, "505‰")) == "505‰" and kind.from_json("505‰") == TaskShare(
        5050, "505‰")


def test_task_limit_is_the_least_of_systemds_three_sources(tmp_path: Path) -> None:
    from slicectl.host.topology.sysfs import task_limit

    kernel = tmp_path / "proc/sys/kernel"
    kernel.mkdir(parents=True)
    (kernel / "pid_max").write_text("32768\n")
    (kernel / "threads-max").write_text("192730\n")
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    assert task_limit(tmp_path / "proc", cgroup) == 32767  # pid_max - 1; no root pids.max
    (cgroup / "pids.max").write_text("max\n")
    assert task_limit(tmp_path / "proc", cgroup) == 32767
    (cgroup / "pids.max").write_text("1000\n")
    assert task_limit(tmp_path / "proc", cgroup) == 1000
    assert task_limit(tmp_path / "nowhere", tmp_path / "nowhere") == 0
