"""slicectl.host.systemd.systemd over a private dbus-daemon against slicectl/demo/fakesystemd.py,
plus its tables.

Why this module runs past 400 lines: every property of the table travels over the bus (one
test each), next to the Manager calls, jobs and errors the client maps.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from dbus_fast import Message, Variant

from slicectl.core.config.values import UINT64_MAX
from slicectl.core.errors import SystemdError
from slicectl.core.properties.kinds import LiveValue
from slicectl.core.properties.properties import PROPERTIES
from slicectl.demo.bus import PrivateBus
from slicectl.demo.fakesystemd import FakeSystemd
from slicectl.host.systemd.systemd import Systemd, decode, encode

UNIT = "tenants-db1.slice"
GiB = 1024**3


# --- the property table, without a bus ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "wire"),
    [
        ("AllowedCPUs", frozenset({1, 5}), Variant("ay", b"\x22")),
        ("AllowedCPUs", frozenset({0, 8, 17}), Variant("ay", b"\x01\x01\x02")),
        ("AllowedCPUs", frozenset(), Variant("ay", b"")),
        ("AllowedMemoryNodes", None, Variant("ay", b"")),
        ("CPUWeight", 200, Variant("t", 200)),
        ("CPUWeight", None, Variant("t", UINT64_MAX)),
        ("CPUQuotaPerSecUSec", 1_500_000, Variant("t", 1_500_000)),
        ("CPUQuotaPeriodUSec", None, Variant("t", UINT64_MAX)),
        ("MemoryMax", 24 * GiB, Variant("t", 24 * GiB)),
        ("MemorySwapMax", 0, Variant("t", 0)),
        ("MemoryLow", None, Variant("t", 0)),
    ],
)
def test_encode(name: str, value: LiveValue, wire: Variant) -> None:
    assert encode(name, value) == wire


@pytest.mark.parametrize(
    ("name", "raw", "value"),
    [
        ("AllowedCPUs", b"\x22\x00\x00\x00\x00\x00\x00\x00", frozenset({1, 5})),  # systemd pads
        ("EffectiveCPUs", b"\x00\x01" + bytes(6), frozenset({8})),
        ("AllowedMemoryNodes", b"", frozenset()),
        ("CPUWeight", UINT64_MAX, None),
        ("MemoryHigh", 22 * GiB, 22 * GiB),
        ("MemoryMin", 0, 0),
        ("DropInPaths", ["/etc/a.conf"], ("/etc/a.conf",)),
        ("ControlGroup", "/system.slice", "/system.slice"),
    ],
)
def test_decode(name: str, raw: Any, value: object) -> None:
    assert decode(name, raw) == value


@pytest.mark.parametrize(
    ("name", "value"),
    [("ControlGroup", "/x"), ("EffectiveCPUs", frozenset()), ("Nope", 1), ("CPUWeight", -1),
     ("CPUWeight", True), ("MemoryMax", 2**64), ("AllowedCPUs", 3), ("MemoryMax", "1G")],
)
def test_encode_rejects(name: str, value: Any) -> None:
    with pytest.raises(SystemdError) as info:
        encode(name, value)
    assert info.value.prop == name and info.value.hint


# Every settable property: a live value, the Variant systemd must be sent for it (worked out by
# hand from org.freedesktop.systemd1(5) and systemd.resource-control(5), not by our encoder), and
# what systemd sends back for it (masks padded to 8 bytes, device lists in its own order).
UINT64_MAX_LITERAL = 18446744073709551615
WIRE: dict[str, tuple[LiveValue, Variant, Any]] = {
    "AllowedCPUs": (frozenset({0, 63}), Variant("ay", b"\x01\x00\x00\x00\x00\x00\x00\x80"),
                    b"\x01\x00\x00\x00\x00\x00\x00\x80"),
    "AllowedMemoryNodes": (frozenset({1, 2}), Variant("ay", b"\x06"), b"\x06" + bytes(7)),
    "StartupAllowedCPUs": (frozenset({8}), Variant("ay", b"\x00\x01"), b"\x00\x01" + bytes(6)),
    "CPUWeight": (300, Variant("t", 300), 300),
    "StartupCPUWeight": (None, Variant("t", UINT64_MAX_LITERAL), UINT64_MAX_LITERAL),
    "CPUQuotaPerSecUSec": (1_500_000, Variant("t", 1_500_000), 1_500_000),
    "CPUQuotaPeriodUSec": (50_000, Variant("t", 50_000), 50_000),
    "MemoryMin": (0, Variant("t", 0), 0),
    "MemoryLow": (16 * GiB, Variant("t", 17_179_869_184), 17_179_869_184),
    "MemoryHigh": (None, Variant("t", UINT64_MAX_LITERAL), UINT64_MAX_LITERAL),
    "MemoryMax": (1 << 30, Variant("t", 1_073_741_824), 1_073_741_824),
    "MemorySwapMax": (0, Variant("t", 0), 0),
    "MemoryZSwapMax": (None, Variant("t", UINT64_MAX_LITERAL), UINT64_MAX_LITERAL),
    "MemoryZSwapWriteback": (False, Variant("b", False), False),
    "TasksMax": (512, Variant("t", 512), 512),
    "IOWeight": (200, Variant("t", 200), 200),
    "IODeviceWeight": ((("/dev/sda", 200),), Variant("a(st)", [["/dev/sda", 200]]),
                       [["/dev/sda", 200]]),
    "IOReadBandwidthMax": ((("/dev/sda", 5_000_000), ("/dev/sdb", UINT64_MAX_LITERAL)),
                           Variant("a(st)", [["/dev/sda", 5_000_000],
                                             ["/dev/sdb", UINT64_MAX_LITERAL]]),
                           [["/dev/sdb", UINT64_MAX_LITERAL], ["/dev/sda", 5_000_000]]),
    "IOWriteBandwidthMax": ((), Variant("a(st)", []), []),
    "IOReadIOPSMax": ((("/dev/nvme0n1", 1000),), Variant("a(st)", [["/dev/nvme0n1", 1000]]),
                      [["/dev/nvme0n1", 1000]]),
    "IOWriteIOPSMax": ((("/dev/sda", 10),), Variant("a(st)", [["/dev/sda", 10]]),
                       [["/dev/sda", 10]]),
    "ManagedOOMMemoryPressure": ("kill", Variant("s", "kill"), "kill"),
    "CPUSetPartition": ("isolated", Variant("s", "isolated"), "isolated"),
    # 60 % of UINT32_MAX (4294967295 * 0.6), as systemd scales the limit
    "ManagedOOMMemoryPressureLimit": (2_576_980_377, Variant("u", 2_576_980_377), 2_576_980_377),
}


def test_every_settable_property_has_a_hand_computed_wire_value() -> None:
    """A new row of the property table fails here until its wire form is written down."""
    assert set(WIRE) == {p.dbus for p in PROPERTIES}


@pytest.mark.parametrize("name", sorted(WIRE))
def test_every_settable_property_encodes_as_systemd_expects(name: str) -> None:
    value, wire, _ = WIRE[name]
    assert encode(name, value) == wire


@pytest.mark.parametrize("name", sorted(WIRE))
def test_every_settable_property_decodes_what_systemd_returns(name: str) -> None:
    value, _, returned = WIRE[name]
    assert decode(name, returned) == value


def test_the_fake_systemd_knows_every_property_of_the_table() -> None:
    """The fake's own table (written apart, from systemd's documentation) and slicectl's name
    the same properties with the same signatures and the same "unset" values: adding a row to
    slicectl's table fails here until the fake knows the property too."""
    from slicectl.demo.fakesystemd import SETTABLE

    assert {p.dbus: p.signature for p in PROPERTIES} == {
        name: signature for name, (signature, _) in SETTABLE.items()}
    for p in PROPERTIES:
        unset = SETTABLE[p.dbus][1]
        assert decode(p.dbus, unset) == (() if p.kind.appends else p.kind.unset), p.dbus


