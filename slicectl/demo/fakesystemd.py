"""A fake org.freedesktop.systemd1 on a private bus: keeps unit state, records calls, fails on cue.

It mimics what slicectl relies on (org.freedesktop.systemd1(5)): the Manager calls, the
JobRemoved signal, unit objects with the Unit interface and the unit type's cgroup interface,
systemd's own validation of a few values, 8-byte padded masks and UINT64_MAX for "unset".
Its property table is written out here on purpose, apart from slicectl's, so a wrong
signature in slicectl.host.systemd.systemd fails the tests instead of agreeing with itself.

Why this module runs past 400 lines: it is a second, independent property table and Manager,
kept apart from slicectl's on purpose (above), and systemd's own checks of the values it mimics.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Annotated, Any

from dbus_fast import DBusError, Variant
from dbus_fast.aio import MessageBus
from dbus_fast.annotations import DBusBool, DBusObjectPath, DBusSignature, DBusStr
from dbus_fast.constants import PropertyAccess
from dbus_fast.service import ServiceInterface, dbus_method, dbus_property, dbus_signal

from slicectl.core.cpulist import parse_cpulist
from slicectl.core.properties.properties import PROPERTIES

UINT64_MAX = 2**64 - 1
MANAGER_PATH = "/org/freedesktop/systemd1"
# Settable cgroup properties: name -> (signature, value systemd reports when unset), as
# org.freedesktop.systemd1(5) documents them (tests/host/systemd/test_systemd.py checks that
# slicectl's property table names the same ones with the same signatures).
SETTABLE: dict[str, tuple[str, Any]] = {
    "AllowedCPUs": ("ay", b""),
    "AllowedMemoryNodes": ("ay", b""),
    "StartupAllowedCPUs": ("ay", b""),
    "CPUWeight": ("t", UINT64_MAX),
    "StartupCPUWeight": ("t", UINT64_MAX),
    "CPUQuotaPerSecUSec": ("t", UINT64_MAX),
    "CPUQuotaPeriodUSec": ("t", UINT64_MAX),
    "MemoryMax": ("t", UINT64_MAX),
    "MemoryHigh": ("t", UINT64_MAX),
    "MemorySwapMax": ("t", UINT64_MAX),
    "MemoryZSwapMax": ("t", UINT64_MAX),
    "MemoryZSwapWriteback": ("b", True),
    "MemoryLow": ("t", 0),
    "MemoryMin": ("t", 0),
    "TasksMax": ("t", UINT64_MAX),
    "IOWeight": ("t", UINT64_MAX),
    "IODeviceWeight": ("a(st)", []),
    "IOReadBandwidthMax": ("a(st)", []),
    "IOWriteBandwidthMax": ("a(st)", []),
    "IOReadIOPSMax": ("a(st)", []),
    "IOWriteIOPSMax": ("a(st)", []),
    "ManagedOOMMemoryPressure": ("s", "auto"),
    "ManagedOOMMemoryPressureLimit": ("u", 0),
    "CPUSetPartition": ("s", "member"),
}
# Write-only *Scale twins of the properties that take a share ("50%" of RAM in a memory
# property, of the task limit in TasksMax): a `u` where UINT32_MAX is 100 %, which systemd turns
# into bytes of its physical memory (bus_cgroup_set_memory_scale in dbus-cgroup.c) or into a
# count of tasks (bus_cgroup_set_tasks_max_scale) and reports under the property itself. Which
# properties have one is learnt from slicectl's table (a kind with `scale_since`); what systemd
# does with the value is written out below (FakeSystemd.scaled), apart from slicectl's.
SCALES: dict[str, str] = {f"{p.dbus}Scale": p.dbus for p in PROPERTIES
                          if getattr(p.kind, "scale_since", 0)}
PAGE = 4096
UINT32_MAX = 2**32 - 1
CGROUP_PROPS = {name: sig for name, (sig, _) in SETTABLE.items()} | {
    "EffectiveCPUs": "ay", "EffectiveMemoryNodes": "ay", "ControlGroup": "s", "Slice": "s",
}
UNIT_PROPS = {"Id": "s", "ActiveState": "s", "LoadState": "s", "SubState": "s",
              "FragmentPath": "s", "DropInPaths": "as", "UnitFileState": "s"}
SERVICE_PROPS = {"MainPID": "u"}
CGROUP_TYPES = ("slice", "service", "scope")
PropertyList = Annotated[list[list[Any]], DBusSignature("a(sv)")]
JobRemovedBody = Annotated[list[Any], DBusSignature("uoss")]
UnitRows = Annotated[list[list[Any]], DBusSignature("a(ssssssouso)")]
Void = Annotated[None, DBusSignature("")]  # dbus-fast cannot read a plain "-> None"


def unit_path(unit: str) -> str:
    """systemd's object path for a unit (bus_label_escape: "_" + hex for all but ASCII
    letters, and digits after the first character)."""
    return "/org/freedesktop/systemd1/unit/" + "".join(
        c if c.isascii() and (c.isalpha() or (i and c.isdigit())) else f"_{ord(c):02x}"
        for i, c in enumerate(unit))


# CPU and node masks, written here from systemd's documentation rather than taken from
# slicectl (org.freedesktop.systemd1(5): an `ay` where CPU c is bit c % 8 of byte c // 8, which
# is the set's bits as one little-endian integer), so that a mistake in slicectl's own encoding
# cannot cancel out between the client and this fake.


def to_bitmask(cpus: Iterable[int]) -> bytes:
    """The `ay` mask of a set of CPUs (empty: no bytes)."""
    bits = sum(1 << c for c in set(cpus))
    return bits.to_bytes((bits.bit_length() + 7) // 8, "little")


def from_bitmask(mask: bytes | Iterable[int]) -> frozenset[int]:
    """The CPUs of an `ay` mask, however long."""
    bits = int.from_bytes(bytes(mask), "little")
    return frozenset(c for c in range(bits.bit_length()) if bits >> c & 1)


def format_cpulist(cpus: Iterable[int]) -> str:
    """A cpuset file's text: runs of three or more as ranges, "0-2,4,5" (the kernel writes a
    pair as a range too, "4-5"; readers parse both alike, and tests that compare the text
    expect slicectl's spelling)."""
    runs: list[list[int]] = []
    for c in sorted(set(cpus)):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(str(a) if a == b else f"{a},{b}" if b == a + 1 else f"{a}-{b}"
                    for a, b in runs)


