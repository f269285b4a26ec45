"""The plan: which units and drop-ins slicectl wants, with which resource properties (pure).

`build_plan(config, topology)` = placement + the unit files it implies. Properties are keyed by
their unit-file names (`AllowedCPUs`, `CPUQuota`, `MemoryMax`, …) with typed plan values
(slicectl.core.properties.kinds.PlanValue); the settings table says how each is written, sent and
checked. Plans round-trip through JSON (docs/plan-json.md).

Why this module runs past 400 lines: it is the plan and every unit it implies (tenant slices,
housekeeping drop-ins, the schedule's timers and their sandboxed service), kept together so a
unit's properties are decided in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from slicectl.core.config.tenants import HOUSEKEEPING_UNITS, Config, Confinement, Tenant
from slicectl.core.config.values import RamShare, format_memory, format_size, memory_sum
from slicectl.core.cpulist import format_cpulist, parse_cpulist
from slicectl.core.errors import PlacementError, RenderError, shown
from slicectl.core.frozen import frozen
from slicectl.core.placement.layout import Layout, RepackMove, TenantPlacement
from slicectl.core.placement.placement import place
from slicectl.core.placement.protection import FIX, SOURCE, node_overcommit, overcommit, protects
from slicectl.core.placement.topology import Topology
from slicectl.core.properties.kinds import HostLimits, PlanValue
from slicectl.core.properties.properties import (
    ALLOWED_CPUS,
    ALLOWED_MEMORY_NODES,
    BY_KEY,
    PROP_BY_NAME,
    PROPERTIES,
)

if TYPE_CHECKING:
    from slicectl.core.balance.balance import ElasticRange
    from slicectl.core.shares.contention import Competition, CpuShares

FORMAT = "slicectl-plan/1"
# (property, human, set) -> its lines in a unit file: see UnitPlan.formatted
SetLines = dict[tuple[str, bool, frozenset[int]], list[str]]
DROPIN_NAME = "50-slicectl.conf"


class FileKind(StrEnum):
    """A slice unit file slicectl owns, a drop-in with resource settings for a unit someone
    else owns, a file of the schedule (timers, their service, timers.target's drop-in), or a
    file that acts at boot (the cpuset partitions' service and multi-user.target's drop-in)."""

    UNIT = "unit"
    DROPIN = "dropin"
    SCHEDULE = "schedule"
    BOOT = "boot"  # written as it is, acting at boot: the partitions' service and its drop-in


class Section(StrEnum):
    """The unit-file section resource settings go in (the unit type's own)."""

    SLICE = "Slice"
    SERVICE = "Service"
    SCOPE = "Scope"
    SOCKET = "Socket"
    MOUNT = "Mount"
    SWAP = "Swap"
    TIMER = "Timer"
    TARGET = "Target"

    @classmethod
    def of(cls, unit: str) -> Section:
        """The section for a unit name: app.service -> Service."""
        return cls(unit.rsplit(".", 1)[1].capitalize())


@frozen
class UnitPlan:
    """One file slicectl generates: a unit file, or a drop-in for an existing unit."""

    unit: str
    path: str  # relative to the unit directory, e.g. "system.slice.d/50-slicectl.conf"
    kind: FileKind
    section: Section
    properties: Mapping[str, PlanValue] = field(default_factory=dict)
    description: str | None = None
    slice: str | None = None  # member units: Slice= (takes effect on restart)
    tenant: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)  # file-only settings (OOMPolicy)
    wants: tuple[str, ...] = ()  # the parent slice pulls its tenant slices in: one transaction
    # SCHEDULE files: their sections and (key, value) lines, written as they are
    sections: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()

    def formatted(self, human: bool = False, sets: SetLines | None = None
                  ) -> list[tuple[str, str]]:
        """(key, value) pairs in file order as in a unit file (`human`: sizes as 24.5G).
        `sets`: the lines of CPU and node sets already formatted, shared by the units of one
        plan (every tenant on the shared pool has the same CPUs)."""
        pairs: list[tuple[str, str]] = []
        for p in PROPERTIES:
            if p.name not in self.properties:
                continue
            value = self.properties[p.name]
            lines_of = p.kind.human_lines if human else p.kind.lines
            if sets is not None and isinstance(value, frozenset):
                key = (p.name, human, value)
                if (lines := sets.get(key)) is None:
                    lines = sets[key] = lines_of(value)
            else:
                lines = lines_of(value)
            pairs += [(p.name, line) for line in lines]
        return pairs

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": self.unit, "path": self.path, "kind": str(self.kind),
            "section": str(self.section), "description": self.description,
            "slice": self.slice, "tenant": self.tenant,
            "extra": dict(sorted(self.extra.items())), "wants": list(self.wants),
            "properties": {p.name: p.kind.json(self.properties[p.name])
                           for p in PROPERTIES if p.name in self.properties},
            "sections": [[name, [list(pair) for pair in pairs]]
                         for name, pairs in self.sections],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> UnitPlan:
        return cls(
            unit=d["unit"], path=d["path"], kind=FileKind(d["kind"]),
            section=Section(d["section"]), description=d.get("description"),
            slice=d.get("slice"), tenant=d.get("tenant"), extra=dict(d.get("extra", {})),
            wants=tuple(d.get("wants", ())),
            properties={k: PROP_BY_NAME[k].kind.from_json(v)
                        for k, v in d["properties"].items()},
            sections=tuple((str(name), tuple((str(k), str(v)) for k, v in pairs))
                           for name, pairs in d.get("sections", ())),
        )


@frozen
class Plan:
    """Everything slicectl wants on a host, derived from tenants.yaml and the topology."""

    source: str
    profile: str | None
    topology: str
    layout: Layout
    units: tuple[UnitPlan, ...]
    # What each tenant is guaranteed when everything is busy (cpu.shares experiments;
    # slicectl.core.shares.contention)
    shares: CpuShares | None = None
    # What the balancer may make of each elastic tenant (docs/balance.md)
    elastic: tuple[ElasticRange, ...] = ()
    # The host's RAM in bytes (the topology's MemTotal; 0: unknown): what systemd resolves a
    # share of RAM ("MemoryMax=50%") against, so the live diff knows the bytes it will report.
    memory: int = 0
    # The host's task limit (the topology's; 0: unknown): what systemd resolves a share of it
    # ("TasksMax=50%") against.
    tasks: int = 0

    @property
    def limits(self) -> HostLimits:
        """What the target's systemd resolves shares against (RAM and task limit)."""
        return HostLimits(self.memory, self.tasks)

    def unit(self, name: str) -> UnitPlan:
        for u in self.units:
            if u.unit == name:
                return u
        raise KeyError(name)

    def placements(self) -> dict[str, frozenset[int]]:
        """tenant → CPUs, to keep tenants in place next time (placement stability)."""
        return {p.tenant: p.cpus for p in self.layout.tenants if not p.pool}

    def to_json(self) -> dict[str, Any]:
        """The documented `slicectl plan --json` form (docs/plan-json.md)."""
        lay = self.layout
        elastic = {r.tenant: r for r in self.elastic}
        return {
            "format": FORMAT,
            "source": self.source,
            "profile": self.profile,
            "topology": self.topology,
            "memory_bytes": self.memory,
            "task_limit": self.tasks,
            "housekeeping_cpus": format_cpulist(lay.housekeeping),
            "shared_pool": format_cpulist(lay.shared_pool),
            "placement_notes": list(lay.notes),
            "moves": [m.to_json() for m in lay.moves],
            "tenants": [
                {
                    "name": p.tenant,
                    "cpus": format_cpulist(p.cpus),
                    "cpu_count": len(p.cpus),
                    "cpu_nodes": list(p.cpu_nodes),
                    "memory_nodes": None if p.memory_nodes is None else list(p.memory_nodes),
                    "exclusive": p.exclusive,
                    "shared_pool": p.pool,
                    **({"cpu_share": self.shares.tenant_json(p.tenant)}
                       if self.shares is not None else {}),
                    **({"elastic": _elastic_json(elastic[p.tenant])}
                       if p.tenant in elastic else {}),
                }
                for p in lay.tenants
            ],
            "units": [u.to_json() for u in self.units],
            **({"cpu_shares": self.shares.to_json()} if self.shares is not None else {}),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Plan:
        """Read back what to_json wrote (tests/core/test_plan.py round-trips every example)."""
        layout = Layout(
            housekeeping=parse_cpulist(d["housekeeping_cpus"]),
            shared_pool=parse_cpulist(d["shared_pool"]),
            tenants=tuple(
                TenantPlacement(
                    tenant=t["name"], cpus=parse_cpulist(t["cpus"]),
                    cpu_nodes=tuple(t["cpu_nodes"]),
                    memory_nodes=None if t["memory_nodes"] is None else tuple(t["memory_nodes"]),
                    exclusive=t["exclusive"], pool=t["shared_pool"],
                )
                for t in d["tenants"]
            ),
            notes=tuple(d.get("placement_notes", ())),
            moves=tuple(RepackMove.from_json(m) for m in d.get("moves", ())),
        )
        units = tuple(UnitPlan.from_json(u) for u in d["units"])
        shares = None
        if "cpu_shares" in d:
            from slicectl.core.shares.contention import CpuShares

            shares = CpuShares.from_json(d["cpu_shares"], {
                u.unit: u.tenant for u in units if u.tenant is not None and u.kind == "unit"})
        elastic: tuple[ElasticRange, ...] = ()
        if any("elastic" in t for t in d["tenants"]):
            from slicectl.core.balance.balance import ElasticRange

            elastic = tuple(ElasticRange(
                t["name"], parse_cpulist(t["cpus"]), t["elastic"]["cpus_min"],
                t["elastic"]["cpus_max"], parse_cpulist(t["elastic"]["reach"]))
                for t in d["tenants"] if "elastic" in t)
        return cls(source=d["source"], profile=d["profile"], topology=d["topology"],
                   layout=layout, units=units, shares=shares, elastic=elastic,
                   memory=d.get("memory_bytes", 0), tasks=d.get("task_limit", 0))


def _elastic_json(r: ElasticRange) -> dict[str, Any]:
    return {"cpus_min": r.floor, "cpus_max": r.ceiling, "reach": format_cpulist(r.reach)}


def _resources(values: Mapping[str, Any]) -> dict[str, PlanValue]:
    """Resource keys as properties: each becomes its row's property, as it is."""
    props: dict[str, PlanValue] = {}
    for key, value in values.items():
        prop = BY_KEY[key].prop
        if prop is not None:
            props[prop.name] = value
    return props


def _tenant_props(t: Tenant, p: TenantPlacement) -> dict[str, PlanValue]:
    props: dict[str, PlanValue] = {ALLOWED_CPUS.name: p.cpus}
    if p.memory_nodes is not None:
        props[ALLOWED_MEMORY_NODES.name] = frozenset(p.memory_nodes)
    return props | _resources(t.resources)


def _confine_props(c: Confinement | None, hk: frozenset[int], housekeeping_unit: bool) -> dict[
        str, PlanValue]:
    props: dict[str, PlanValue] = {}
    if housekeeping_unit and hk:
        props[ALLOWED_CPUS.name] = hk
    if c is not None:
        if c.cpus is not None:
            props[ALLOWED_CPUS.name] = c.cpus
        props |= _resources(c.resources)
    return props


@frozen
class ScheduleCommand:
    """How a timer's service runs slicectl: the executable and the tenants file on the host."""

    executable: tuple[str, ...]  # e.g. ("/usr/local/bin/slicectl",)
    tenants: str
    # Where each came from, for the error when one cannot be written into ExecStart=.
    executable_from: str = field(default="the schedule's slicectl", compare=False)
    tenants_from: str = field(default="the schedule's tenants file", compare=False)

    @classmethod
    def default(cls, config: Config) -> ScheduleCommand:
        """`slicectl` from systemd's executable search path, and the file as given (the
        CLI passes absolute paths: the running slicectl and the tenants file)."""
        return cls(("slicectl",), config.path)


SCHEDULE_SERVICE = "slicectl-profile@.service"
# The schedule's service runs `apply` as root (systemd takes SetUnitProperties from root
# without polkit), but needs only: the system bus (AF_UNIX), to write the unit directory,
# its lock (a file in /run/slicectl/locks, made if missing: RuntimeDirectory=, kept at stop
# as the balancer's state beside it), systemd's runtime control drop-ins (apply puts
# /run/systemd/system.control/UNIT.d back as it found it after its runtime calls) and, in
# generator mode, /etc/slicectl. Everything else is read-only or gone, and no capability is
# kept: root writes its own files without CAP_DAC_OVERRIDE. tests/test_units.py bounds
# `systemd-analyze security` exposure.
SCHEDULE_SANDBOX: tuple[tuple[str, str], ...] = (
    ("UMask", "0022"),  # unit files are world-readable, as systemd's own
    ("ProtectSystem", "strict"),
    ("ReadWritePaths", "/etc/systemd/system -/etc/slicectl -/run/systemd/system.control"),
    ("RuntimeDirectory", "slicectl"), ("RuntimeDirectoryMode", "0755"),
    ("RuntimeDirectoryPreserve", "yes"),
    # The tenants file may live anywhere the operator put it: /home (read-only here), /tmp
    # (no PrivateTmp, which would hide it).
    ("ProtectHome", "read-only"),
    ("PrivateDevices", "yes"), ("PrivateNetwork", "yes"),
    ("PrivateIPC", "yes"),
    ("ProtectKernelTunables", "yes"), ("ProtectKernelModules", "yes"),
    ("ProtectKernelLogs", "yes"), ("ProtectControlGroups", "yes"), ("ProtectClock", "yes"),
    ("ProtectHostname", "yes"), ("NoNewPrivileges", "yes"), ("CapabilityBoundingSet", ""),
    ("AmbientCapabilities", ""), ("RestrictAddressFamilies", "AF_UNIX"),
    ("IPAddressDeny", "any"), ("RestrictNamespaces", "yes"), ("RestrictRealtime", "yes"),
    ("RestrictSUIDSGID", "yes"), ("LockPersonality", "yes"), ("MemoryDenyWriteExecute", "yes"),
    ("SystemCallArchitectures", "native"), ("SystemCallFilter", "@system-service"),
    ("SystemCallFilter", "~@privileged @resources"), ("SystemCallErrorNumber", "EPERM"),
    ("DevicePolicy", "closed"), ("KeyringMode", "private"),
)


_EXEC_PREFIXES = "@-:+!|"  # systemd.service(5): read off the executable before unquoting


def exec_word(text: str, what: str = "a command word", *, first: bool = False) -> str:
    """One word of an ExecStart= line (systemd.service(5), "Command lines"); every path that
    lands in a unit's command line goes through here. `%` doubled (specifiers); in an
    argument `$` doubled (environment variables; the executable's path is not expanded);
    quoted when it holds white space, quotes or a backslash, or is empty or a lone `;` (a
    command separator). Refused, naming `what` (the option or file it came from): what
    check_exec_word refuses."""
    check_exec_word(text, what, first=first)
    text = text.replace("%", "%%")
    if not first:
        text = text.replace("$", "$$")
    if text in ("", ";") or any(ch.isspace() or ch in "\"'\\" for ch in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def check_exec_word(text: str, what: str, *, first: bool = False) -> None:
    """Raise RenderError (naming `what`) if `text` cannot be one word of ExecStart=: a
    control character (a newline would end the line and start a directive of its own, and
    no quoting helps), text that is not UTF-8; for the executable (`first`) also an empty
    word, a leading `@-:+!|` (systemd reads it as a prefix whatever the quotes) and a quote
    or backslash (systemd refuses them in an executable's name)."""
    bad = next((ch for ch in text if ord(ch) < 32 or 127 <= ord(ch) < 160), None)
    if bad is not None:
        raise RenderError(
            f"{what} {shown(text)}: contains a control character (U+{ord(bad):04X}), which "
            "cannot be written into a unit's ExecStart= line (a newline would start a "
            "directive of its own)",
            "use a path without control characters (move or link the file to one)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise RenderError(f"{what} {shown(text)}: not valid UTF-8, which unit files must be",
                          "use a path in UTF-8 (move or link the file to one)") from None
    if not first:
        return
    if not text or text[0] in _EXEC_PREFIXES:
        raise RenderError(
            f"{what} {shown(text)!r}: systemd would read "
            + (f"its leading {text[0]!r} as a prefix of ExecStart=" if text else
               "an empty executable"),
            "give the executable by its absolute path")
    unsafe = next((ch for ch in text if ch in "\"'\\"), None)
    if unsafe is not None:
        raise RenderError(f"{what} {shown(text)}: systemd refuses an executable whose name "
                          f"holds {unsafe!r}",
                          "use a path without quotes or backslashes (move or link the file "
                          "to one)")


def schedule_units(config: Config, command: ScheduleCommand) -> list[UnitPlan]:
    """The timers of `schedule:`, the service they start, and timers.target's drop-in that
    starts the timers at boot. Each timer runs `apply --profile P --if-in-force`: when several
    timers catch up at boot (Persistent=), only the profile whose schedule elapsed last
    applies, whatever order they run in."""
    timers = [f"slicectl-profile@{name}.timer" for name in config.schedule]
    exec_start = " ".join([*(exec_word(word, command.executable_from, first=not i)
                             for i, word in enumerate(command.executable)), "apply",
                           exec_word(command.tenants, command.tenants_from),
                           "--profile", "%i", "--if-in-force",
                           "--yes"])
    service = UnitPlan(
        unit=SCHEDULE_SERVICE, path=SCHEDULE_SERVICE, kind=FileKind.SCHEDULE,
        section=Section.SERVICE, sections=(
            ("Unit", (("Description", "slicectl: switch to profile %i on its schedule"),)),
            ("Service", (("Type", "oneshot"), ("ExecStart", exec_start),
                         *SCHEDULE_SANDBOX))))
    units = [service]
    for name, calendars in config.schedule.items():
        unit = f"slicectl-profile@{name}.timer"
        what = "the base configuration" if name == "default" and name not in config.profiles \
            else f"profile {name}"
        units.append(UnitPlan(
            unit=unit, path=unit, kind=FileKind.SCHEDULE, section=Section.TIMER, sections=(
                ("Unit", (("Description", f"slicectl: {what} on schedule".replace("%", "%%")),)),
                # AccuracySec: switch at the minute asked for, not up to a minute later
                ("Timer", (*(("OnCalendar", c) for c in calendars),
                           ("AccuracySec", "1s"), ("Persistent", "true"))))))
    units.append(UnitPlan(
        unit="timers.target", path=f"timers.target.d/{DROPIN_NAME}", kind=FileKind.SCHEDULE,
        section=Section.TARGET, sections=(("Unit", tuple(("Wants", t) for t in timers)),)))
    return units


PARTITIONS_SERVICE = "slicectl-partitions.service"
CGROUP_MOUNT = "/sys/fs/cgroup"  # cgroup v2's mount point (slicectl refuses v1 and hybrid)


def partition_units(units: list[UnitPlan]) -> list[UnitPlan]:
    """At boot, what apply does live for the tenants that are cpuset partitions: a oneshot
    service that writes the `cpuset.cpus.exclusive` files systemd has no setting for (parents
    first, as the kernel requires), writes each partition again (the kernel refused it while
    its parents held no exclusive CPUs), and fails, naming the kernel's answer, when a
    partition is not what was asked; and multi-user.target's drop-in that starts it. The
    files in cgroupfs are gone after a reboot, so without it the partitions stay invalid until
    the next apply (slicectl.core.properties.partition). apply itself does not start it:
    rollback must find the files as they were."""
    from slicectl.core.properties.partition import (
        exclusive_cpus,
        exclusive_steps,
        is_partition,
        slice_cgroup,
    )

    parts = {u.unit: (str(u.properties["CPUSetPartition"]), cpus) for u in units
             if u.kind is FileKind.UNIT and is_partition(u.properties.get("CPUSetPartition"))
             and isinstance(cpus := u.properties.get(ALLOWED_CPUS.name), frozenset)}
    if not parts:
        return []
    groups = {unit: slice_cgroup(unit) for unit in parts}
    need = exclusive_cpus({groups[u]: cpus for u, (_, cpus) in parts.items()})
    lines: list[tuple[str, str]] = [("Type", "oneshot")]
    for group, cpus in exclusive_steps({}, need):
        lines.append(("ExecStart", _write_line(f"{CGROUP_MOUNT}{group}/cpuset.cpus.exclusive",
                                               format_cpulist(cpus))))
    for unit, (value, _) in sorted(parts.items()):
        path = f"{CGROUP_MOUNT}{groups[unit]}/cpuset.cpus.partition"
        lines.append(("ExecStart", _write_line(path, value)))
        # "$$": systemd would expand "$p" itself (systemd.service(5), "Command lines").
        lines.append(("ExecStart", f"/bin/sh -c 'read -r p < {path}; [ \"$$p\" = {value} ] "
                                   f"|| {{ echo \"{unit}: the kernel reports $$p\" >&2; "
                                   "exit 1; }'"))
    names = sorted(parts)
    service = UnitPlan(
        unit=PARTITIONS_SERVICE, path=PARTITIONS_SERVICE, kind=FileKind.BOOT,
        section=Section.SERVICE, sections=(
            ("Unit", (("Description", "slicectl: the tenants' cpuset partitions at boot "
                                      "(cpuset.cpus.exclusive)"),
                      ("Documentation", "man:slicectl(8)"),
                      *(("Wants", n) for n in names), *(("After", n) for n in names))),
            ("Service", tuple(lines))))
    starter = UnitPlan(
        unit="multi-user.target", path=f"multi-user.target.d/{DROPIN_NAME}", kind=FileKind.BOOT,
        section=Section.TARGET, sections=(("Unit", (("Wants", PARTITIONS_SERVICE),)),))
    return [service, starter]


def _write_line(path: str, value: str) -> str:
    """An ExecStart= line writing `value` into the file `path` (no systemd tool writes one)."""
    return f"/bin/sh -c 'echo {value} > {path}'"


def check_protection(config: Config, topo: Topology, layout: Layout) -> None:
    """Refuse protection beyond RAM minus housekeeping, or beyond the memory of the nodes a
    tenant's memory is bound to: it protects nobody (lint's protection-overcommit reports
    the same)."""
    for t in config.tenants:
        for key, value, limit in t.protection_above_limit(topo.total_memory):
            if isinstance(value, RamShare) != isinstance(limit, RamShare):  # else: validate's
                raise PlacementError(
                    f"{config.path}:{t.line_of(key)}: tenants.{t.name}.{key}: {key} "
                    f"{format_memory(value)} is above memory_max {format_memory(limit)} on "
                    f"this host ({format_size(topo.total_memory)} of RAM): the tenant can never "
                    "use what it protects beyond the limit",
                    "lower memory_low/memory_min to at most memory_max, or raise memory_max")
    found = overcommit(config, topo)
    if found is not None:
        raise PlacementError(found.located(config.path), f"{FIX} (source: {SOURCE})")
    on_nodes = node_overcommit(config, topo, layout)
    if on_nodes is not None:
        raise PlacementError(on_nodes.located(config.path),
                             f"{on_nodes.fix} (source: {SOURCE})")


def _parent(config: Config, topo: Topology, layout: Layout) -> UnitPlan:
    """tenants.slice: off the housekeeping CPUs, protecting what its tenants protect."""
    props: dict[str, PlanValue] = {}
    if layout.housekeeping:
        # Keeps everything under tenants.slice off the housekeeping CPUs, members included.
        props[ALLOWED_CPUS.name] = topo.online_cpus - layout.housekeeping
    # memory.low/min only protect a cgroup when every ancestor is protected as well, so the
    # parent carries the sum of its children's protection (cgroup-v2.rst, "memory.low"); a
    # child's infinity makes the parent's infinity.
    for key in ("memory_min", "memory_low"):
        total = memory_sum((t.resources.get(key) for t in config.tenants), topo.total_memory)
        prop = BY_KEY[key].prop
        if total and prop is not None:
            props[prop.name] = total
    # Wants= the tenant slices: starting the parent (apply does, and so does the first member
    # service after a boot) brings every tenant slice up in one systemd transaction.
    return UnitPlan(unit=config.slice_unit(), path=config.slice_unit(), kind=FileKind.UNIT,
                    section=Section.SLICE, properties=props,
                    description=f"slicectl tenants ({config.slice})",
                    wants=tuple(config.slice_unit(t.name) for t in config.tenants))


def _housekeeping_dropins(config: Config, layout: Layout) -> list[UnitPlan]:
    confined = {c.unit: c for c in config.confine}
    units = []
    for unit in sorted(set(HOUSEKEEPING_UNITS) | set(confined)):
        props = _confine_props(confined.get(unit), layout.housekeeping,
                               unit in HOUSEKEEPING_UNITS)
        # A confined service must survive its jobs hitting MemoryMax: systemd's default
        # OOMPolicy=stop stops the whole unit when the kernel OOM-kills one of its processes
        # (measured in the testbed: cron stopped and restarted); "continue" kills only the
        # runaway job (systemd.service(5), OOMPolicy=).
        extra = ({"OOMPolicy": "continue"}
                 if unit.endswith(".service") and unit in confined else {})
        if props:
            units.append(UnitPlan(unit=unit, path=f"{unit}.d/{DROPIN_NAME}",
                                  kind=FileKind.DROPIN, section=Section.of(unit),
                                  properties=props, extra=extra))
    return units


def build_plan(
    config: Config, topo: Topology, previous: Mapping[str, frozenset[int]] | None = None,
    command: ScheduleCommand | None = None, competition: Competition | None = None,
    shares: bool = True, repack: bool = False, may_split: bool = False,
) -> Plan:
    """Place tenants and derive the unit files; `previous` keeps tenants where they were;
    `command` is how the schedule's timers run slicectl (default: ScheduleCommand.default);
    `competition` is what else competes for CPU (default: the standard units, assumed).
    Without `shares` the plan has no guaranteed CPU per tenant (`generate` writes files only,
    and skips slicectl.core.shares.contention's import and its prediction). `repack`: where
    keeping every tenant in place would split a local tenant, the fewest moves that avoid it
    (without it such a plan is refused: slicectl.core.placement.repack); `may_split`: a local
    tenant no layout puts on one node spans nodes instead (the generator at boot)."""
    layout = place(config, topo, previous, repack, may_split)
    if any(protects(t) for t in config.tenants):
        check_protection(config, topo, layout)
    elastic: tuple[ElasticRange, ...] = ()
    if any(t.elastic for t in config.tenants):
        from slicectl.core.balance.balance import check_floors, elastic_ranges

        check_floors(config, topo, layout)
        elastic = elastic_ranges(config, topo, layout)
    units = [_parent(config, topo, layout)]
    for t in config.tenants:
        name = config.slice_unit(t.name)
        units.append(UnitPlan(
            unit=name, path=name, kind=FileKind.UNIT, section=Section.SLICE,
            properties=_tenant_props(t, layout.of(t.name)),
            description=t.description or f"slicectl tenant {t.name}", tenant=t.name,
        ))
    units += partition_units(units)
    units += _housekeeping_dropins(config, layout)
    if config.schedule:
        units += schedule_units(config, command or ScheduleCommand.default(config))
    for t in config.tenants:
        for svc in t.services:
            units.append(UnitPlan(unit=svc, path=f"{svc}.d/{DROPIN_NAME}",
                                  kind=FileKind.DROPIN, section=Section.of(svc),
                                  slice=config.slice_unit(t.name), tenant=t.name))
    predicted = None
    if shares:
        from slicectl.core.shares.contention import predict_shares

        predicted = predict_shares(config, layout, topo, competition)
    return Plan(source=config.path, profile=config.profile, topology=topo.source,
                layout=layout, units=tuple(units), shares=predicted, elastic=elastic,
                memory=topo.total_memory, tasks=topo.task_limit)
