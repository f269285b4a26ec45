"""The D-Bus client for org.freedesktop.systemd1: the only module that talks to systemd.

Every call is an explicit `Message` with its signature spelled out: dbus-fast's proxy objects
mangle names such as AllowedCPUs (testbed-notes.md), and the wire types matter to systemd.
See docs/dbus.md for the calls, the property table and the error mapping.

Why this module runs past 400 lines: it is the only module that talks to systemd (a contract of
DESIGN.md): its calls, their signatures, the property reads and the error mapping stay together
so no other module needs dbus-fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from enum import StrEnum
from types import TracebackType
from typing import Any, Final, Self

from dbus_fast import BusType, Message, MessageType, Variant
from dbus_fast.aio import MessageBus
from dbus_fast.errors import AuthError, DBusFastError

from slicectl.core.cpulist import from_bitmask
from slicectl.core.defaults import system_bus_address
from slicectl.core.errors import SystemdError
from slicectl.core.frozen import frozen
from slicectl.core.properties.kinds import LiveValue
from slicectl.core.properties.properties import PROP_BY_DBUS, PROPERTIES

BUS_NAME: Final = "org.freedesktop.systemd1"
MANAGER_PATH: Final = "/org/freedesktop/systemd1"
MANAGER_IFACE: Final = "org.freedesktop.systemd1.Manager"
UNIT_IFACE: Final = "org.freedesktop.systemd1.Unit"
PROPERTIES_IFACE: Final = "org.freedesktop.DBus.Properties"
DBUS_NAME: Final = "org.freedesktop.DBus"
DBUS_PATH: Final = "/org/freedesktop/DBus"
CALL_TIMEOUT: Final = 25.0  # libdbus' default method call timeout
MAX_IN_FLIGHT: Final = 128  # method calls pipelined on one connection
JOB_TIMEOUT: Final = 90.0  # systemd's DefaultTimeoutStartSec
# Cgroup settings live on the unit type's own interface (systemd.resource-control(5)).
CGROUP_IFACES: Final = {
    suffix: f"org.freedesktop.systemd1.{suffix.capitalize()}"
    for suffix in ("slice", "service", "scope", "socket", "mount", "swap")
}
JOB_REMOVED_MATCH: Final = (
    f"type='signal',sender='{BUS_NAME}',path='{MANAGER_PATH}',"
    f"interface='{MANAGER_IFACE}',member='JobRemoved'"
)

class StateKind(StrEnum):
    """How a read-only state property's D-Bus value maps to a Python value."""

    MASK = "mask"  # ay bitmask -> frozenset[int]
    STR = "str"
    STRLIST = "strlist"


@frozen
class StateSpec:
    """A read-only unit property slicectl reads (the settable ones are in the settings table)."""

    name: str
    signature: str
    kind: StateKind
    attr: str  # the UnitState field
    on_unit: bool = False  # on org.freedesktop.systemd1.Unit, not the cgroup interface


STATE: Final[dict[str, StateSpec]] = {
    spec.name: spec
    for spec in (
        StateSpec("EffectiveCPUs", "ay", StateKind.MASK, "effective_cpus"),
        StateSpec("EffectiveMemoryNodes", "ay", StateKind.MASK, "effective_memory_nodes"),
        StateSpec("ControlGroup", "s", StateKind.STR, "control_group"),
        StateSpec("Slice", "s", StateKind.STR, "slice"),
        StateSpec("ActiveState", "s", StateKind.STR, "active_state", on_unit=True),
        StateSpec("LoadState", "s", StateKind.STR, "load_state", on_unit=True),
        StateSpec("SubState", "s", StateKind.STR, "sub_state", on_unit=True),
        StateSpec("FragmentPath", "s", StateKind.STR, "fragment_path", on_unit=True),
        StateSpec("DropInPaths", "as", StateKind.STRLIST, "drop_in_paths", on_unit=True),
    )
}
_STATE_UNSET: Final[dict[StateKind, Any]] = {
    StateKind.MASK: b"", StateKind.STR: "", StateKind.STRLIST: []}