SAMPLES: dict[str, LiveValue] = {"ay": frozenset({0, 63}), "t": 4096, "u": 4096, "b": False,
                                 "a(st)": (("/dev/sda", 100), ("/dev/sdb", 2**64 - 1))}


# --- over the bus ------------------------------------------------------------------------------

ROUND_TRIPS: list[tuple[str, LiveValue]] = [
    ("AllowedCPUs", frozenset({1, 5})),
    ("AllowedCPUs", frozenset({0, 8, 15, 63, 64, 127})),  # several bytes, padded by systemd
    ("AllowedCPUs", frozenset()),
    ("AllowedMemoryNodes", frozenset({1})),
    ("CPUWeight", 300),
    ("CPUWeight", None),
    ("CPUQuotaPerSecUSec", 500_000),
    ("CPUQuotaPerSecUSec", None),
    ("CPUQuotaPeriodUSec", 50_000),
    ("MemoryMax", 256 * 1024**2),
    ("MemoryMax", None),
    ("MemoryHigh", 22 * GiB),
    ("MemorySwapMax", 0),
    ("MemoryLow", 16 * GiB),
    ("MemoryMin", 0),
]


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda p: p.dbus)
async def test_every_property_of_the_table_over_the_bus(systemd_client: Systemd,
                                                        prop: Any) -> None:
    # a word: the last of its choices (kill, isolated), never the default
    value = SAMPLES.get(prop.signature, prop.kind.choices[-1] if prop.signature == "s" else None)
    await systemd_client.set_unit_properties(UNIT, {prop.dbus: value}, runtime=True)
    state = await systemd_client.get_unit_properties(UNIT)
    assert state.props[prop.dbus] == value


