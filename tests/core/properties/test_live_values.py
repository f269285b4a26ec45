"""Live values (slicectl.core.properties.live_values): what systemd must report and what cgroup
files must say."""

from __future__ import annotations

import pytest

from slicectl.core.config.values import INFINITY, UINT64_MAX
from slicectl.core.plan import FileKind, Section, UnitPlan
from slicectl.core.properties.kinds import LiveValue
from slicectl.core.properties.live_values import (
    cgroup_expectations,
    desired,
    file_key,
    format_live,
    human_live,
    later_dropins,
    override_source,
    unset,
)
from slicectl.core.properties.properties import PROPERTIES

G = 1024**3


def slice_plan(**props: object) -> UnitPlan:
    return UnitPlan(unit="tenants-a.slice", path="tenants-a.slice", kind=FileKind.UNIT,
                    section=Section.SLICE, properties=props)  # type: ignore[arg-type]


def test_owned_units_manage_every_property_unset_ones_included() -> None:
    want = desired(slice_plan(AllowedCPUs=frozenset({1, 5}), CPUQuota=150,
                              MemoryMax=INFINITY, MemoryLow=INFINITY))
    assert set(want) == {p.dbus for p in PROPERTIES}
    assert want["AllowedCPUs"] == frozenset({1, 5})
    assert want["CPUQuotaPerSecUSec"] == 1_500_000  # µs per second
    assert want["MemoryMax"] is None  # a limit at infinity reads as unset
    assert want["MemoryLow"] == UINT64_MAX  # a protection at infinity is UINT64_MAX
    assert want["MemoryMin"] == 0 and want["CPUWeight"] is None  # unset
    assert want["AllowedMemoryNodes"] == frozenset()


def test_dropins_manage_only_what_they_set() -> None:
    u = UnitPlan(unit="system.slice", path="system.slice.d/50-slicectl.conf",
                 kind=FileKind.DROPIN, section=Section.SLICE,
                 properties={"MemoryMax": 3 * G, "CPUWeight": 50})
    assert desired(u) == {"MemoryMax": 3 * G, "CPUWeight": 50}


@pytest.mark.parametrize(("prop", "value", "shown"), [
    ("AllowedCPUs", frozenset({0, 1, 2, 8}), "0-2,8"),
    ("AllowedCPUs", frozenset(), "(unset)"),
    ("CPUQuotaPerSecUSec", 1_500_000, "150%"),
    ("CPUQuotaPerSecUSec", None, "(unset)"),
    ("MemoryMax", None, "infinity"),
    ("MemoryHigh", None, "(unset)"),
    ("MemoryLow", 0, "(unset)"),
    ("MemoryLow", G, str(G)),
    ("CPUWeight", 200, "200"),
])
def test_format_live(prop: str, value: LiveValue, shown: str) -> None:
    assert format_live(prop, value) == shown


def test_every_property_has_an_unset_value_and_a_file_key() -> None:
    for p in PROPERTIES:
        assert file_key(p.dbus) == p.name
        assert format_live(p.dbus, unset(p.dbus))  # every unset value can be shown


def test_cgroup_expectations_of_a_full_slice() -> None:
    want = desired(slice_plan(AllowedCPUs=frozenset({1, 5}), AllowedMemoryNodes=frozenset({1}),
                              CPUWeight=300, CPUQuota=50, CPUQuotaPeriodSec=50_000,
                              MemoryMax=256 * 1024**2 + 100, MemoryLow=G, MemorySwapMax=0))
    got = {e.file: e for e in cgroup_expectations(want)}
    assert {f: e.expected for f, e in got.items()} == {
        "cpuset.cpus": "1,5", "cpuset.mems": "1", "cpu.weight": "300",
        "cpu.max": "25000 50000", "memory.max": str(256 * 1024**2),  # whole pages
        "memory.high": "max", "memory.low": str(G), "memory.min": "0",
        "memory.swap.max": "0", "memory.zswap.max": "max", "memory.zswap.writeback": "1",
        "pids.max": "max", "io.weight": "default 100", "cpuset.cpus.partition": "member"}
    assert got["cpuset.cpus"].matches("1,5\n") and got["cpuset.cpus"].matches("5,1")
    assert not got["cpuset.cpus"].matches("1-5")
    assert got["cpu.max"].matches("25000 50000\n")
    # systemd may stretch the period of a tiny quota: the ratio is what counts.
    assert got["cpu.max"].matches("50000 100000") and not got["cpu.max"].matches("max 50000")
    # No file (controller not enabled) is fine only where the kernel default is expected.
    assert got["memory.high"].matches(None) and not got["cpu.weight"].matches(None)