def padded(cpus: Iterable[int]) -> bytes:
    """A mask as systemd returns it: padded to a multiple of 8 bytes (empty stays empty)."""
    mask = to_bitmask(cpus)
    return mask + bytes(-len(mask) % 8)


@dataclass
class FakeUnit:
    """What the fake knows about one unit."""

    name: str
    load_state: str = "loaded"
    active_state: str = "inactive"
    sub_state: str = "dead"
    fragment_path: str = ""
    drop_in_paths: list[str] = field(default_factory=list)
    slice: str = ""
    settings: dict[str, Any] = field(default_factory=dict)  # raw D-Bus values set so far
    job_result: str = "done"  # the result the next StartUnit/StopUnit job reports
    unit_file_state: str = ""  # enabled, disabled, static, ... ("": no unit file)
    main_pid: int = 0  # a service's main process (0: none)

    @property
    def suffix(self) -> str:
        return self.name.rpartition(".")[2]

    def parent_slice(self) -> str:
        """The slice this unit sits in: from the name for slices, else Slice=."""
        if self.suffix != "slice":
            return self.slice or "system.slice"
        if self.name == "-.slice":
            return ""
        prefix = self.name.removesuffix(".slice")
        return prefix.rpartition("-")[0] + ".slice" if "-" in prefix else "-.slice"

    def raw(self, prop: str) -> Any:
        """A settable property's raw value, as set or systemd's default."""
        return self.settings.get(prop, SETTABLE[prop][1])


@dataclass
class Failure:
    """A rule: make calls of `member` (on `unit`, if given) fail with a D-Bus error."""

    member: str
    unit: str | None
    error: str
    message: str
    nth: int | None  # fail only the nth matching call (1-based); None: every one
    seen: int = 0