@pytest.mark.parametrize(("name", "value"), ROUND_TRIPS)
async def test_set_then_read_back(systemd_client: Systemd, name: str, value: LiveValue) -> None:
    await systemd_client.set_unit_properties(UNIT, {name: value}, runtime=True)
    state = await systemd_client.get_unit_properties(UNIT)
    assert state.props[name] == value


async def test_set_sends_systemd_wire_values(systemd_client: Systemd,
                                             fake_systemd: FakeSystemd) -> None:
    props: dict[str, LiveValue] = {"AllowedCPUs": frozenset({1, 5}), "MemoryMax": None}
    await systemd_client.set_unit_properties(UNIT, props, runtime=False)
    assert fake_systemd.calls[0][1][:2] == (UNIT, False)
    assert fake_systemd.properties_set(UNIT) == [{"AllowedCPUs": b"\x22",
                                                  "MemoryMax": UINT64_MAX}]


async def test_unit_state_of_new_and_running_slice(systemd_client: Systemd,
                                                   fake_systemd: FakeSystemd) -> None:
    before = await systemd_client.get_unit_properties(UNIT)
    assert (before.load_state, before.active_state, before.control_group) == (
        "loaded", "inactive", "")
    assert before.props["CPUWeight"] is None and before.props["MemoryLow"] == 0
    await systemd_client.set_unit_properties(UNIT, {"AllowedCPUs": frozenset({1, 5, 9})}, True)
    await systemd_client.start_unit(UNIT)
    after = await systemd_client.get_unit_properties(UNIT)
    assert (after.active_state, after.sub_state, after.slice) == ("active", "active",
                                                                  "tenants.slice")
    assert after.control_group == "/tenants.slice/tenants-db1.slice"
    assert after.effective_cpus == frozenset({1, 5})  # the fake host has CPUs 0-7
    assert after.effective_memory_nodes == frozenset({0, 1, 2, 3})


async def test_control_group_and_cgroup_files(systemd_client: Systemd,
                                              fake_systemd: FakeSystemd) -> None:
    fake_systemd.add_unit("cron.service", slice="system.slice", fragment_path="/lib/cron",
                          drop_in_paths=["/etc/systemd/system/cron.service.d/50-slicectl.conf"])
    await systemd_client.start_unit("cron.service")
    cron = await systemd_client.get_unit_properties("cron.service")
    system = await systemd_client.get_unit_properties("system.slice")
    assert cron.control_group == "/system.slice/cron.service"
    assert cron.drop_in_paths == ("/etc/systemd/system/cron.service.d/50-slicectl.conf",)
    assert system.control_group == "/system.slice"

    await systemd_client.set_unit_properties(
        UNIT, {"CPUQuotaPerSecUSec": 500_000, "MemoryMax": 256 * 1024**2}, True)
    await systemd_client.start_unit(UNIT)
    assert fake_systemd.cgroup_root is not None
    folder = fake_systemd.cgroup_root / "tenants.slice" / UNIT
    assert (folder / "cpu.max").read_text() == "50000 100000\n"
    assert (folder / "memory.max").read_text() == "268435456\n"
    assert (folder / "memory.high").read_text() == "max\n"


async def test_reload_is_recorded_and_awaited(systemd_client: Systemd,
                                              fake_systemd: FakeSystemd) -> None:
    fake_systemd.reload_delay = 0.3
    started = time.monotonic()
    await systemd_client.reload()
    assert time.monotonic() - started >= 0.3
    assert fake_systemd.members() == ["Reload"]