def settable() -> str:
    """The properties slicectl can set, for messages."""
    return ", ".join(p.dbus for p in PROPERTIES)


def encode(name: str, value: LiveValue) -> Variant:
    """Encode a settable property's live value as the Variant systemd expects (for the D-Bus
    property `wire_name` names: a share of RAM travels as the property's *Scale twin)."""
    prop = PROP_BY_DBUS.get(name)
    if prop is None:
        raise SystemdError(f"slicectl cannot set property {name!r}", f"settable: {settable()}",
                           prop=name)
    try:
        return Variant(prop.kind.wire_name(name, value)[1], prop.kind.to_wire(value))
    except ValueError as e:
        raise SystemdError(f"invalid value {value!r} for {name}", str(e), prop=name) from None


def wire_name(name: str, value: LiveValue) -> str:
    """The D-Bus property that carries a settable property's value: MemoryMax=50% is set as
    MemoryMaxScale (systemctl set-property does the same)."""
    prop = PROP_BY_DBUS.get(name)
    return name if prop is None else prop.kind.wire_name(name, value)[0]


def decode(name: str, raw: Any) -> Any:
    """Decode a property's D-Bus value (as dbus-fast returns it) to its Python value."""
    prop = PROP_BY_DBUS.get(name)
    if prop is not None:
        return prop.kind.from_wire(raw)
    kind = STATE[name].kind
    if kind is StateKind.MASK:
        return from_bitmask(raw)  # systemd pads the masks it returns to 8 bytes
    if kind is StateKind.STRLIST:
        return tuple(str(s) for s in raw)
    return str(raw)


def _unset_raw(name: str) -> Any:
    """What systemd reports for a property that is not set."""
    prop = PROP_BY_DBUS.get(name)
    if prop is not None:
        return prop.kind.to_wire(prop.kind.unset)
    return _STATE_UNSET[STATE[name].kind]


@functools.cache
def _unset_values() -> dict[str, Any]:
    """Every property's decoded unset value (all immutable), worked out once: the diff of an
    apply of 100 new slices builds 100 absent states."""
    return {name: decode(name, _unset_raw(name))
            for name in [*STATE, *(p.dbus for p in PROPERTIES)]}


@functools.cache
def _absent() -> UnitState:
    return replace(UnitState.from_raw("", {}), active_state="inactive")


@frozen
class UnitState:
    """The live state of one unit, as systemd reports it; `props` holds every settable
    property (settings table) by D-Bus name."""

    unit: str
    load_state: str
    active_state: str
    sub_state: str
    fragment_path: str
    drop_in_paths: tuple[str, ...]
    slice: str
    control_group: str  # "" while the unit has no cgroup (inactive)
    effective_cpus: frozenset[int]
    effective_memory_nodes: frozenset[int]
    props: Mapping[str, LiveValue]

    @classmethod
    def from_raw(cls, unit: str, raw: Mapping[str, Any]) -> UnitState:
        """From D-Bus values by property name (missing ones read as unset)."""
        unset = _unset_values()
        fields: dict[str, Any] = {
            spec.attr: decode(name, raw[name]) if name in raw else unset[name]
            for name, spec in STATE.items()}
        props = {p.dbus: decode(p.dbus, raw[p.dbus]) if p.dbus in raw else unset[p.dbus]
                 for p in PROPERTIES}
        return cls(unit=unit, props=props, **fields)

    @classmethod
    def absent(cls, unit: str) -> UnitState:
        """A unit systemd has not loaded: no state, no cgroup, nothing set."""
        return replace(_absent(), unit=unit)

    @property
    def loaded(self) -> bool:
        """Whether systemd has the unit in memory (a reload is needed to change it)."""
        return self.load_state != ""


