"""Live properties: plan values as systemd's D-Bus values, and what the cgroup files must say.

Pure functions shared by `plan` (live diff) and `apply` (set, then verify). D-Bus types follow
slicectl.systemd's property table: CPU/node masks as frozensets, `t` limits as int or None
(None = UINT64_MAX = unset), MemoryLow/MemoryMin as int (0 = unset).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from slicectl.cpulist import format_cpulist, parse_cpulist
from slicectl.plan import PropValue, UnitPlan
from slicectl.values import INFINITY, UINT64_MAX

# unit-file key → D-Bus property
DBUS_NAME = {
    "AllowedCPUs": "AllowedCPUs", "AllowedMemoryNodes": "AllowedMemoryNodes",
    "CPUWeight": "CPUWeight", "CPUQuota": "CPUQuotaPerSecUSec",
    "CPUQuotaPeriodSec": "CPUQuotaPeriodUSec", "MemoryMin": "MemoryMin",
    "MemoryLow": "MemoryLow", "MemoryHigh": "MemoryHigh", "MemoryMax": "MemoryMax",
    "MemorySwapMax": "MemorySwapMax",
}
FILE_KEY = {v: k for k, v in DBUS_NAME.items()}
MASKS = ("AllowedCPUs", "AllowedMemoryNodes")
PROTECTIONS = ("MemoryLow", "MemoryMin")  # 0 = unset
PAGE = 4096
DEFAULT_PERIOD_US = 100_000

LiveValue = frozenset[int] | int | None


def unset(prop: str) -> LiveValue:
    """The D-Bus value meaning "not set" for a property."""
    if prop in MASKS:
        return frozenset()
    if prop in PROTECTIONS:
        return 0
    return None


def to_dbus(key: str, value: PropValue) -> tuple[str, LiveValue]:
    """A plan property (unit-file key, typed value) as (D-Bus name, D-Bus value)."""
    prop = DBUS_NAME[key]
    if isinstance(value, frozenset):
        return prop, value
    if key == "CPUQuota":
        return prop, value * 10_000  # percent of one CPU → µs of CPU time per second
    if value == INFINITY:
        return prop, UINT64_MAX if prop in PROTECTIONS else None
    return prop, value


def desired(u: UnitPlan, owned: bool) -> dict[str, LiveValue]:
    """The live properties `u` must have. For units slicectl owns (its slices) every settable
    property is managed: one not in the plan must be unset. For units slicectl only drops into
    (system.slice, cron.service) only the properties it sets are managed."""
    want: dict[str, LiveValue] = {}
    if owned:
        want = {prop: unset(prop) for prop in DBUS_NAME.values()}
    for key, value in u.properties.items():
        prop, live = to_dbus(key, value)
        want[prop] = live
    return want


def format_live(prop: str, value: object) -> str:
    """A live value for humans, in unit-file spelling."""
    if prop in MASKS:
        assert isinstance(value, frozenset)
        return format_cpulist(value) or "(unset)"
    if value is None:
        return "(unset)" if prop != "MemoryMax" else "infinity"
    if prop == "CPUQuotaPerSecUSec":
        assert isinstance(value, int)
        return f"{value / 10_000:g}%"
    if prop in PROTECTIONS and value == 0:
        return "(unset)"
    return str(value)


@dataclass(frozen=True)
class CgroupExpectation:
    """One cgroup file and what it must contain."""

    file: str
    expected: str

    def matches(self, content: str | None) -> bool:
        if content is None:
            # Controller not enabled for this cgroup: fine only if we expect the default.
            return self.expected in ("", "max", "0", "100", f"max {DEFAULT_PERIOD_US}")
        content = content.strip()
        if self.file in ("cpuset.cpus", "cpuset.mems"):
            return parse_cpulist(content) == parse_cpulist(self.expected)
        if self.file == "cpu.max":
            return _cpu_max_equal(content, self.expected)
        return content == self.expected


def _cpu_max_equal(a: str, b: str) -> bool:
    qa, _, pa = a.partition(" ")
    qb, _, pb = b.partition(" ")
    if "max" in (qa, qb):
        return qa == qb
    # systemd may stretch the period for tiny quotas; compare the ratio (cores) instead.
    return abs(int(qa) / int(pa) - int(qb) / int(pb)) < 0.001


def _bytes(value: LiveValue, zero_means_unset: bool = False) -> str:
    if value is None:
        return "max"
    assert isinstance(value, int)
    if value >= UINT64_MAX:
        return "max"
    return str(value // PAGE * PAGE)  # the kernel rounds memory limits down to pages


def cgroup_expectations(want: Mapping[str, LiveValue]) -> list[CgroupExpectation]:
    """What the unit's cgroup files must say once `want` is in force (cgroup-v2.rst)."""
    out: list[CgroupExpectation] = []
    if "AllowedCPUs" in want:
        cpus = want["AllowedCPUs"]
        assert isinstance(cpus, frozenset)
        # unset: the kernel shows "" (or no file without the cpuset controller) and uses the
        # parent's (effective) CPUs
        out.append(CgroupExpectation("cpuset.cpus", format_cpulist(cpus)))
    if "AllowedMemoryNodes" in want:
        mems = want["AllowedMemoryNodes"]
        assert isinstance(mems, frozenset)
        out.append(CgroupExpectation("cpuset.mems", format_cpulist(mems)))
    if "CPUWeight" in want:
        out.append(CgroupExpectation("cpu.weight", str(want["CPUWeight"] or 100)))
    if "CPUQuotaPerSecUSec" in want:
        quota = want["CPUQuotaPerSecUSec"]
        period = want.get("CPUQuotaPeriodUSec") or DEFAULT_PERIOD_US
        assert isinstance(period, int)
        if quota is None:
            out.append(CgroupExpectation("cpu.max", f"max {period}"))
        else:
            assert isinstance(quota, int)
            out.append(CgroupExpectation("cpu.max",
                                         f"{max(quota * period // 1_000_000, 1000)} {period}"))
    for prop, file in (("MemoryMax", "memory.max"), ("MemoryHigh", "memory.high"),
                       ("MemorySwapMax", "memory.swap.max")):
        if prop in want:
            out.append(CgroupExpectation(file, _bytes(want[prop])))
    for prop, file in (("MemoryLow", "memory.low"), ("MemoryMin", "memory.min")):
        if prop in want:
            out.append(CgroupExpectation(file, _bytes(want[prop])))
    return out