async def test_start_waits_for_job_removed(systemd_client: Systemd,
                                           fake_systemd: FakeSystemd) -> None:
    fake_systemd.job_delay = 0.3
    started = time.monotonic()
    job = await systemd_client.start_unit(UNIT)
    assert time.monotonic() - started >= 0.3
    assert job.startswith("/org/freedesktop/systemd1/job/")
    assert fake_systemd.members() == ["Subscribe", "StartUnit"]


async def test_start_without_wait_returns_at_once(systemd_client: Systemd,
                                                  fake_systemd: FakeSystemd) -> None:
    fake_systemd.job_delay = 5
    started = time.monotonic()
    await systemd_client.start_unit(UNIT, wait=False)
    assert time.monotonic() - started < 1


async def test_job_removed_before_reply(dbus_daemon: str, fake_systemd: FakeSystemd) -> None:
    fake_systemd.signal_before_reply = True
    async with await Systemd.connect(dbus_daemon, job_timeout=2) as client:
        await client.start_unit(UNIT)
        await client.stop_unit(UNIT)
    assert fake_systemd.members() == ["Subscribe", "StartUnit", "StopUnit"]


async def test_stop_unit(systemd_client: Systemd) -> None:
    await systemd_client.start_unit(UNIT)
    await systemd_client.stop_unit(UNIT)
    state = await systemd_client.get_unit_properties(UNIT)
    assert (state.active_state, state.control_group) == ("inactive", "")


async def test_restart_unit_file_state_and_main_pid_of_a_service(
        systemd_client: Systemd, fake_systemd: FakeSystemd) -> None:
    fake_systemd.add_unit("irqbalance.service", active_state="active", sub_state="running",
                          unit_file_state="enabled", main_pid=700)
    assert await systemd_client.unit_file_state("irqbalance.service") == "enabled"
    assert await systemd_client.main_pid("irqbalance.service") == 700
    job = await systemd_client.restart_unit("irqbalance.service")
    assert job.startswith("/org/freedesktop/systemd1/job/")
    assert "RestartUnit" in fake_systemd.members()
    assert await systemd_client.main_pid("irqbalance.service") != 700  # a new process
    assert await systemd_client.unit_file_state("nope.service") == ""


async def test_failed_job_raises(systemd_client: Systemd, fake_systemd: FakeSystemd) -> None:
    fake_systemd.fail_job(UNIT, "dependency")
    with pytest.raises(SystemdError) as info:
        await systemd_client.start_unit(UNIT)
    assert str(info.value) == f"starting {UNIT} failed: the job's result is 'dependency'"
    assert info.value.unit == UNIT and f"systemctl status {UNIT}" in info.value.hint


async def test_job_that_never_finishes_times_out(dbus_daemon: str,
                                                 fake_systemd: FakeSystemd) -> None:
    fake_systemd.job_delay = 5
    async with await Systemd.connect(dbus_daemon, job_timeout=0.2) as client:
        with pytest.raises(SystemdError, match="did not finish within 0.2 s") as info:
            await client.start_unit(UNIT)
    assert info.value.unit == UNIT and info.value.hint


async def test_get_unit(systemd_client: Systemd) -> None:
    assert await systemd_client.get_unit("nope.slice") is None
    path = await systemd_client.load_unit(UNIT)
    assert await systemd_client.get_unit(UNIT) == path
    assert path == "/org/freedesktop/systemd1/unit/tenants_2ddb1_2eslice"


async def test_list_units_by_patterns(systemd_client: Systemd) -> None:
    await systemd_client.start_unit(UNIT)
    units = await systemd_client.list_units_by_patterns(["active"], ["tenants-*.slice"])
    assert [(u.name, u.active_state) for u in units] == [(UNIT, "active")]


# --- errors: what a caller sees ----------------------------------------------------------------