class _Manager(ServiceInterface):
    """org.freedesktop.systemd1.Manager, delegating to FakeSystemd."""

    def __init__(self, fake: FakeSystemd) -> None:
        super().__init__("org.freedesktop.systemd1.Manager")
        self.fake = fake

    @dbus_method()
    async def Reload(self) -> Void:  # noqa: N802 - D-Bus member names are CamelCase
        self.fake.enter("Reload", ())
        for hook in self.fake.on_reload:
            await asyncio.to_thread(hook)
        await asyncio.sleep(self.fake.reload_delay)  # systemd replies once reloaded

    @dbus_property(access=PropertyAccess.READ)
    def Version(self) -> DBusStr:  # noqa: N802
        return self.fake.version

    @dbus_method()
    def Subscribe(self) -> Void:  # noqa: N802
        self.fake.enter("Subscribe", ())

    @dbus_method()
    def GetUnit(self, name: DBusStr) -> DBusObjectPath:  # noqa: N802
        self.fake.enter("GetUnit", (name,), name)
        if name not in self.fake.units:
            raise DBusError("org.freedesktop.systemd1.NoSuchUnit", f"Unit {name} not loaded.")
        return unit_path(name)

    @dbus_method()
    def LoadUnit(self, name: DBusStr) -> DBusObjectPath:  # noqa: N802
        self.fake.enter("LoadUnit", (name,), name)
        self.fake.load(name)
        return unit_path(name)

    @dbus_method()
    def SetUnitProperties(  # noqa: N802
        self, name: DBusStr, runtime: DBusBool, properties: PropertyList
    ) -> Void:
        self.fake.enter("SetUnitProperties", (name, runtime, properties), name)
        self.fake.set_properties(self.fake.load(name), properties)
        if runtime and self.fake.control_dir is not None:
            self.fake.write_control(name, properties)

    @dbus_method()
    async def StartUnit(self, name: DBusStr, mode: DBusStr) -> DBusObjectPath:  # noqa: N802
        self.fake.enter("StartUnit", (name, mode), name)
        return await self.fake.run_job(self, name, start=True)

    @dbus_method()
    async def StopUnit(self, name: DBusStr, mode: DBusStr) -> DBusObjectPath:  # noqa: N802
        self.fake.enter("StopUnit", (name, mode), name)
        return await self.fake.run_job(self, name, start=False)

    @dbus_method()
    async def RestartUnit(self, name: DBusStr, mode: DBusStr) -> DBusObjectPath:  # noqa: N802
        self.fake.enter("RestartUnit", (name, mode), name)
        job = await self.fake.run_job(self, name, start=True)
        self.fake.restarted(name)
        return job

    @dbus_method()
    def ListUnitsByPatterns(  # noqa: N802
        self, states: Annotated[list[str], DBusSignature("as")],
        patterns: Annotated[list[str], DBusSignature("as")],
    ) -> UnitRows:
        self.fake.enter("ListUnitsByPatterns", (states, patterns))
        return [
            [u.name, "", u.load_state, u.active_state, u.sub_state, "", unit_path(u.name),
             0, "", "/"]
            for u in self.fake.units.values()
            if (not states or {u.load_state, u.active_state, u.sub_state} & set(states))
            and (not patterns or any(fnmatchcase(u.name, p) for p in patterns))
        ]

    @dbus_method()
    def ListUnitsByNames(  # noqa: N802
        self, names: Annotated[list[str], DBusSignature("as")],
    ) -> UnitRows:
        self.fake.enter("ListUnitsByNames", (names,))
        rows = []
        for name in names:
            u = self.fake.load(name)  # systemd loads each named unit
            rows.append([u.name, "", u.load_state, u.active_state, u.sub_state, "",
                         unit_path(u.name), 0, "", "/"])
        return rows

    @dbus_signal()
    def JobRemoved(  # noqa: N802
        self, job_id: int, job: str, unit: str, result: str
    ) -> JobRemovedBody:
        return [job_id, job, unit, result]


class _UnitObject(ServiceInterface):
    """One interface of one unit object; its properties are added below from the tables."""

    def __init__(self, interface: str, fake: FakeSystemd, unit: str) -> None:
        super().__init__(interface)
        self.fake = fake
        self.unit = unit


class _UnitIface(_UnitObject):
    pass


class _CgroupIface(_UnitObject):
    pass


