"""Parsers of tenants.yaml values (slicectl.core.config.parsers): what each accepts, the typed value
it returns, and the message a user reads for what it refuses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from slicectl.core.config import parsers as p
from slicectl.core.config.values import INFINITY


@pytest.mark.parametrize(("parse", "value", "expected"), [
    (p.parse_cpus, 8, 8),
    (p.parse_cpus, "0-3,16-19", frozenset({0, 1, 2, 3, 16, 17, 18, 19})),
    (p.parse_cpus, [3, 1], frozenset({1, 3})),
    (p.parse_cpulist_only, "2", frozenset({2})),
    (p.parse_housekeeping_cpus, 0, 0),
    (p.parse_housekeeping_cpus, "0,16", frozenset({0, 16})),
    (p.parse_numa, "spread", p.Numa.SPREAD),
    (p.parse_nodes, 1, (1,)),
    (p.parse_nodes, [2, 0], (0, 2)),
    (p.parse_nodes, "0-1", (0, 1)),
    (p.parse_bool, False, False),
    (p.parse_permyriad, "12.5%", 1250),
    (p.parse_permyriad, "60%", 6000),
    (p.parse_permyriad, "100%", 10_000),
    (p.parse_rate, "5M", 5_000_000),
    (p.parse_rate, "1k", 1000),
    (p.parse_rate, 7, 7),
    (p.parse_rate, "infinity", INFINITY),
    (p.parse_tasks_max, "Infinity", INFINITY),
    (p.parse_tasks_max, 512, 512),
    (p.parse_quota_period, "100ms", 100_000),
    (p.parse_description, "  the database  ", "the database"),
    (p.parse_weight(allow_idle=True), "idle", 0),
    (p.parse_weight(allow_idle=False), 10000, 10000),
    (p.parse_choice("auto", "kill"), "kill", "kill"),
    (p.parse_share(0, 100), "90%", 90),
    (p.parse_share(0, 100), 5, 5),
    (p.parse_balance_time(p.MIN_BALANCE_WINDOW_US), "500ms", 500_000),
    (p.parse_devices(p.parse_rate), {"/dev/sdb": "1M", "/dev/sda": "infinity"},
     (("/dev/sda", INFINITY), ("/dev/sdb", 1_000_000))),
    (p.parse_unit_list(p.SLICE_MEMBER_TYPES), "app@1.service", ("app@1.service",)),
])
def test_accepts(parse: Callable[[Any], Any], value: Any, expected: Any) -> None:
    assert parse(value) == expected


@pytest.mark.parametrize(("parse", "value", "message"), [
    (p.parse_cpus, 0, "a CPU count must be at least 1, got 0"),
    (p.parse_cpus, 8193, "a CPU count must be at most 8192, got 8193"),
    (p.parse_cpus, True, 'expected a CPU count or a cpulist such as "0-3,16-19"'),
    (p.parse_cpus, "3-1", "range '3-1' runs backwards in cpulist '3-1'"),
    # bounded before the range expands: this would otherwise allocate gigabytes
    (p.parse_cpus, "0-2147483648", "CPU '2147483648' is out of range: at most 8191"),
    (p.parse_cpus, " ", "the cpulist is empty"),
    (p.parse_cpus, [], "a CPU list must hold CPU numbers from 0 to 8191"),
    (p.parse_cpus, 1.5, 'expected a CPU count or a cpulist such as "0-3,16-19", got 1.5'),
    (p.parse_cpulist_only, 4, 'expected a cpulist such as "0-1" here, not a count (4)'),
    (p.parse_numa, "near", "expected one of local, spread, any; got 'near'"),
    (p.parse_nodes, [0, 0], "a node is listed twice"),
    (p.parse_nodes, "5000", "node '5000' is out of range: at most 1023"),
    (p.parse_nodes, [-1], "expected a list of node numbers (0 to 1023) such as [0, 1], got [-1]"),
    (p.parse_bool, "yes", "expected true or false, got 'yes'"),
    (p.parse_bool, 1, "expected true or false, got 1"),
    (p.parse_permyriad, "100.5%", "'100.5%' is more than 100%"),
    (p.parse_permyriad, "60", "'60' is not a percent from 0% to 100% (e.g. 60% or 12.5%)"),
    (p.parse_rate, "5X",
     "'5X' is not a rate (a number with K, M, G or T, base 1000, or infinity)"),
    (p.parse_rate, 0,
     "0 is out of range: systemd takes 1 or more (write infinity for no limit)"),
    (p.parse_tasks_max, 0,
     "0 is out of range: systemd takes 1 or more tasks (write infinity for no limit)"),
    (p.parse_tasks_max, "lots",
     "expected a number of tasks, a share such as 50%, or infinity, got 'lots'"),
    (p.parse_description, "a\nb", "must be a single line without control characters"),
    (p.parse_description, "x" * 201, "is longer than 200 characters"),
    (p.parse_description, "C:\\",
     "ends in a backslash, which systemd reads as a line continuation"),
    (p.parse_weight(allow_idle=False), "idle",
     "expected a whole number from 1 to 10000, got 'idle'"),
    (p.parse_weight(allow_idle=True), "x",
     "expected a whole number from 1 to 10000 or idle, got 'x'"),
    (p.parse_weight(allow_idle=True), 0, "0 is out of range 1..10000"),
    (p.parse_choice("auto", "kill"), "stop", "expected one of auto, kill; got 'stop'"),
    (p.parse_share(10, 90), "95%", "'95%' is out of range 10%..90%"),
    (p.parse_share(10, 90), "half", "'half' is not a percent (write it like 90%)"),
    (p.parse_balance_time(p.MIN_BALANCE_WINDOW_US), "10ms",
     "'10ms' is shorter than 30ms: CPU use measured over less is noise (Togashi et al.)"),
    (p.parse_balance_time(1_000_000), "2000000s", "'2000000s' is out of range 1s to 1 day"),
    (p.check_device_path, "/dev/../sda", "'/dev/../sda' is not normalized (no //, /./ or /../)"),
    (p.check_device_path, "dev/sda",
     "'dev/sda' is not an absolute path without spaces, such as /dev/sda or /var/lib/db"),
    (p.parse_devices(p.parse_rate), {"/dev/sda": 0},
     "'/dev/sda': 0 is out of range: systemd takes 1 or more (write infinity for no limit)"),
    (p.parse_devices(p.parse_rate), {}, "expected a mapping of device paths to values, such as "
     "{/dev/sda: 50M}"),
    (p.parse_devices(p.parse_rate), {f"/dev/sd{i}": 1 for i in range(65)},
     "65 devices: at most 64"),
    (p.parse_unit_list(p.SLICE_MEMBER_TYPES), ["a.service", "a.service"], "a unit is listed twice"),
    (p.parse_unit_list(p.SLICE_MEMBER_TYPES), [1], "expected a list of unit names such as "
     "[app.service]"),
])
def test_refuses_with_a_message_for_the_user(parse: Callable[[Any], Any], value: Any,
                                             message: str) -> None:
    with pytest.raises(ValueError) as e:
        parse(value)
    assert str(e.value) == message


@pytest.mark.parametrize(("name", "message"), [
    ("/etc/app.service", "'/etc/app.service' is not a valid systemd unit name"),
    ("app service", "'app service' is not a valid systemd unit name"),
    ("app.service\n", "'app.service\\n' is not a valid systemd unit name"),
    ("backup.timer", "'backup.timer' must end in .service, .socket, .mount, .swap"),
    ("app@.service", "'app@.service' is a template; name an instance such as app@1.service"),
])
def test_member_unit_names(name: str, message: str) -> None:
    with pytest.raises(ValueError) as e:
        p.check_unit_name(name, p.SLICE_MEMBER_TYPES, folder=True)
    assert str(e.value) == message


def test_unit_name_length_leaves_room_for_the_drop_in_folder() -> None:
    """slicectl writes NAME.d/, so a member unit may be two bytes shorter than systemd allows."""
    longest = "a" * (p.NAME_MAX - 2 - len(".service")) + ".service"
    assert p.check_unit_name(longest, folder=True) == longest
    two_more = "aa" + longest
    assert p.check_unit_name(two_more) == two_more  # a unit of its own: systemd's limit
    with pytest.raises(ValueError, match=r"is 255 bytes long; at most 253 fit \(slicectl "
                                         r"writes a aaaaaaaaaaaa….d/ folder for it\)"):
        p.check_unit_name(two_more, folder=True)


@pytest.mark.parametrize("name", ["db1", "a", "0", "web_2"])
def test_tenant_names_accepted(name: str) -> None:
    assert p.TENANT_NAME_RE.fullmatch(name)


@pytest.mark.parametrize("name", ["Db1", "_db", "db-1", "db1\n", ""])
def test_tenant_names_refused(name: str) -> None:
    """A "-" would make a slice hierarchy; a final newline must not slip through `$`."""
    assert not p.TENANT_NAME_RE.fullmatch(name)