MAPPED_ERRORS = [
    ("org.freedesktop.systemd1.NoSuchUnit", "no such unit", "systemctl list-units"),
    ("org.freedesktop.systemd1.UnitMasked", "the unit is masked",
     "systemctl unmask tenants-db2.slice"),
    ("org.freedesktop.DBus.Error.AccessDenied", "permission denied", "run as root"),
    ("org.freedesktop.DBus.Error.InteractiveAuthorizationRequired", "permission denied",
     "run as root"),
    ("org.freedesktop.DBus.Error.InvalidArgs", "systemd rejected the value", "resource-control"),
    ("org.freedesktop.DBus.Error.PropertyReadOnly", "systemd cannot set this property", "too old"),
    ("org.freedesktop.DBus.Error.ServiceUnknown", "systemd is not on the bus", "PID 1"),
    ("org.freedesktop.DBus.Error.NoReply", "no reply from systemd", "systemctl status"),
    ("org.freedesktop.DBus.Error.Timeout", "no reply from systemd", "systemctl status"),
    ("org.example.Unheard", "systemd answered org.example.Unheard", "journalctl"),
]


@pytest.mark.parametrize(("error", "what", "hint"), MAPPED_ERRORS)
async def test_set_errors_name_unit_property_and_hint(
    dbus_daemon: str, fake_systemd: FakeSystemd, error: str, what: str, hint: str
) -> None:
    fake_systemd.fail_on("SetUnitProperties", unit="tenants-db2.slice", error=error,
                         message="told to fail")
    # A call's timeout of 1 s, not 25: "systemd is not on the bus" is waited out for that
    # long (systemd away for a daemon-reexec comes back) before it is reported.
    async with await Systemd.connect(dbus_daemon, timeout=1.0) as systemd_client:
        await systemd_client.set_unit_properties(UNIT, {"CPUWeight": 100}, True)  # other: ok
        with pytest.raises(SystemdError) as info:
            await systemd_client.set_unit_properties("tenants-db2.slice", {"CPUWeight": 100},
                                                     True)
    err = info.value
    assert str(err) == f"setting CPUWeight on tenants-db2.slice failed: {what} (told to fail)"
    assert (err.unit, err.prop, err.dbus_error) == ("tenants-db2.slice", "CPUWeight", error)
    assert hint in err.hint


async def test_error_names_the_property_systemd_complained_about(
    systemd_client: Systemd,
) -> None:
    with pytest.raises(SystemdError) as info:
        await systemd_client.set_unit_properties(
            UNIT, {"MemoryMax": GiB, "CPUWeight": 0, "AllowedCPUs": frozenset({1})}, True)
    assert info.value.prop == "CPUWeight"
    assert "Value specified in CPUWeight is out of range" in str(info.value)


async def test_fail_only_the_nth_call(systemd_client: Systemd, fake_systemd: FakeSystemd) -> None:
    fake_systemd.fail_on("SetUnitProperties", nth=2)
    await systemd_client.set_unit_properties(UNIT, {"CPUWeight": 100}, True)
    with pytest.raises(SystemdError):
        await systemd_client.set_unit_properties(UNIT, {"CPUWeight": 200}, True)
    await systemd_client.set_unit_properties(UNIT, {"CPUWeight": 300}, True)
    assert (await systemd_client.get_unit_properties(UNIT)).props["CPUWeight"] == 300


async def test_reload_failure(systemd_client: Systemd, fake_systemd: FakeSystemd) -> None:
    fake_systemd.fail_on("Reload", error="org.freedesktop.DBus.Error.AccessDenied")
    with pytest.raises(SystemdError, match="^reloading systemd failed: permission denied") as i:
        await systemd_client.reload()
    assert "run as root" in i.value.hint


async def test_reload_without_answer_is_no_reply(dbus_daemon: str,
                                                 fake_systemd: FakeSystemd) -> None:
    fake_systemd.reload_delay = 5
    async with await Systemd.connect(dbus_daemon, job_timeout=0.2) as client:
        with pytest.raises(SystemdError, match="no reply from systemd") as info:
            await client.reload()
    assert info.value.dbus_error == "org.freedesktop.DBus.Error.NoReply"


async def test_masked_and_missing_units(systemd_client: Systemd,
                                        fake_systemd: FakeSystemd) -> None:
    fake_systemd.add_unit("cron.service", load_state="masked")
    with pytest.raises(SystemdError, match="starting cron.service failed: the unit is masked"):
        await systemd_client.start_unit("cron.service")
    with pytest.raises(SystemdError, match="no such unit") as info:
        await systemd_client.start_unit("oracle@db1.service")
    assert info.value.unit == "oracle@db1.service"
    assert info.value.hint == "check the name with `systemctl list-units --all oracle@db1.service`"