@frozen
class ListedUnit:
    """One row of Manager.ListUnitsByPatterns."""

    name: str
    load_state: str
    active_state: str
    sub_state: str
    path: str
    job_id: int = 0  # 0: no job queued for the unit

    @classmethod
    def from_row(cls, row: list[Any]) -> ListedUnit:
        """From a row (ssssssouso): name, description, load, active, sub, following, path,
        job id, job type, job path."""
        return cls(str(row[0]), str(row[2]), str(row[3]), str(row[4]), str(row[6]),
                   int(row[7]))


_RUN_AS_ROOT = "run as root (sudo slicectl ...): changing system units needs privileges"
_NO_SYSTEMD = "is systemd running as PID 1? slicectl apply needs a real systemd"
_NO_ANSWER = ("no reply from systemd", "systemd may be busy or hung; see `systemctl status`, retry")
# D-Bus error name -> (what went wrong, hint); "{unit}" is filled in.
ERRORS: Final[dict[str, tuple[str, str]]] = {
    "org.freedesktop.systemd1.NoSuchUnit": (
        "no such unit", "check the name with `systemctl list-units --all {unit}`"),
    "org.freedesktop.systemd1.UnitMasked": (
        "the unit is masked", "unmask it first: systemctl unmask {unit}"),
    "org.freedesktop.systemd1.LoadFailed": (
        "the unit failed to load", "see `systemctl status {unit}`"),
    "org.freedesktop.DBus.Error.AccessDenied": ("permission denied", _RUN_AS_ROOT),
    "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired": (
        "permission denied", _RUN_AS_ROOT),
    "org.freedesktop.DBus.Error.InvalidArgs": (
        "systemd rejected the value", "check the value against systemd.resource-control(5)"),
    "org.freedesktop.DBus.Error.PropertyReadOnly": (
        "systemd cannot set this property",
        "this systemd may be too old for it (see systemd.resource-control(5))"),
    "org.freedesktop.DBus.Error.ServiceUnknown": ("systemd is not on the bus", _NO_SYSTEMD),
    "org.freedesktop.DBus.Error.NameHasNoOwner": ("systemd is not on the bus", _NO_SYSTEMD),
    "org.freedesktop.DBus.Error.UnknownObject": ("systemd does not know the object",
                                                 _NO_SYSTEMD),
    "org.freedesktop.DBus.Error.UnknownMethod": ("systemd does not know the call",
                                                 _NO_SYSTEMD),
    "org.freedesktop.DBus.Error.NoReply": _NO_ANSWER,
    "org.freedesktop.DBus.Error.Timeout": _NO_ANSWER,
    "org.freedesktop.DBus.Error.TimedOut": _NO_ANSWER,
    "org.freedesktop.DBus.Error.Disconnected": (
        "lost the connection to the bus", "is the system bus still running? retry"),
}
_NO_REPLY = "org.freedesktop.DBus.Error.NoReply"
_DISCONNECTED = "org.freedesktop.DBus.Error.Disconnected"
# systemd is not on the bus (re-executing, or reconnecting after a restart of dbus).
_AWAY = frozenset({"org.freedesktop.DBus.Error.ServiceUnknown",
                   "org.freedesktop.DBus.Error.NameHasNoOwner"})
RETRY_INTERVAL: Final = 0.2


def unit_object_path(unit: str) -> str:
    """systemd's D-Bus object path for a unit (bus_label_escape in systemd's source: every
    byte but ASCII letters, and digits after the first byte, becomes "_" + two hex digits)."""
    out = []
    for i, byte in enumerate(unit.encode()):
        char = chr(byte)
        if char.isascii() and (char.isalpha() or (i > 0 and char.isdigit())):
            out.append(char)
        else:
            out.append(f"_{byte:02x}")
    return f"{MANAGER_PATH}/unit/" + ("".join(out) or "_")