class _ServiceIface(_CgroupIface):
    pass


def _property(name: str, signature: str) -> Any:
    def getter(self: _UnitObject) -> Any:
        return self.fake.value(self.fake.units[self.unit], name)

    getter.__name__ = name
    getter.__annotations__ = {"return": signature}  # dbus-fast reads the signature here
    return dbus_property(access=PropertyAccess.READ, name=name)(getter)


for _name, _sig in UNIT_PROPS.items():
    setattr(_UnitIface, _name, _property(_name, _sig))
for _name, _sig in CGROUP_PROPS.items():
    setattr(_CgroupIface, _name, _property(_name, _sig))
for _name, _sig in SERVICE_PROPS.items():
    setattr(_ServiceIface, _name, _property(_name, _sig))


class FakeSystemd:
    """The fake systemd; `start(address)` puts it on a bus as org.freedesktop.systemd1."""

    def __init__(self, cgroup_root: Path | None = None, *, cpus: Iterable[int] = range(8),
                 nodes: Iterable[int] = range(4), memory: int = 4 << 30,
                 tasks: int = 32767) -> None:
        self.cgroup_root = cgroup_root
        # Where runtime SetUnitProperties leaves UNIT.d/50-PROPERTY.conf, as systemd does in
        # /run/systemd/system.control (None: nowhere).
        self.control_dir: Path | None = None
        self.cpus = frozenset(cpus)
        self.nodes = frozenset(nodes)
        self.memory = memory  # physical memory in bytes (the testbed's guest: 4 x 1G)
        self.tasks = tasks  # the task limit (system_tasks_max: Linux's default pid_max - 1)
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.units: dict[str, FakeUnit] = {}
        self.failures: list[Failure] = []
        self.reload_delay = 0.0  # seconds Reload takes
        self.on_reload: list[Callable[[], None]] = []  # what Reload runs (e.g. generators)
        self.version = "252.38-1~deb12u1"  # Manager.Version, as Debian 12's systemd says
        # unit -> the reason the kernel gives for refusing its partition (partition_text)
        self.refuse_partition: dict[str, str] = {}
        self.job_delay = 0.0  # seconds between a job's reply and its JobRemoved
        # What a restart runs, given the unit's name (e.g. a test writing the new main
        # process's environment under a fixture /proc).
        self.on_restart: list[Callable[[str], None]] = []
        self._pids = 1000
        self.signal_before_reply = False  # systemd may send JobRemoved before the reply
        self._jobs = 0
        self._bus: MessageBus | None = None
        self._manager = _Manager(self)
        for name in ("-.slice", "system.slice", "user.slice"):
            self.add_unit(name, active_state="active", sub_state="active")
        # PID 1's own scope: always running, in the root slice (its cgroup is /init.scope),
        # so a plan's init.scope drop-in reaches a cgroup and is verified like the others.
        self.add_unit("init.scope", active_state="active", sub_state="running", slice="-.slice")

    async def start(self, address: str) -> None:
        """Connect to the bus at `address` and own org.freedesktop.systemd1."""
        self._bus = await MessageBus(bus_address=address).connect()
        self._bus.export(MANAGER_PATH, self._manager)
        for unit in self.units.values():
            self._export(unit)
        await self._bus.request_name("org.freedesktop.systemd1")

    async def stop(self) -> None:
        """Leave the bus."""
        if self._bus is not None:
            self._bus.disconnect()
            await self._bus.wait_for_disconnect()  # type: ignore[no-untyped-call]
            self._bus = None

    def add_unit(self, name: str, **state: Any) -> FakeUnit:
        """Create (or update) a unit, e.g. add_unit("cron.service", load_state="masked")."""
        unit = self.units.get(name) or FakeUnit(name)
        for key, value in state.items():
            setattr(unit, key, value)
        if name not in self.units:
            self.units[name] = unit
            self._export(unit)
        self._mirror(unit)
        return unit

    def fail_on(self, member: str, unit: str | None = None, *,
                error: str = "org.freedesktop.DBus.Error.Failed", message: str = "",
                nth: int | None = None) -> None:
        """Make calls of `member` (for `unit`, or any) fail; only the nth one if given."""
        self.failures.append(Failure(member, unit, error, message or f"fake {error}", nth))

    def fail_job(self, unit: str, result: str = "failed") -> None:
        """Make the next jobs of `unit` finish with `result` instead of "done"."""
        self.load(unit).job_result = result

    def properties_set(self, unit: str) -> list[dict[str, Any]]:
        """The raw values of each SetUnitProperties call for `unit`, in order."""
        return [{name: variant.value for name, variant in args[2]}
                for member, args in self.calls
                if member == "SetUnitProperties" and args[0] == unit]

    def members(self) -> list[str]:
        """The members called so far, in order."""
        return [member for member, _ in self.calls]

    def enter(self, member: str, args: tuple[Any, ...], unit: str | None = None) -> None:
        """Record a call, then raise the D-Bus error a matching failure rule asks for."""
        self.calls.append((member, args))
        for rule in self.failures:
            if rule.member == member and rule.unit in (None, unit):
                rule.seen += 1
                if rule.nth is None or rule.nth == rule.seen:
                    raise DBusError(rule.error, rule.message)

    def load(self, name: str) -> FakeUnit:
        """The unit, loaded on demand like systemd: slices need no file, others do."""
        if name not in self.units:
            loaded = name.endswith(".slice")
            self.add_unit(name, load_state="loaded" if loaded else "not-found")
        return self.units[name]

    def set_properties(self, unit: FakeUnit, properties: list[list[Any]]) -> None:
        """Validate like systemd (all or nothing), then store and mirror the values."""
        if unit.load_state == "masked":
            raise DBusError("org.freedesktop.systemd1.UnitMasked", f"Unit {unit.name} is masked.")
        new: dict[str, Any] = {}
        for name, variant in properties:
            assert isinstance(variant, Variant)
            if name in SCALES and variant.signature == "u":
                new[SCALES[name]] = self.scaled(name, variant.value)
                continue
            if name not in SETTABLE:
                raise DBusError("org.freedesktop.DBus.Error.PropertyReadOnly",
                                f"Cannot set property {name}, or unknown property.")
            if variant.signature != SETTABLE[name][0]:
                raise DBusError("org.freedesktop.DBus.Error.InvalidArgs",
                                f"Invalid type {variant.signature} for {name}.")
            value = variant.value
            if name == "CPUWeight" and value != UINT64_MAX and not 1 <= value <= 10000:
                raise DBusError("org.freedesktop.DBus.Error.InvalidArgs",
                                "Value specified in CPUWeight is out of range")
            if name == "CPUQuotaPerSecUSec" and value == 0:
                raise DBusError("org.freedesktop.DBus.Error.InvalidArgs",
                                "CPUQuotaPerSecUSec= value out of range")
            if variant.signature == "a(st)":
                # systemd adds the devices to the list (replacing a device's entry); an empty
                # list empties it.
                old = dict(unit.raw(name)) if value else {}
                value = [[path, v] for path, v in (old | dict(value)).items()]
            new[name] = bytes(value) if variant.signature == "ay" else value
        unit.settings.update(new)
        self._mirror(unit)

    def write_control(self, unit: str, properties: list[list[Any]]) -> None:
        """The drop-ins systemd writes for runtime properties: one per property."""
        assert self.control_dir is not None
        folder = self.control_dir / f"{unit}.d"
        folder.mkdir(parents=True, exist_ok=True)
        for name, variant in properties:
            value = variant.value
            shown = format_cpulist(from_bitmask(bytes(value))) if variant.signature == "ay" \
                else value
            (folder / f"50-{name}.conf").write_text(f"# runtime\n[Slice]\n{name}={shown}\n")

    def scaled(self, name: str, raw: int) -> int:
        """Bytes of physical memory for a *Scale value, as systemd computes them
        (physical_memory_scale: whole pages, rounded down; all of it at UINT32_MAX); systemd
        refuses a value that comes to no memory at all. TasksMaxScale: a count of tasks
        (system_tasks_max_scale: rounded down), from 1 to UINT32_MAX - 1 only."""
        if name == "TasksMaxScale":
            if not 1 <= raw < UINT32_MAX:
                raise DBusError("org.freedesktop.DBus.Error.InvalidArgs",
                                f"Value specified in {name} is out of range")
            return self.tasks * raw // UINT32_MAX
        pages = self.memory // PAGE
        value = pages * PAGE if raw == UINT32_MAX else pages * raw // UINT32_MAX * PAGE
        if value <= 0:
            raise DBusError("org.freedesktop.DBus.Error.InvalidArgs",
                            f"Value specified in {name} is out of range")
        return value

    async def run_job(self, manager: _Manager, name: str, *, start: bool) -> str:
        """Run a start/stop job: reply with its path, then announce it with JobRemoved."""
        unit = self.load(name)
        if unit.load_state == "masked":
            raise DBusError("org.freedesktop.systemd1.UnitMasked", f"Unit {name} is masked.")
        if unit.load_state != "loaded":
            raise DBusError("org.freedesktop.systemd1.NoSuchUnit", f"Unit {name} not found.")
        self._jobs += 1
        job_id, job, result = self._jobs, f"{MANAGER_PATH}/job/{self._jobs}", unit.job_result
        if result == "done" and start:
            # Starting a unit starts the slices it sits in (Requires= on its slice).
            self._activate_parents(unit)
            unit.active_state = "active"
            unit.sub_state = "running" if unit.suffix == "service" else "active"
        elif result == "done":
            unit.active_state, unit.sub_state = "inactive", "dead"
        elif start:
            unit.active_state, unit.sub_state = "failed", "failed"
        self._mirror(unit)

        def removed() -> None:
            manager.JobRemoved(job_id, job, name, result)

        if self.signal_before_reply:
            removed()
        else:
            asyncio.get_running_loop().call_later(self.job_delay, removed)
        return job

    def restarted(self, name: str) -> None:
        """A service restarted: a new main process, then the `on_restart` hooks."""
        unit = self.units[name]
        if unit.suffix == "service" and unit.active_state == "active":
            self._pids += 1
            unit.main_pid = self._pids
        for hook in self.on_restart:
            hook(name)

    def _activate_parents(self, unit: FakeUnit) -> None:
        parent = unit.parent_slice()
        while parent:
            slice_unit = self.load(parent)
            if slice_unit.active_state != "active":
                slice_unit.active_state = slice_unit.sub_state = "active"
                self._mirror(slice_unit)
            parent = slice_unit.parent_slice()

    def cgroup_path(self, unit: FakeUnit) -> str:
        """Where systemd puts the unit's cgroup: under its parent slices, by name."""
        parent = unit.parent_slice()
        if not parent:
            return "/"
        return self.cgroup_path(self.load(parent)).rstrip("/") + "/" + unit.name

    def control_group(self, unit: FakeUnit) -> str:
        """ControlGroup as systemd reports it: "" while the unit has no cgroup."""
        if unit.name != "-.slice" and unit.active_state not in ("active", "reloading"):
            return ""
        return self.cgroup_path(unit)

    def effective(self, unit: FakeUnit, prop: str, online: frozenset[int]) -> frozenset[int]:
        """Like the kernel: the allowed set within what is online, or all when that is empty."""
        return from_bitmask(unit.raw(prop)) & online or online

    def value(self, unit: FakeUnit, prop: str) -> Any:
        """The D-Bus value of one property of `unit`."""
        simple: dict[str, Callable[[], Any]] = {
            "Id": lambda: unit.name, "ActiveState": lambda: unit.active_state,
            "LoadState": lambda: unit.load_state, "SubState": lambda: unit.sub_state,
            "FragmentPath": lambda: unit.fragment_path,
            "UnitFileState": lambda: unit.unit_file_state,
            "MainPID": lambda: unit.main_pid,
            "DropInPaths": lambda: list(unit.drop_in_paths),
            "ControlGroup": lambda: self.control_group(unit),
            "Slice": unit.parent_slice,
            "EffectiveCPUs": lambda: padded(self.effective(unit, "AllowedCPUs", self.cpus)),
            "EffectiveMemoryNodes": lambda: padded(
                self.effective(unit, "AllowedMemoryNodes", self.nodes)),
        }
        if prop in simple:
            return simple[prop]()
        raw = unit.raw(prop)
        return padded(from_bitmask(raw)) if SETTABLE[prop][0] == "ay" else raw

    def cgroup_files(self, unit: FakeUnit) -> dict[str, str]:
        """The cgroup v2 files systemd would write for the unit's settings."""

        def mask(prop: str) -> str:
            return format_cpulist(from_bitmask(unit.raw(prop)))

        def limit(prop: str) -> str:
            return "max" if unit.raw(prop) == UINT64_MAX else str(unit.raw(prop))

        weight = unit.raw("CPUWeight")
        period = unit.raw("CPUQuotaPeriodUSec")
        period = 100_000 if period == UINT64_MAX else period
        quota = unit.raw("CPUQuotaPerSecUSec")
        # systemd: quota per period = per-second quota scaled, at least 1 ms (cgroup.c).
        cpu_max = "max" if quota == UINT64_MAX else str(max(quota * period // 1_000_000, 1000))
        return {
            "cpuset.cpus": mask("AllowedCPUs"),
            "cpuset.mems": mask("AllowedMemoryNodes"),
            "cpuset.cpus.effective": format_cpulist(self.effective(unit, "AllowedCPUs",
                                                                   self.cpus)),
            "cpuset.mems.effective": format_cpulist(self.effective(unit, "AllowedMemoryNodes",
                                                                   self.nodes)),
            "cpu.weight": "100" if weight == UINT64_MAX else str(weight),
            "cpu.max": f"{cpu_max} {period}",
            "memory.max": limit("MemoryMax"),
            "memory.high": limit("MemoryHigh"),
            "memory.swap.max": limit("MemorySwapMax"),
            "memory.low": str(unit.raw("MemoryLow")),
            "memory.min": str(unit.raw("MemoryMin")),
            "memory.zswap.writeback": "1" if unit.raw("MemoryZSwapWriteback") else "0",
            "pids.max": limit("TasksMax"),
            "cpuset.cpus.partition": self.partition_text(unit),
        }

    def partition_text(self, unit: FakeUnit) -> str:
        """cpuset.cpus.partition as the kernel would show it. Like the kernel below a member
        parent (a remote partition): valid only where every cgroup from the top down to the
        unit holds its CPUs in cpuset.cpus.exclusive (written by slicectl, not systemd);
        `refuse_partition` makes the kernel refuse a unit's partition with a reason."""
        want = str(unit.raw("CPUSetPartition"))
        if want == "member":
            return want
        if unit.name in self.refuse_partition:
            return f"{want} invalid ({self.refuse_partition[unit.name]})"
        cpus = from_bitmask(unit.raw("AllowedCPUs"))
        parts = self.control_group(unit).strip("/").split("/")
        for n in range(1, len(parts) + 1):
            assert self.cgroup_root is not None
            file = self.cgroup_root.joinpath(*parts[:n], "cpuset.cpus.exclusive")
            held = parse_cpulist(file.read_text()) if file.exists() else frozenset()
            if not cpus or not cpus <= held:
                return f"{want} invalid (Invalid cpu list in cpuset.cpus.exclusive)"
        return want

    def _mirror(self, unit: FakeUnit) -> None:
        """Write the unit's cgroup files under cgroup_root while it has a cgroup."""
        cgroup = self.control_group(unit)
        if (self.cgroup_root is None or cgroup in ("", "/")
                or unit.suffix not in CGROUP_TYPES):
            return
        folder = self.cgroup_root / cgroup.lstrip("/")
        folder.mkdir(parents=True, exist_ok=True)
        exclusive = folder / "cpuset.cpus.exclusive"  # the kernel's; systemd never writes it
        if not exclusive.exists():
            exclusive.write_text("\n")
        for name, text in self.cgroup_files(unit).items():
            (folder / name).write_text(text + "\n")

    def _export(self, unit: FakeUnit) -> None:
        if self._bus is None:
            return
        path = unit_path(unit.name)
        self._bus.export(path, _UnitIface("org.freedesktop.systemd1.Unit", self, unit.name))
        if unit.suffix in CGROUP_TYPES:
            iface = f"org.freedesktop.systemd1.{unit.suffix.capitalize()}"
            kind = _ServiceIface if unit.suffix == "service" else _CgroupIface
            self._bus.export(path, kind(iface, self, unit.name))