async def test_read_errors_name_the_unit(systemd_client: Systemd,
                                         fake_systemd: FakeSystemd) -> None:
    fake_systemd.fail_on("LoadUnit", error="org.freedesktop.DBus.Error.AccessDenied")
    with pytest.raises(SystemdError, match=f"loading {UNIT} failed") as info:
        await systemd_client.get_unit_properties(UNIT)
    assert info.value.unit == UNIT and "root" in info.value.hint


async def test_unsettable_property_is_refused_before_any_call(
    systemd_client: Systemd, fake_systemd: FakeSystemd
) -> None:
    with pytest.raises(SystemdError, match="cannot set property 'ControlGroup'"):
        await systemd_client.set_unit_properties(UNIT, {"ControlGroup": frozenset()}, True)
    assert fake_systemd.calls == []


async def test_bus_without_systemd(dbus_daemon: str) -> None:
    async with await Systemd.connect(dbus_daemon) as client:
        with pytest.raises(SystemdError) as info:
            await client.reload()
    assert info.value.dbus_error == "org.freedesktop.DBus.Error.ServiceUnknown"
    assert info.value.hint == "is systemd running as PID 1? slicectl apply needs a real systemd"


@pytest.mark.parametrize("address", ["unix:path=/nonexistent/bus", "tcp:host=127.0.0.1,port=1",
                                     "bogus"])
async def test_connect_to_dead_address(address: str) -> None:
    with pytest.raises(SystemdError, match="^cannot connect to the system bus") as info:
        await Systemd.connect(address)
    assert "PID 1" in info.value.hint


async def test_connect_to_stale_socket(tmp_path: Path) -> None:
    stale = tmp_path / "bus"
    stale.touch()
    with pytest.raises(SystemdError, match=str(stale)):
        await Systemd.connect(f"unix:path={stale}")


async def test_call_after_close(dbus_daemon: str, fake_systemd: FakeSystemd) -> None:
    client = await Systemd.connect(dbus_daemon)
    await client.close()
    with pytest.raises(SystemdError, match="lost the connection to the bus"):
        await client.get_unit(UNIT)


def test_unit_object_path_escapes_like_systemd() -> None:
    from slicectl.host.systemd.systemd import unit_object_path

    base = "/org/freedesktop/systemd1/unit/"
    assert unit_object_path("tenants-t000.slice") == base + "tenants_2dt000_2eslice"
    assert unit_object_path("init.scope") == base + "init_2escope"
    assert unit_object_path("0day.service") == base + "_30day_2eservice"  # leading digit
    assert unit_object_path("") == base + "_"


async def test_control_group_in_one_call(systemd_client: Systemd,
                                         fake_systemd: FakeSystemd) -> None:
    assert await systemd_client.control_group("tenants-x.slice") == ""  # not started
    await systemd_client.start_unit("tenants-x.slice")
    assert await systemd_client.control_group("tenants-x.slice") == (
        "/tenants.slice/tenants-x.slice")
    assert await systemd_client.control_group("tenants.target") == ""  # no cgroup type


async def test_many_concurrent_reads_are_queued_not_failed(systemd_client: Systemd) -> None:
    # 1,500 calls at once: more than fit in the socket's send buffer unqueued.
    import asyncio

    names = [f"tenants-q{i:04d}.slice" for i in range(300)]
    states = await asyncio.gather(*(systemd_client.get_unit_properties(n) for n in names))
    assert [s.unit for s in states] == names


class Watched:
    """A client's bus connection whose every call and reply `watch(msg, reply)` sees."""

    def __init__(self, bus: Any, watch: Callable[[Message, Message], Awaitable[None]]) -> None:
        self._bus, self._watch = bus, watch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bus, name)

    async def call(self, msg: Message) -> Message:
        reply = await self._bus.call(msg)
        await self._watch(msg, reply)
        return reply  # type: ignore[no-any-return]