def settings_in(text: str, key: str) -> str | None:
    """The last value a unit file or drop-in assigns to `key` (None: not set there)."""
    value = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(f"{key}="):
            value = line.partition("=")[2].strip()
    return value


def is_control_file(path: str) -> bool:
    """Written by `systemctl set-property` (or SetUnitProperties)."""
    return "/systemd/system.control/" in path


def override_source(prop: str, ours: str, paths: list[tuple[str, str]]) -> str:
    """Name the file responsible for a live value differing from slicectl's.

    `paths` are (path, text) of the unit's fragment and drop-ins (DropInPaths). Measured on
    systemd 252: `systemctl set-property` changes the live value at once and *appends* its
    /etc|/run/systemd/system.control/UNIT.d/50-<Property>.conf to DropInPaths; at the next
    daemon-reload drop-ins are re-sorted by file name across all directories, so
    50-<Property>.conf (upper case) comes before 50-slicectl.conf and slicectl's value wins,
    while a drop-in whose name sorts after 50-slicectl.conf (60-local.conf) wins over ours.
    """
    key = FILE_KEY[prop]
    setters = [p for p, text in paths if p != ours and settings_in(text, key) is not None]
    control = [p for p in setters if is_control_file(p)]
    if control:
        return f"systemctl set-property ({control[-1]})"
    ours_name = ours.rsplit("/", 1)[-1]
    later = [p for p in setters if p.endswith(".conf") and p.rsplit("/", 1)[-1] > ours_name]
    if later:
        return f"drop-in {later[-1]} sorts after slicectl's and sets {key}"
    if ours not in [p for p, _ in paths]:
        return "slicectl's file is not loaded yet (daemon-reload pending)"
    return "changed at runtime (no file sets it)"


def later_dropins(ours: str, paths: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(path, key) of other drop-ins that sort after slicectl's and set a managed key: their
    values win at every daemon-reload, so slicectl cannot make its own stick."""
    ours_name = ours.rsplit("/", 1)[-1]
    found = []
    for p, text in paths:
        name = p.rsplit("/", 1)[-1]
        if p == ours or is_control_file(p) or not name.endswith(".conf") or name <= ours_name:
            continue
        found += [(p, k) for k in DBUS_NAME if settings_in(text, k) is not None]
    return found
