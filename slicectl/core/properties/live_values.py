"""Live properties: plan values as systemd's D-Bus values, and what the cgroup files must say.

Pure functions shared by `plan` (live diff) and `apply` (set, then verify). Live values are
keyed by D-Bus name (`CPUQuotaPerSecUSec`); the settings table says how each property's
plan value becomes a live value (slicectl.core.properties.kinds) and which cgroup file shows it.
"""

from __future__ import annotations

from collections.abc import Mapping

from slicectl.core.plan import FileKind, UnitPlan
from slicectl.core.properties.kinds import CgroupExpectation, HostLimits, LiveValue
from slicectl.core.properties.properties import (
    PROP_BY_DBUS,
    PROP_BY_NAME,
    PROPERTIES,
    DeviceNumber,
    no_devices,
)

__all__ = ["CgroupExpectation", "LiveValue", "cgroup_expectations", "desired", "file_key",
           "format_live", "human_live", "is_control_file", "later_dropins", "matches",
           "override_source", "settings_in", "unset"]


def unset(prop: str) -> LiveValue:
    """The D-Bus value meaning "not set" for a property (by D-Bus name)."""
    return PROP_BY_DBUS[prop].kind.unset


def file_key(prop: str) -> str:
    """The unit-file key of a property (by D-Bus name): CPUQuotaPerSecUSec -> CPUQuota."""
    return PROP_BY_DBUS[prop].name


UNKNOWN_HOST = HostLimits()  # neither RAM nor task limit known: a share matches nothing


def desired(u: UnitPlan, owned: bool | None = None,
            host: HostLimits = UNKNOWN_HOST) -> dict[str, LiveValue]:
    """The live properties `u` must have, by D-Bus name. For units slicectl owns (its slices)
    every settable property is managed: one not in the plan must be unset. For units slicectl
    only drops into (system.slice, cron.service) only the properties it sets are managed.
    `host`: the host's RAM and task limit (Plan.limits), which a share is resolved
    against."""
    if owned is None:
        owned = u.kind is FileKind.UNIT
    want: dict[str, LiveValue] = {}
    if owned:
        want = {p.dbus: p.kind.unset for p in PROPERTIES}
    for key, value in u.properties.items():
        prop = PROP_BY_NAME[key]
        want[prop.dbus] = prop.kind.live_on(value, host)
    return want


def matches(prop: str, live: LiveValue, want: LiveValue) -> bool:
    """Whether the value systemd reports for a property (by D-Bus name) means the wanted one
    is in force (a share: systemd reports the bytes or tasks it made of it)."""
    return PROP_BY_DBUS[prop].kind.same(live, want)


def format_live(prop: str, value: LiveValue) -> str:
    """A live value (by D-Bus name) in unit-file spelling (plan --json)."""
    return PROP_BY_DBUS[prop].kind.show(value)


def human_live(prop: str, value: LiveValue) -> str:
    """A live value (by D-Bus name) for people: sizes as 24.5G (exact when that rounds)."""
    return PROP_BY_DBUS[prop].kind.human(value)


def cgroup_expectations(want: Mapping[str, LiveValue],
                        devices: DeviceNumber = no_devices) -> list[CgroupExpectation]:
    """What the unit's cgroup files must say once `want` is in force (cgroup-v2.rst);
    `devices` names the disks of device paths (per-device settings are checked only then)."""
    out = []
    for prop in PROPERTIES:
        if prop.dbus in want:
            out += prop.expectations(want[prop.dbus], want, devices)
    return out


def expectations_by_property(want: Mapping[str, LiveValue],
                             devices: DeviceNumber = no_devices
                             ) -> dict[str, list[CgroupExpectation]]:
    """cgroup_expectations, by the D-Bus property each comes from."""
    return {prop.dbus: prop.expectations(want[prop.dbus], want, devices)
            for prop in PROPERTIES if prop.dbus in want}


def settings_in(text: str, key: str) -> str | None:
    """The last value a unit file or drop-in assigns to `key` in a resource-control section,
    read as systemd reads it (slicectl.core.properties.unitfile; "" for a reset, None: not set
    there)."""
    from slicectl.core.properties.unitfile import assigned

    return assigned(text, key)


def keys_set(text: str) -> frozenset[str]:
    """The keys a unit file or drop-in assigns in a resource-control section."""
    from slicectl.core.properties.unitfile import RESOURCE_SECTIONS, assignments

    return frozenset(a.key for a in assignments(text) if a.section in RESOURCE_SECTIONS)


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
    key = file_key(prop)
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
        keys = keys_set(text)
        found += [(p, prop.name) for prop in PROPERTIES if prop.name in keys]
    return found