async def test_systemd_away_from_the_bus_for_a_moment_is_waited_for(
        systemd_client: Systemd, fake_systemd: FakeSystemd) -> None:
    """After systemd has answered once, its absence (a daemon-reexec) is waited out: the call
    is sent again until systemd owns its name again."""
    await systemd_client.version()
    bus = fake_systemd._bus
    assert bus is not None
    await bus.release_name("org.freedesktop.systemd1")
    away: list[str] = []

    async def back_after_one_refusal(msg: Message, reply: Message) -> None:
        if reply.error_name and not away:
            away.append(reply.error_name)
            await bus.request_name("org.freedesktop.systemd1")

    systemd_client._bus = Watched(systemd_client._bus, back_after_one_refusal)  # type: ignore[assignment]
    await systemd_client.reload()
    assert away == ["org.freedesktop.DBus.Error.ServiceUnknown"]
    assert fake_systemd.members().count("Reload") == 1


async def test_a_restart_of_dbus_is_survived(bus_daemon: PrivateBus,
                                             fake_systemd: FakeSystemd) -> None:
    """The bus daemon restarted on the same socket (systemctl restart dbus): the client
    connects again and sends its call there."""
    async with await Systemd.connect(bus_daemon.address) as client:
        await client.version()
        await fake_systemd.stop()
        bus_daemon.stop()
        bus_daemon.start()
        await fake_systemd.start(bus_daemon.address)
        await client.reload()
    assert fake_systemd.members().count("Reload") == 1


async def test_systemd_never_seen_on_the_bus_is_reported_at_once(dbus_daemon: str) -> None:
    """No systemd on the bus from the start is an error at the first refusal, not a wait."""
    async with await Systemd.connect(dbus_daemon, timeout=60) as client:
        sent: list[str] = []

        async def note(msg: Message, reply: Message) -> None:
            sent.append(str(msg.member))

        client._bus = Watched(client._bus, note)  # type: ignore[assignment]
        with pytest.raises(SystemdError, match="systemd is not on the bus"):
            await client.version()
    assert sent == ["Get"]


SCALED = [p for p in PROPERTIES if getattr(p.kind, "scale_since", 0) and p.dbus != "TasksMax"]


@pytest.mark.parametrize("prop", SCALED, ids=lambda p: p.dbus)
async def test_a_share_of_ram_travels_as_the_scale_twin(systemd_client: Systemd,
                                                        fake_systemd: Any, prop: Any) -> None:
    """Every memory property of the table takes "50%" as its *Scale twin (`u`); systemd
    reports the bytes of its RAM (the fake: 4G) under the property itself."""
    from slicectl.core.config.values import RamShare
    from slicectl.core.properties.kinds import RamShareLive

    want = RamShareLive(RamShare(5000, "50%"), fake_systemd.memory)
    await systemd_client.set_unit_properties(UNIT, {prop.dbus: want}, runtime=True)
    assert fake_systemd.properties_set(UNIT)[-1] == {f"{prop.dbus}Scale": 2**31}
    state = await systemd_client.get_unit_properties(UNIT)
    assert state.props[prop.dbus] == fake_systemd.memory // 2
    assert prop.kind.same(state.props[prop.dbus], want)


async def test_a_share_of_the_task_limit_travels_as_tasks_max_scale(
        systemd_client: Systemd, fake_systemd: Any) -> None:
    """TasksMax=50% is sent as TasksMaxScale (`u`); systemd reports the count it made of its
    task limit (the fake: 32767) under TasksMax."""
    from slicectl.core.config.values import TaskShare
    from slicectl.core.properties.kinds import TaskShareLive
    from slicectl.core.properties.properties import PROP_BY_DBUS

    want = TaskShareLive(TaskShare(5000, "50%"), fake_systemd.tasks)
    await systemd_client.set_unit_properties(UNIT, {"TasksMax": want}, runtime=True)
    assert fake_systemd.properties_set(UNIT)[-1] == {"TasksMaxScale": 2**31}
    state = await systemd_client.get_unit_properties(UNIT)
    assert state.props["TasksMax"] == 16383
    assert PROP_BY_DBUS["TasksMax"].kind.same(state.props["TasksMax"], want)


async def test_zero_percent_is_sent_as_zero_bytes(systemd_client: Systemd,
                                                  fake_systemd: Any) -> None:
    """systemd refuses a *Scale that comes to no memory ("out of range"): 0% goes as 0."""
    from slicectl.core.config.values import RamShare
    from slicectl.core.properties.kinds import RamShareLive

    zero = RamShareLive(RamShare(0, "0%"), fake_systemd.memory)
    await systemd_client.set_unit_properties(UNIT, {"MemoryLow": zero}, runtime=True)
    assert fake_systemd.properties_set(UNIT)[-1] == {"MemoryLow": 0}