def error_for(name: str, text: str, action: str, *, unit: str = "", prop: str = "",
              ) -> SystemdError:
    """Map a D-Bus error reply to a SystemdError saying what failed and what to do."""
    what, hint = ERRORS.get(name, (f"systemd answered {name}",
                                   "see `journalctl -b _PID=1` for systemd's side"))
    detail = f" ({text})" if text and text != what else ""
    return SystemdError(f"{action} failed: {what}{detail}", hint.format(unit=unit or "UNIT"),
                        unit=unit, prop=prop, name=name)


def _props_named(props: Iterable[str], text: str) -> str:
    """The property an error is about: the only one set, or those its text names."""
    names = list(props)
    if len(names) == 1:
        return names[0]
    named = [n for n in names if n in text]
    return ", ".join(named or names)


class Systemd:
    """A connection to systemd's Manager on the system bus (or a given bus, for tests)."""

    def __init__(self, bus: MessageBus, timeout: float, job_timeout: float,
                 address: str | None = None) -> None:
        self._bus = bus
        self._address = address
        # Set once systemd has answered: from then on, its absence from the bus (a
        # daemon-reexec, a restart of dbus) is waited out instead of reported at once.
        self._answered = False
        self._timeout = timeout
        self._job_timeout = job_timeout
        self._subscribed = False
        self._matched: set[str] = set()  # units whose JobRemoved the bus routes to us
        # Calls in flight at once. dbus-fast fails writes with EAGAIN once the socket's send
        # buffer is full (seen with ~1,400 pipelined calls), so many units' reads queue here.
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._waiters: dict[str, asyncio.Future[str]] = {}
        # JobRemoved may overtake the StartUnit reply; keep results while someone waits.
        self._finished: dict[str, str] = {}
        self._watching = 0
        bus.add_message_handler(self._on_message)

    @classmethod
    async def connect(cls, address: str | None = None, *, timeout: float = CALL_TIMEOUT,
                      job_timeout: float = JOB_TIMEOUT) -> Systemd:
        """Connect to the system bus, or to the bus at `address`."""
        where = system_bus_address(address, os.environ)
        try:
            bus = MessageBus(bus_address=address, bus_type=BusType.SYSTEM)
            await asyncio.wait_for(bus.connect(), timeout)
        except (OSError, DBusFastError, EOFError, TimeoutError) as exc:
            denied = isinstance(exc, PermissionError | AuthError)
            raise SystemdError(
                f"cannot connect to the system bus at {where}: {str(exc) or type(exc).__name__}",
                _RUN_AS_ROOT if denied else f"is D-Bus running? {_NO_SYSTEMD}",
                name=_DISCONNECTED,
            ) from None
        return cls(bus, timeout, job_timeout, address)

    async def _reconnect(self, deadline: float) -> bool:
        """The connection is gone (dbus restarted): connect again, retrying until `deadline`
        (time.monotonic()); False if the bus did not come back by then."""
        with contextlib.suppress(Exception):
            self._bus.disconnect()
        while True:
            bus = MessageBus(bus_address=self._address, bus_type=BusType.SYSTEM)
            try:
                await asyncio.wait_for(bus.connect(), max(0.1, deadline - time.monotonic()))
                break
            except (OSError, DBusFastError, EOFError, TimeoutError):
                if time.monotonic() >= deadline:
                    return False
                await asyncio.sleep(RETRY_INTERVAL)
        self._bus = bus
        self._subscribed = False  # the new connection has no match rules yet
        self._matched.clear()
        bus.add_message_handler(self._on_message)
        return True

    async def close(self) -> None:
        """Disconnect from the bus."""
        for fut in self._waiters.values():
            fut.cancel()
        self._bus.disconnect()
        with contextlib.suppress(Exception):
            await self._bus.wait_for_disconnect()  # type: ignore[no-untyped-call]

    @property
    def job_timeout(self) -> float:
        """How long a job (or a reload) may take before slicectl gives up on it."""
        return self._job_timeout

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def _call(self, member: str, signature: str = "", body: Iterable[Any] = (), *,
                    action: str, unit: str = "", prop: str = "", path: str = MANAGER_PATH,
                    interface: str = MANAGER_IFACE, destination: str = BUS_NAME,
                    timeout: float | None = None) -> list[Any]:
        """Send one method call and return the reply's body, mapping every failure."""
        timeout = self._timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        msg = Message(destination=destination, path=path, interface=interface,
                      member=member, signature=signature, body=list(body))
        while True:
            try:
                async with self._slots, asyncio.timeout(timeout):  # no task per call
                    reply = await self._bus.call(msg)
            except TimeoutError:
                raise error_for(_NO_REPLY, f"none within {timeout:g} s", action, unit=unit,
                                prop=prop) from None
            except (DBusFastError, OSError, EOFError) as exc:
                # Every call slicectl makes may be sent again: a property set, a reload or a
                # start of a running unit does nothing more the second time.
                if (self._answered and not self._bus.connected
                        and await self._reconnect(deadline)):
                    continue
                raise error_for(_DISCONNECTED, str(exc), action, unit=unit,
                                prop=prop) from None
            if (reply.message_type is MessageType.ERROR and reply.error_name in _AWAY
                    and self._answered and time.monotonic() < deadline):
                await asyncio.sleep(RETRY_INTERVAL)  # systemd re-executing, or back soon
                continue
            break
        if reply.message_type is not MessageType.ERROR:
            self._answered = True
        if reply.message_type is MessageType.ERROR:
            text = str(reply.body[0]) if reply.signature.startswith("s") else ""
            name = reply.error_name or ""
            if prop:
                prop = _props_named(prop.split(", "), text)
            raise error_for(name, text, action, unit=unit, prop=prop)
        return list(reply.body)

    async def version(self) -> str:
        """Manager.Version: the running systemd's version string ("252.38-1~deb12u1")."""
        (value,) = await self._call("Get", "ss", [MANAGER_IFACE, "Version"],
                                    interface=PROPERTIES_IFACE, action="reading systemd's "
                                    "version")
        return str(value.value)

    async def reload(self) -> None:
        """Manager.Reload: re-read all unit files; systemd answers once the reload is done."""
        # A reload of a big system can take longer than an ordinary call.
        await self._call("Reload", action="reloading systemd", timeout=self._job_timeout)

    async def set_unit_properties(self, unit: str, props: Mapping[str, LiveValue],
                                  runtime: bool) -> None:
        """Manager.SetUnitProperties: change properties of a unit, live. A list that systemd
        adds to (IODeviceWeight=, IO*Max=) is sent empty first, so it is replaced."""
        body = []
        for name, value in props.items():
            prop = PROP_BY_DBUS.get(name)
            if prop is not None and prop.kind.appends:
                body.append([name, Variant(prop.signature, [])])
            body.append([wire_name(name, value), encode(name, value)])
        names = ", ".join(props)
        await self._call("SetUnitProperties", "sba(sv)", [unit, runtime, body],
                         action=f"setting {names} on {unit}", unit=unit, prop=names)

    async def start_unit(self, unit: str, mode: str = "replace", wait: bool = True) -> str:
        """Manager.StartUnit; returns the job path, after the job finished if `wait`."""
        return await self._job("StartUnit", unit, mode, wait, f"starting {unit}")

    async def stop_unit(self, unit: str, mode: str = "replace", wait: bool = True) -> str:
        """Manager.StopUnit; returns the job path, after the job finished if `wait`."""
        return await self._job("StopUnit", unit, mode, wait, f"stopping {unit}")

    async def restart_unit(self, unit: str, mode: str = "replace", wait: bool = True) -> str:
        """Manager.RestartUnit; returns the job path, after the job finished if `wait`."""
        return await self._job("RestartUnit", unit, mode, wait, f"restarting {unit}")

    async def _job(self, member: str, unit: str, mode: str, wait: bool, action: str) -> str:
        if not wait:
            return str((await self._call(member, "ss", [unit, mode], action=action,
                                         unit=unit))[0])
        await self._subscribe(unit)
        self._watching += 1
        try:
            job = str((await self._call(member, "ss", [unit, mode], action=action,
                                        unit=unit))[0])
            result = self._finished.pop(job, None)
            if result is None:
                fut = self._waiters[job] = asyncio.get_running_loop().create_future()
                try:
                    result = await asyncio.wait_for(fut, self._job_timeout)
                except TimeoutError:
                    raise SystemdError(
                        f"{action} failed: job {job} did not finish within "
                        f"{self._job_timeout:g} s", f"see `systemctl list-jobs` and "
                        f"`systemctl status {unit}`", unit=unit, name=_NO_REPLY) from None
                finally:
                    self._waiters.pop(job, None)
        finally:
            self._watching -= 1
            if not self._watching:
                self._finished.clear()
        if result != "done":
            raise SystemdError(f"{action} failed: the job's result is {result!r}",
                               f"see `systemctl status {unit}` and `journalctl -u {unit}`",
                               unit=unit)
        return job

    async def _subscribe(self, unit: str) -> None:
        """Ask systemd for job signals (once) and the bus to route us JobRemoved for `unit`:
        a match on the unit (arg2), so starting a slice that pulls in 100 others does not
        wake us 100 times."""
        if unit in self._matched:
            return
        await self._call("AddMatch", "s", [f"{JOB_REMOVED_MATCH},arg2='{unit}'"],
                         action="watching systemd jobs", path=DBUS_PATH, interface=DBUS_NAME,
                         destination=DBUS_NAME)
        self._matched.add(unit)
        if self._subscribed:
            return
        try:
            await self._call("Subscribe", action="subscribing to systemd jobs")
        except SystemdError as exc:
            if exc.dbus_error != "org.freedesktop.systemd1.AlreadySubscribed":
                raise
        self._subscribed = True

    def _on_message(self, msg: Message) -> None:
        if (msg.message_type is not MessageType.SIGNAL or msg.member != "JobRemoved"
                or msg.interface != MANAGER_IFACE or msg.signature != "uoss"):
            return
        _id, job, _unit, result = msg.body
        fut = self._waiters.get(job)
        if fut is not None and not fut.done():
            fut.set_result(result)
        elif self._watching:
            self._finished[job] = result

    async def get_unit(self, unit: str) -> str | None:
        """Manager.GetUnit: the unit's object path, or None when it is not loaded."""
        try:
            return str((await self._call("GetUnit", "s", [unit], action=f"looking up {unit}",
                                         unit=unit))[0])
        except SystemdError as exc:
            if exc.dbus_error == "org.freedesktop.systemd1.NoSuchUnit":
                return None
            raise

    async def load_unit(self, unit: str) -> str:
        """Manager.LoadUnit: the unit's object path, loading it if needed."""
        return str((await self._call("LoadUnit", "s", [unit], action=f"loading {unit}",
                                     unit=unit))[0])

    async def get_unit_properties(self, unit: str, *, load: bool = True,
                                  unit_interface: bool = True,
                                  listed: ListedUnit | None = None) -> UnitState:
        """Read the unit's state (STATE) and every settable property (settings table).

        `load=False` does not load a unit systemd has not loaded (GetUnit, not LoadUnit): such
        a unit comes back as UnitState.absent, and systemd loads its files fresh from disk
        when it is next started. `unit_interface=False` skips the Unit interface (state,
        fragment, drop-ins; ~100 properties): its fields come back empty. `listed`: the unit's
        row of a listing just made, whose object path and load, active and sub states are
        taken as they are (three calls fewer than asking for them one by one).
        """
        if listed is not None:
            path: str | None = listed.path
        else:
            path = await (self.load_unit(unit) if load else self.get_unit(unit))
        if path is None:
            return UnitState.absent(unit)
        raw: dict[str, Any] = {}
        action = f"reading properties of {unit}"
        if listed is not None:
            raw.update(LoadState=listed.load_state, ActiveState=listed.active_state,
                       SubState=listed.sub_state)
        if unit_interface:
            # One Get per property, not GetAll: GetAll on the Unit interface makes systemd
            # work out UnitFileState/UnitFilePreset, which scans the unit directories for
            # each unit until the next reload (docs/design-notes.md).
            names = [name for name, spec in STATE.items() if spec.on_unit and name not in raw]
            values = await asyncio.gather(*(
                self._call("Get", "ss", [UNIT_IFACE, name], path=path,
                           interface=PROPERTIES_IFACE, unit=unit, action=action)
                for name in names))
            raw.update({name: value[0].value for name, value in zip(names, values,
                                                                   strict=True)})
        if (cgroup_iface := CGROUP_IFACES.get(unit.rpartition(".")[2])) is not None:
            (values,) = await self._call("GetAll", "s", [cgroup_iface], path=path,
                                         interface=PROPERTIES_IFACE, unit=unit, action=action)
            raw.update({k: v.value for k, v in values.items()
                        if k in STATE or k in PROP_BY_DBUS})
        return UnitState.from_raw(unit, raw)

    async def unit_file_state(self, unit: str) -> str:
        """Unit.UnitFileState ("enabled", "disabled", "static", ...; "" when systemd has no
        file for it), loading the unit if needed."""
        (value,) = await self._call("Get", "ss", [UNIT_IFACE, "UnitFileState"],
                                    path=await self.load_unit(unit), interface=PROPERTIES_IFACE,
                                    unit=unit, action=f"reading UnitFileState of {unit}")
        return str(value.value)

    async def main_pid(self, unit: str) -> int:
        """Service.MainPID of a service (0: no main process)."""
        (value,) = await self._call("Get", "ss", [CGROUP_IFACES["service"], "MainPID"],
                                    path=await self.load_unit(unit), interface=PROPERTIES_IFACE,
                                    unit=unit, action=f"reading MainPID of {unit}")
        return int(value.value)

    async def control_group(self, unit: str) -> str:
        """The unit's ControlGroup ("" while it has none), in one call: the object path is
        computed (unit_object_path), and systemd loads the unit if needed."""
        iface = CGROUP_IFACES.get(unit.rpartition(".")[2])
        if iface is None:
            return ""
        action = f"reading ControlGroup of {unit}"
        try:
            (value,) = await self._call("Get", "ss", [iface, "ControlGroup"],
                                        path=unit_object_path(unit),
                                        interface=PROPERTIES_IFACE, unit=unit, action=action)
        except SystemdError as exc:
            if exc.dbus_error != "org.freedesktop.DBus.Error.UnknownObject":
                raise
            # systemd loads a unit when its path is accessed; a manager that does not
            # (the tests' fake) answers after an explicit LoadUnit.
            (value,) = await self._call("Get", "ss", [iface, "ControlGroup"],
                                        path=await self.load_unit(unit),
                                        interface=PROPERTIES_IFACE, unit=unit, action=action)
        return str(value.value)

    async def list_units_by_patterns(self, states: Iterable[str],
                                     patterns: Iterable[str]) -> list[ListedUnit]:
        """Manager.ListUnitsByPatterns: loaded units matching states and glob patterns."""
        (rows,) = await self._call("ListUnitsByPatterns", "asas", [list(states), list(patterns)],
                                   action="listing units")
        return [ListedUnit.from_row(r) for r in rows]

    async def list_units_by_names(self, names: Iterable[str]) -> list[ListedUnit]:
        """Manager.ListUnitsByNames: one row per name, in order (systemd loads each unit)."""
        (rows,) = await self._call("ListUnitsByNames", "as", [list(names)],
                                   action="listing units")
        return [ListedUnit.from_row(r) for r in rows]