def test_unset_cpu_weight_expects_the_kernel_default() -> None:
    (weight,) = [e for e in cgroup_expectations(desired(slice_plan())) if e.file == "cpu.weight"]
    assert weight.expected == "100" and weight.matches(None)


def test_override_source_names_the_file() -> None:
    ours = "/etc/systemd/system/tenants-a.slice.d/50-slicectl.conf"
    control = "/etc/systemd/system.control/tenants-a.slice.d/50-CPUWeight.conf"
    later = "/etc/systemd/system/tenants-a.slice.d/60-local.conf"
    texts = [(ours, "[Slice]\nCPUWeight=100\n"), (control, "[Slice]\nCPUWeight=5\n")]
    assert override_source("CPUWeight", ours, texts) == f"systemctl set-property ({control})"
    texts = [(ours, "[Slice]\nCPUQuota=10%\n"), (later, "[Slice]\nCPUQuota=90%\n")]
    assert override_source("CPUQuotaPerSecUSec", ours, texts) == (
        f"drop-in {later} sorts after slicectl's and sets CPUQuota")
    assert later_dropins(ours, texts) == [(later, "CPUQuota")]
    assert override_source("MemoryMax", ours, []) == (
        "slicectl's file is not loaded yet (daemon-reload pending)")


def test_new_controls_and_their_files() -> None:
    want = desired(slice_plan(CPUWeight=0, TasksMax=512, IOWeight=50,
                              IODeviceWeight=(("/dev/vda", 300),),
                              IOReadBandwidthMax=(("/dev/vda", 5_000_000), ("/dev/vdb",
                                                                           INFINITY)),
                              ManagedOOMMemoryPressure="kill",
                              ManagedOOMMemoryPressureLimit=6000))
    assert want["CPUWeight"] == 0  # idle
    assert want["IOReadBandwidthMax"] == (("/dev/vda", 5_000_000), ("/dev/vdb", UINT64_MAX))
    assert want["ManagedOOMMemoryPressureLimit"] == 2576980377  # 60 % of UINT32_MAX
    disks = {"/dev/vda": "254:0", "/dev/vdb": "254:16"}.get
    got = {(e.file, e.expected): e for e in cgroup_expectations(want, disks)}
    assert set(got) >= {("cpu.idle", "1"), ("pids.max", "512"), ("io.weight", "default 50"),
                        ("io.weight", "254:0 300"), ("io.max", "254:0 rbps=5000000")}
    assert not any(e.file == "cpu.weight" for e in got.values())  # idle: weight untouched
    # infinity on a device: io.max shows no line for it, so nothing to check
    assert not any("254:16" in e.expected for e in got.values())
    io_max = got["io.max", "254:0 rbps=5000000"]
    assert io_max.matches("254:0 rbps=5000000 wbps=max riops=max wiops=max\n")
    assert not io_max.matches("254:0 rbps=max wbps=5000000 riops=max wiops=max")
    assert not io_max.matches("")
    assert got["io.weight", "default 50"].matches("default 50\n254:0 300")
    assert got["io.weight", "254:0 300"].matches("default 50\n254:0 300")
    # Without device numbers (plan for another host) the per-device checks are skipped.
    assert not any(e.file == "io.max" for e in cgroup_expectations(want))
    assert format_live("IOReadBandwidthMax", want["IOReadBandwidthMax"]) == (
        "/dev/vda 5000000 B/s, /dev/vdb infinity B/s")
    assert format_live("CPUWeight", 0) == "idle"
    assert format_live("ManagedOOMMemoryPressureLimit", 2576980377) == "60%"


@pytest.mark.parametrize(("prop", "value", "shown"), [
    ("MemoryMax", 25088 << 20, "24.5G"),  # not 26306674688, nor 25088M
    ("MemoryMax", (1 << 30) + 1, "1073741825"),  # exact when one decimal would round
    ("MemoryMax", None, "infinity"),
    ("MemoryLow", 0, "(unset)"),
    ("CPUWeight", 200, "200"),
])
def test_human_live(prop: str, value: LiveValue, shown: str) -> None:
    """plan's change lines show sizes as people read them; --json keeps format_live's."""
    assert human_live(prop, value) == shown
