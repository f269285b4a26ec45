"""Kinds of property values (slicectl.core.properties.kinds): each value as a unit file, plan JSON,
the live value systemd reports and people read, and the cgroup file that proves the kernel took it.
The D-Bus forms of every property, against hand-computed wire values, are in test_systemd.py."""

from __future__ import annotations

from typing import Any

import pytest

from slicectl.core.config.values import INFINITY, UINT32_MAX, UINT64_MAX
from slicectl.core.properties.kinds import (
    Bool,
    Bytes,
    CgroupExpectation,
    Choice,
    CpuSet,
    Devices,
    Duration,
    Kind,
    Limit,
    Permyriad,
    PlanValue,
    Quota,
    Weight,
    count_text,
    cpu_max_text,
    cpuset_text,
    has_entries,
    page_bytes,
    same_cpu_max,
    same_cpus,
    weight_text,
)

SDA_SDB = (("/dev/sda", INFINITY), ("/dev/sdb", 5_000_000))


@pytest.mark.parametrize(("kind", "value", "lines"), [
    (CpuSet(), frozenset({0, 1, 2, 3, 8}), ["0-3,8"]),
    (Weight(), 0, ["idle"]),
    (Weight(), 300, ["300"]),
    (Quota(), 150, ["150%"]),
    (Duration(), 100_000, ["100ms"]),
    (Limit(), INFINITY, ["infinity"]),
    (Bytes(), 1 << 30, ["1G"]),
    (Bytes(), INFINITY, ["infinity"]),
    (Bool(default=True), False, ["no"]),
    (Permyriad(), 1250, ["12.5%"]),
    (Permyriad(), 6000, ["60%"]),
    # an empty assignment first: it resets the devices earlier drop-ins set
    (Devices(), SDA_SDB, ["", "/dev/sda infinity", "/dev/sdb 5000000"]),
])
def test_unit_file_lines(kind: Kind, value: PlanValue, lines: list[str]) -> None:
    assert kind.lines(value) == lines


@pytest.mark.parametrize(("kind", "value", "data"), [
    (CpuSet(), frozenset({0, 1, 2, 3, 8}), "0-3,8"),
    (Weight(), 0, "idle"),
    (Weight(), 200, 200),
    (Limit(), INFINITY, "infinity"),
    (Bytes(), 1 << 30, 1 << 30),
    (Bool(default=True), False, False),
    (Choice("auto", "kill"), "kill", "kill"),
    (Devices(), SDA_SDB, {"/dev/sda": "infinity", "/dev/sdb": 5_000_000}),
])
def test_plan_json(kind: Kind, value: PlanValue, data: Any) -> None:
    """docs/plan-json.md's spelling of each kind, and back."""
    assert kind.json(value) == data
    assert kind.from_json(data) == value


@pytest.mark.parametrize(("kind", "data", "message"), [
    (Kind(), True, "expected a whole number, got True"),
    (Kind(), "5", "expected a whole number, got '5'"),
    (Bool(default=True), "yes", "expected true or false, got 'yes'"),
    (Choice("auto", "kill"), "stop", "expected one of auto, kill, got 'stop'"),
    (Devices(), ["/dev/sda"], "expected a mapping of device paths, got ['/dev/sda']"),
    (Devices(), {"/dev/sda": "５"},  # int() takes any script's digits, systemd 0-9 only
     "expected whole numbers or infinity, got {'/dev/sda': '５'}"),
    (CpuSet(), "٠-٣", "'٠-٣' holds '٠' (U+0660 ARABIC-INDIC DIGIT ZERO), a digit other than "
     "0-9: systemd reads only the ASCII digits 0-9 and would ignore the setting"),
])
def test_plan_json_refused(kind: Kind, data: Any, message: str) -> None:
    with pytest.raises(ValueError) as e:
        kind.from_json(data)
    assert str(e.value) == message


@pytest.mark.parametrize(("kind", "value", "live"), [
    (Quota(), 150, 1_500_000),  # CPUQuotaPerSecUSec: µs of CPU time per second
    (Bytes(), INFINITY, None),  # a limit at infinity is unset
    (Bytes(protection=True), INFINITY, UINT64_MAX),  # a protection at infinity is not
    (Limit(), INFINITY, None),
    (Permyriad(), 6000, 2_576_980_377),  # 60 % of UINT32_MAX
    (Permyriad(), 10_000, UINT32_MAX),
    (Devices(), SDA_SDB, (("/dev/sda", UINT64_MAX), ("/dev/sdb", 5_000_000))),
    (Bool(default=True), 0, False),
])
def test_live_value_that_means_the_plan_value_is_in_force(kind: Kind, value: PlanValue,
                                                          live: Any) -> None:
    assert kind.live(value) == live


@pytest.mark.parametrize(("kind", "live", "shown"), [
    (CpuSet(), frozenset(), "(unset)"),
    (CpuSet(), frozenset({4, 5, 6}), "4-6"),
    (Weight(), 0, "idle"),
    (Weight(), None, "(unset)"),
    (Quota(), 1_500_000, "150%"),
    (Quota(), 250_000, "25%"),
    (Bytes(), None, "(unset)"),
    (Bytes(unset_text="infinity"), None, "infinity"),
    (Bytes(protection=True), 0, "(unset)"),
    (Bytes(protection=True), 4096, "4096"),
    (Permyriad(), 0, "(unset)"),
    (Permyriad(), 2_576_980_377, "60%"),
    (Devices(" B/s"), (("/dev/sda", UINT64_MAX), ("/dev/sdb", 5)),
     "/dev/sda infinity B/s, /dev/sdb 5 B/s"),
    (Devices(), (), "(unset)"),
    (Bool(default=True), True, "yes"),
])
def test_shown_to_people(kind: Kind, live: Any, shown: str) -> None:
    assert kind.show(live) == shown


def test_unset_is_what_systemd_reports_for_a_property_not_set() -> None:
    assert Bytes().unset is None and Bytes(protection=True).unset == 0
    assert CpuSet().unset == frozenset() and Devices().unset == ()
    assert Choice("auto", "kill").unset == "auto"  # systemd's default comes first
    assert Bool(default=True).unset is True


def test_only_device_lists_append_on_dbus() -> None:
    """systemd adds each entry of an a(st) property to the unit's list: only those kinds must
    be sent empty first."""
    assert Devices().appends
    assert not any(k.appends for k in (CpuSet(), Weight(), Bytes(), Bool(True), Choice("a")))


@pytest.mark.parametrize(("quota", "period", "text"), [
    (1_500_000, None, "150000 100000"),
    (None, 50_000, "max 50000"),
    (None, None, "max 100000"),
    (500, 100_000, "1000 100000"),  # the kernel's floor: 1 ms per period
])
def test_cpu_max_text(quota: int | None, period: int | None, text: str) -> None:
    assert cpu_max_text(quota, period) == text


def test_cgroup_file_texts() -> None:
    assert page_bytes(4097) == "4096"  # memory limits are kept in whole pages
    assert page_bytes(None) == page_bytes(UINT64_MAX) == "max"
    assert count_text(None) == count_text(UINT64_MAX) == "max" and count_text(7) == "7"
    assert cpuset_text(frozenset({0, 2, 3, 4})) == "0,2-4"
    assert weight_text(None) == "100" and weight_text(300) == "300"


def test_comparisons_of_cgroup_files() -> None:
    assert same_cpus("0-1,2", "0-2")
    # systemd stretches the period of tiny quotas: the ratio (cores) is what must match
    assert same_cpu_max("300000 200000", "150000 100000")
    assert not same_cpu_max("150000 100000", "max 100000")
    assert has_entries("8:0 rbps=5 wbps=max\n8:16 rbps=1\n", "8:0 rbps=5")
    assert not has_entries("8:16 rbps=5\n", "8:0 rbps=5")


def test_a_missing_file_matches_only_the_kernels_default() -> None:
    """No file means the controller is off for the cgroup: fine only when slicectl wants the
    default there (or what an older kernel does without the file)."""
    assert CgroupExpectation("cpu.weight", "100").matches(None)
    assert CgroupExpectation("cpu.max", "max 100000").matches(None)
    assert not CgroupExpectation("cpu.weight", "300").matches(None)
    assert CgroupExpectation("memory.zswap.writeback", "1", missing="1").matches(None)
    assert not CgroupExpectation("memory.zswap.writeback", "1").matches(None)
    assert CgroupExpectation("memory.max", "4096").matches("4096\n")
    assert CgroupExpectation("cpu.max", "150000 100000", same_cpu_max).matches("300000 200000")
