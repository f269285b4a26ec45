"""The one table of tenants.yaml settings and the systemd properties they become.

Each `Setting` row says, for one key: how to parse it (with systemd's own ranges), where it
may appear (tenants, profiles, `confine:`), the unit-file property it becomes with its D-Bus
name, kind of value (slicectl.core.properties.kinds), cgroup file and first systemd version, whether
the TUI form offers it, and its documentation. Everything else reads this table: config (parsing and
validation), plan and render (which properties, in which order), live (D-Bus values, what a
cgroup file must say), systemd (signatures), the TUI form, and the README's reference
(tests/test_readme.py). Adding a property is one row here plus its tests
(docs/design-notes.md, "Adding a property").

Why this module runs past 400 lines: it is the table itself, one row per key, and everything
derived from it stays beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Flag, StrEnum, auto
from typing import Any, Final

from slicectl.core.config.parsers import (
    CONFINE_TYPES,
    MAX_CPUS,
    MAX_UNIT_FILE_NAME,
    MIN_BALANCE_WINDOW_US,
    SLICE_MEMBER_TYPES,
    TENANT_NAME_RE,
    Numa,
    check_unit_name,
    memory_parser,
    parse_balance_time,
    parse_bool,
    parse_choice,
    parse_cpulist_only,
    parse_cpus,
    parse_description,
    parse_devices,
    parse_housekeeping_cpus,
    parse_int_range,
    parse_nodes,
    parse_numa,
    parse_permyriad,
    parse_quota_period,
    parse_rate,
    parse_share,
    parse_tasks_max,
    parse_unit_list,
    parse_weight,
)
from slicectl.core.config.values import (
    TASK_SHARE_SINCE,
    UINT64_MAX,
    RamShare,
    TaskShare,
    parse_percent,
)
from slicectl.core.frozen import frozen
from slicectl.core.properties import kinds, partition
from slicectl.core.properties.kinds import CgroupExpectation, Kind, LiveValue

__all__ = ["BALANCE_KEYS", "BALANCE_SETTINGS", "BY_KEY", "CONFINE_SETTINGS", "CONFINE_TYPES",
           "EDITABLE_KEYS", "MAX_UNIT_FILE_NAME", "PROFILE_KEYS", "PROPERTIES", "PROP_BY_DBUS",
           "PROP_BY_NAME", "RESOURCE_KEYS", "SETTINGS", "TENANT_NAME_RE", "TENANT_SETTINGS",
           "Numa", "Prop", "Role", "Scope", "Setting", "balance_reference_table",
           "check_unit_name", "dbus_reference_table", "parse_housekeeping_cpus",
           "reference_table"]

class Scope(Flag):
    """Where a key may appear in tenants.yaml."""

    TENANT = auto()  # tenants.NAME
    PROFILE = auto()  # profiles.P.NAME (overrides a tenant's key)
    CONFINE = auto()  # confine.UNIT
    BALANCE = auto()  # the top-level balance: section (the balancer's policy)


class Role(StrEnum):
    """What a key does: becomes a resource property, places CPUs, or names things."""

    RESOURCE = "resource"  # its value becomes the row's property as it is
    PLACEMENT = "placement"  # read by placement (cpus, numa, nodes, exclusive)
    TEXT = "text"  # description
    MEMBERS = "members"  # services
    BALANCE = "balance"  # read by the balancer only (cpus_min, cpus_max, balance:)


# --- systemd properties -----------------------------------------------------------------

# The whole disk a device path (or a file on it) is on, as "MAJ:MIN" (None: unknown). An edge
# supplies it (slicectl.host.cgroup.cgroupfs.block_device); systemd resolves paths the same way.
DeviceNumber = Callable[[str], "str | None"]
Check = Callable[[LiveValue, Mapping[str, LiveValue], DeviceNumber], list[CgroupExpectation]]


def no_devices(_path: str) -> str | None:
    """A DeviceNumber that knows no device (per-device checks are skipped)."""
    return None


@frozen
class Prop:
    """A systemd unit property slicectl sets, and the cgroup files that prove it took."""

    name: str  # in unit files and plan JSON: CPUQuota
    dbus: str  # on D-Bus: CPUQuotaPerSecUSec
    kind: Kind
    since: int  # first systemd version that accepts it
    check: Check | None = None  # None: no cgroup file of its own (or checked by another's)
    # A value that needs a later systemd than the property (CPUWeight=idle: 252).
    since_value: Callable[[Any], int] | None = None
    # Unit types that take it (None: every type with a cgroup).
    types: tuple[str, ...] | None = None
    # The first Linux release (major, minor) with the cgroup file it needs, where systemd
    # accepts the property on kernels without it (and then silently does nothing).
    kernel: tuple[int, int] | None = None
    # Which values need `kernel` (None: every value; CPUSetPartition=member needs none).
    kernel_for: Callable[[Any], bool] | None = None

    @property
    def signature(self) -> str:
        """The D-Bus signature of its value."""
        return self.kind.signature

    def expectations(self, live: LiveValue, want: Mapping[str, LiveValue],
                     devices: DeviceNumber = no_devices) -> list[CgroupExpectation]:
        """What the cgroup files must say once `live` (and the rest of `want`) is in force."""
        return [] if self.check is None else self.check(live, want, devices)

    def needs(self, value: Any) -> int:
        """The first systemd version that takes this property with `value`."""
        return max(self.since, self.since_value(value) if self.since_value else 0)

    def needs_kernel(self, value: Any) -> tuple[int, int] | None:
        """The first Linux release (major, minor) that does what this property asks with
        `value` (None: any)."""
        if self.kernel is None or (self.kernel_for is not None and not self.kernel_for(value)):
            return None
        return self.kernel


def _file(name: str, text: Callable[[LiveValue], str],
          same: Callable[[str, str], bool] = kinds.same_text, missing: str | None = None
          ) -> Check:
    """A file whose text depends on the property's own value only; `missing`: how the kernel
    behaves where the file does not exist, if not as one of the usual defaults."""
    return lambda live, _want, _devices: [CgroupExpectation(name, text(live), same, missing)]


def _cpu_max(quota: LiveValue, want: Mapping[str, LiveValue], _d: DeviceNumber
             ) -> list[CgroupExpectation]:
    text = kinds.cpu_max_text(quota, want.get("CPUQuotaPeriodUSec"))
    return [CgroupExpectation("cpu.max", text, kinds.same_cpu_max)]


def _cpu_weight(live: LiveValue, _want: Mapping[str, LiveValue], _d: DeviceNumber
                ) -> list[CgroupExpectation]:
    # idle: systemd writes cpu.idle=1 and leaves cpu.weight alone (the kernel then shows a
    # weight of 0 or 1 depending on its version); otherwise cpu.idle=0 and the weight.
    if live == kinds.WEIGHT_IDLE:
        return [CgroupExpectation("cpu.idle", "1")]
    return [CgroupExpectation("cpu.weight", kinds.weight_text(live))]


def _cpuset_partition(live: LiveValue, want: Mapping[str, LiveValue], _d: DeviceNumber
                      ) -> list[CgroupExpectation]:
    # The kernel shows a refused partition as "isolated invalid (<reason>)", which this
    # expectation does not match (slicectl.core.properties.partition). A valid partition
    # must also hold every planned CPU: since Linux 7.0 a sibling's conflict strips CPUs
    # from cpuset.cpus.effective instead of invalidating the partition.
    out = [CgroupExpectation("cpuset.cpus.partition", str(live), missing=partition.MEMBER)]
    cpus = want.get(ALLOWED_CPUS.dbus)
    if partition.is_partition(live) and isinstance(cpus, frozenset) and cpus:
        out.append(CgroupExpectation("cpuset.cpus.effective", kinds.cpuset_text(cpus),
                                     kinds.same_cpus))
    return out


def _per_device(file: str, key: str) -> Check:
    """io.weight/io.max: a line per device ("8:0 200", "8:0 rbps=5000000"), for devices the
    host has (a missing one systemd skips with a warning; lint reports it)."""
    def check(live: LiveValue, _want: Mapping[str, LiveValue], devices: DeviceNumber
              ) -> list[CgroupExpectation]:
        out = []
        for path, value in live if isinstance(live, tuple) else ():
            dev = devices(path)
            if dev is None or value == UINT64_MAX:
                continue  # unknown device, or no limit (io.max then has no line for it)
            entry = f"{key}={value}" if key else str(value)
            out.append(CgroupExpectation(file, f"{dev} {entry}", kinds.has_entries))
        return out

    return check


ALLOWED_CPUS = Prop(name="AllowedCPUs", dbus="AllowedCPUs", kind=kinds.CpuSet(), since=244,
                    check=_file("cpuset.cpus", kinds.cpuset_text, kinds.same_cpus))
ALLOWED_MEMORY_NODES = Prop(name="AllowedMemoryNodes", dbus="AllowedMemoryNodes",
                            kind=kinds.CpuSet(), since=244,
                            check=_file("cpuset.mems", kinds.cpuset_text, kinds.same_cpus))


def _share_needs(value: Any) -> int:
    """A share of the task limit needs the release that parses its spelling in TasksMax= and
    takes TasksMaxScale over D-Bus (TaskShare.needs)."""
    return value.needs() if isinstance(value, TaskShare) else 0


def _idle_needs_252(value: Any) -> int:
    return 252 if value == kinds.WEIGHT_IDLE else 0


def _memory(name: str, file: str, since: int, *, scale_since: int, protection: bool = False,
            unset_text: str = "(unset)") -> Prop:
    """A memory property. It takes a share of RAM ("50%") where systemd does: in unit files
    with the property itself (a spelling may need a later release: RamShare.needs), over
    D-Bus as its *Scale twin from `scale_since` (MemoryLow/High/MaxScale came with percents
    in 231, MemoryMinScale with MemoryMin in 240; MemorySwapMaxScale is in systemd's sources
    before 240 and MemoryZSwapMaxScale beside MemoryZSwapMax)."""
    def needs(value: Any) -> int:
        return max(value.needs(), scale_since) if isinstance(value, RamShare) else 0

    def check(live: LiveValue, _want: Mapping[str, LiveValue], _devices: DeviceNumber
              ) -> list[CgroupExpectation]:
        return [kinds.memory_file(file, live)]

    return Prop(name=name, dbus=name,
                kind=kinds.Bytes(protection=protection, unset_text=unset_text,
                                 scale_since=scale_since), since=since, check=check,
                since_value=needs)


def _io_limit(name: str, key: str, unit: str) -> Prop:
    return Prop(name=name, dbus=name, kind=kinds.Devices(unit), since=230,
                check=_per_device("io.max", key))


# ManagedOOM*= are read by systemd-oomd, which runs only for services, scopes and slices.
_OOMD_TYPES = ("service", "scope", "slice")


# --- the table ----------------------------------------------------------------------------


@frozen
class Setting:
    """One key of tenants.yaml: how to parse it, where it may appear, the systemd property it
    becomes, and its documentation (README's reference tables are made from these rows)."""

    key: str
    parse: Callable[[Any], Any]
    prop: Prop | None
    doc: str
    default_doc: str = "unset"
    default: Any = None
    role: Role = Role.RESOURCE
    scopes: Scope = Scope.TENANT | Scope.PROFILE
    editable: bool = False  # offered by the TUI's edit form
    hint: str = ""  # the form's placeholder: an example value
    # In `confine:` a key may parse and read differently (cpus: a cpulist only).
    confine_parse: Callable[[Any], Any] | None = None
    confine_doc: str = ""
    confine_default_doc: str = ""

    def in_confine(self) -> Setting:
        """This row as `confine:` reads it."""
        from dataclasses import replace

        return replace(self, parse=self.confine_parse or self.parse,
                       doc=self.confine_doc or self.doc,
                       default_doc=self.confine_default_doc or self.default_doc)


_TPC = Scope.TENANT | Scope.PROFILE | Scope.CONFINE

SETTINGS: tuple[Setting, ...] = (
    Setting(
        key="description",
        parse=parse_description,
        prop=None,
        doc="one line shown by systemctl",
        default_doc="tenant NAME",
        role=Role.TEXT,
        scopes=Scope.TENANT,
    ),
    Setting(
        key="cpus",
        parse=parse_cpus,
        prop=ALLOWED_CPUS,
        doc="CPU count (placed by slicectl) or explicit cpulist \"0-3,16-19\"",
        default_doc="shared pool",
        role=Role.PLACEMENT,
        scopes=_TPC,
        editable=True,
        hint="count or cpulist 0-3,8",
        confine_parse=parse_cpulist_only,
        confine_doc="cpulist the unit may run on",
        confine_default_doc="housekeeping CPUs for the three housekeeping units",
    ),
    Setting(
        key="numa",
        parse=parse_numa,
        prop=ALLOWED_MEMORY_NODES,
        doc="local: one node, memory bound to it (never split); spread: across nodes; "
            "any: unbound, may span nodes",
        default_doc="local",
        default=Numa.LOCAL,
        role=Role.PLACEMENT,
        editable=True,
        hint="local, spread or any",
    ),
    Setting(
        key="nodes",
        parse=parse_nodes,
        prop=ALLOWED_MEMORY_NODES,
        doc="explicit NUMA node(s) for CPUs and memory",
        default_doc="chosen by slicectl",
        role=Role.PLACEMENT,
        editable=True,
        hint="node ids, e.g. 1 or 0,1",
    ),
    Setting(
        key="exclusive",
        parse=parse_bool,
        prop=None,
        doc="no other tenant shares these CPUs (false: may overlap the shared pool)",
        default_doc="true",
        default=True,
        role=Role.PLACEMENT,
        editable=True,
        hint="true or false",
    ),
    Setting(
        key="cpus_min",
        parse=parse_int_range(1, MAX_CPUS),
        prop=None,
        doc="elastic: the balancer may take whole cores away down to this count (needs a "
            "count in cpus)",
        default_doc="cpus",
        role=Role.BALANCE,
        scopes=Scope.TENANT,
    ),
    Setting(
        key="cpus_max",
        parse=parse_int_range(1, MAX_CPUS),
        prop=None,
        doc="elastic: the balancer may give whole cores up to this count (needs a count in "
            "cpus)",
        default_doc="cpus",
        role=Role.BALANCE,
        scopes=Scope.TENANT,
    ),
    Setting(
        key="cpu_weight",
        parse=parse_weight(allow_idle=True),
        prop=Prop(name="CPUWeight", dbus="CPUWeight", kind=kinds.Weight(), since=232,
                  check=_cpu_weight, since_value=_idle_needs_252),
        doc="relative CPU share among siblings, 1..10000, or idle (runs only when nothing "
            "else wants the CPU)",
        default_doc="unset (100)",
        scopes=_TPC,
        editable=True,
        hint="1..10000 or idle",
        confine_doc="relative CPU share, 1..10000, or idle",
        confine_default_doc="unset",
    ),
    Setting(
        key="startup_cpu_weight",
        parse=parse_weight(allow_idle=True),
        prop=Prop(name="StartupCPUWeight", dbus="StartupCPUWeight", kind=kinds.Weight(), since=232,
                  since_value=_idle_needs_252),
        doc="cpu_weight while the host boots or shuts down (startup storms)",
        scopes=_TPC,
    ),
    Setting(
        key="cpu_quota",
        parse=parse_percent,
        prop=Prop(name="CPUQuota", dbus="CPUQuotaPerSecUSec", kind=kinds.Quota(), since=213,
                  check=_cpu_max),
        doc="hard cap in percent of one CPU, e.g. 600%",
        scopes=_TPC,
        editable=True,
        hint="e.g. 600%",
        confine_doc="hard cap, percent of one CPU",
    ),
    Setting(
        key="cpu_quota_period",
        parse=parse_quota_period,
        # Its cgroup file is CPUQuota's cpu.max, checked there with this period.
        prop=Prop(name="CPUQuotaPeriodSec", dbus="CPUQuotaPeriodUSec", kind=kinds.Duration(),
                  since=242),
        doc="period for cpu_quota, e.g. 100ms (keep >= 30ms, Togashi et al.)",
        default_doc="unset (100ms)",
    ),
    Setting(
        key="memory_min",
        parse=memory_parser(0),
        prop=_memory(name="MemoryMin", file="memory.min", since=240, scale_since=240,
                     protection=True),
        doc="hard protection: never reclaimed",
        editable=True,
        hint="e.g. 0 or 10%",
    ),
    Setting(
        key="memory_low",
        parse=memory_parser(0),
        prop=_memory(name="MemoryLow", file="memory.low", since=231, scale_since=231,
                     protection=True),
        doc="best-effort protection under pressure (a reservation, LinkedIn, 2016)",
        editable=True,
        hint="e.g. 16G or 25%",
    ),
    Setting(
        key="memory_high",
        parse=memory_parser(1),
        prop=_memory(name="MemoryHigh", file="memory.high", since=231, scale_since=231),
        doc="throttling threshold (reclaim starts here)",
        scopes=_TPC,
        editable=True,
        hint="e.g. 22G or 45%",
        confine_doc="throttling threshold",
    ),
    Setting(
        key="memory_max",
        parse=memory_parser(1),
        prop=_memory(name="MemoryMax", file="memory.max", since=231, scale_since=231,
                     unset_text="infinity"),
        doc="hard limit: K/M/G/T (base 1024), a share of the host's RAM (50%, 12.5%), or "
            "infinity",
        scopes=_TPC,
        editable=True,
        hint="e.g. 24G, 50% or infinity",
        confine_doc="hard limit",
    ),
    Setting(
        key="memory_swap_max",
        parse=memory_parser(0),
        prop=_memory(name="MemorySwapMax", file="memory.swap.max", since=232, scale_since=240),
        doc="swap limit; 0 keeps the tenant out of swap",
        scopes=_TPC,
        confine_doc="swap limit",
    ),
    Setting(
        key="memory_zswap_max",
        parse=memory_parser(0),
        prop=_memory(name="MemoryZSwapMax", file="memory.zswap.max", since=253, scale_since=253),
        doc="limit of compressed swap in RAM (zswap); 0 keeps the tenant out of it",
        scopes=_TPC,
    ),
    Setting(
        key="memory_zswap_writeback",
        parse=parse_bool,
        prop=Prop(name="MemoryZSwapWriteback", dbus="MemoryZSwapWriteback",
                  kind=kinds.Bool(default=True), since=256,
                  check=_file("memory.zswap.writeback", kinds.flag_text, missing="1"),
                  kernel=(6, 8)),
        doc="false: pages zswap would write back to swap stay compressed in memory",
        default_doc="unset (true)",
        scopes=_TPC,
        editable=True,
        hint="e.g. false (unset: true)",
    ),
    Setting(
        key="tasks_max",
        parse=parse_tasks_max,
        prop=Prop(name="TasksMax", dbus="TasksMax", kind=kinds.Tasks(scale_since=TASK_SHARE_SINCE),
                  since=227, check=lambda live, _want, _devices: [kinds.tasks_file(live)],
                  since_value=_share_needs),
        doc="most processes and threads (stops fork bombs): a number, a share of the kernel's "
            "task limit (50%, 12.5%), or infinity",
        scopes=_TPC,
        editable=True,
        hint="e.g. 4096 or 10%",
    ),
    Setting(
        key="io_weight",
        parse=parse_int_range(1, 10000),
        prop=Prop(name="IOWeight", dbus="IOWeight", kind=kinds.Number(), since=230,
                  check=_file("io.weight", lambda live: f"default {kinds.weight_text(live)}",
                              kinds.first_line)),
        doc="relative IO share among siblings, 1..10000",
        default_doc="unset (100)",
        scopes=_TPC,
    ),
    Setting(
        key="io_device_weight",
        parse=parse_devices(parse_int_range(1, 10000)),
        prop=Prop(name="IODeviceWeight", dbus="IODeviceWeight", kind=kinds.Devices(), since=230,
                  check=_per_device("io.weight", "")),
        doc="IO weight per device: {/dev/sda: 200}",
        scopes=_TPC,
    ),
    Setting(
        key="io_read_bandwidth_max",
        parse=parse_devices(parse_rate),
        prop=_io_limit(name="IOReadBandwidthMax", key="rbps", unit=" B/s"),
        doc="read bytes/s per device: {/dev/sda: 50M} (K/M/G base 1000)",
        scopes=_TPC,
    ),
    Setting(
        key="io_write_bandwidth_max",
        parse=parse_devices(parse_rate),
        prop=_io_limit(name="IOWriteBandwidthMax", key="wbps", unit=" B/s"),
        doc="write bytes/s per device: {/dev/sda: 20M} (K/M/G base 1000)",
        scopes=_TPC,
    ),
    Setting(
        key="io_read_iops_max",
        parse=parse_devices(parse_rate),
        prop=_io_limit(name="IOReadIOPSMax", key="riops", unit=" IOPS"),
        doc="read operations/s per device: {/dev/sda: 1000}",
        scopes=_TPC,
    ),
    Setting(
        key="io_write_iops_max",
        parse=parse_devices(parse_rate),
        prop=_io_limit(name="IOWriteIOPSMax", key="wiops", unit=" IOPS"),
        doc="write operations/s per device: {/dev/sda: 500}",
        scopes=_TPC,
    ),
    Setting(
        key="managed_oom_memory_pressure",
        parse=parse_choice("auto", "kill"),
        prop=Prop(name="ManagedOOMMemoryPressure", dbus="ManagedOOMMemoryPressure",
                  kind=kinds.Choice("auto", "kill"), since=247, types=_OOMD_TYPES),
        doc="kill: systemd-oomd kills the tenant's processes under sustained memory "
            "pressure",
        default_doc="unset (auto)",
        scopes=_TPC,
    ),
    Setting(
        key="managed_oom_memory_pressure_limit",
        parse=parse_permyriad,
        prop=Prop(name="ManagedOOMMemoryPressureLimit", dbus="ManagedOOMMemoryPressureLimit",
                  kind=kinds.Permyriad(), since=248, types=_OOMD_TYPES),
        doc="memory pressure (PSI full avg10) at which systemd-oomd kills, e.g. 60%",
        default_doc="unset (oomd's 60%)",
        scopes=_TPC,
    ),
    Setting(
        key="startup_allowed_cpus",
        parse=parse_cpulist_only,
        prop=Prop(name="StartupAllowedCPUs", dbus="StartupAllowedCPUs", kind=kinds.CpuSet(),
                  since=250),
        doc="cpulist while the host boots or shuts down",
        scopes=_TPC,
    ),
    Setting(
        key="cpuset_partition",
        parse=parse_choice(*partition.PARTITION_VALUES),
        prop=Prop(name="CPUSetPartition", dbus="CPUSetPartition",
                  kind=kinds.Choice(*partition.PARTITION_VALUES), since=261,
                  check=_cpuset_partition, kernel=partition.REMOTE_PARTITION_KERNEL,
                  kernel_for=partition.is_partition),
        doc="isolated: the tenant's CPUs become a cpuset partition of their own, out of the "
            "scheduler's load balancing and the unbound workqueues (latency tenants); root: a "
            "partition with load balancing inside it; needs cpus and exclusive",
        default_doc="unset (member)",
    ),
    Setting(
        key="services",
        parse=parse_unit_list(SLICE_MEMBER_TYPES),
        prop=None,
        doc="units moved into the tenant's slice by a drop-in",
        default_doc="[]",
        default=(),
        role=Role.MEMBERS,
        scopes=Scope.TENANT,
    ),
)

BY_KEY: Final[Mapping[str, Setting]] = {s.key: s for s in SETTINGS}
TENANT_SETTINGS: tuple[Setting, ...] = tuple(s for s in SETTINGS if Scope.TENANT in s.scopes)
CONFINE_SETTINGS: tuple[Setting, ...] = tuple(s.in_confine() for s in SETTINGS
                                              if Scope.CONFINE in s.scopes)
# Keys a profile may override (services stay fixed: moving units between slices needs restarts).
PROFILE_KEYS: tuple[str, ...] = tuple(s.key for s in SETTINGS if Scope.PROFILE in s.scopes)
RESOURCE_KEYS: tuple[str, ...] = tuple(s.key for s in SETTINGS if s.role is Role.RESOURCE)
EDITABLE_KEYS: tuple[str, ...] = tuple(s.key for s in SETTINGS if s.editable)
# Every property slicectl sets, in the order generated files list them (the table's order).
PROPERTIES: Final[tuple[Prop, ...]] = tuple(
    dict.fromkeys(s.prop for s in SETTINGS if s.prop is not None))
PROP_BY_NAME: Final[Mapping[str, Prop]] = {p.name: p for p in PROPERTIES}
PROP_BY_DBUS: Final[Mapping[str, Prop]] = {p.dbus: p for p in PROPERTIES}

# The balancer's policy (top-level `balance:`; docs/balance.md). Times are in µs, shares in
# percent of the CPUs a tenant holds (or of time stalled, for cpu.pressure).
BALANCE_SETTINGS: tuple[Setting, ...] = (
    Setting(
        key="interval",
        parse=parse_balance_time(MIN_BALANCE_WINDOW_US),
        prop=None,
        doc="how often the balancer decides (at most one move per tenant each time)",
        default_doc="10s",
        default=10_000_000,
        role=Role.BALANCE,
        scopes=Scope.BALANCE,
    ),
    Setting(
        key="cooldown",
        parse=parse_balance_time(0),
        prop=None,
        doc="after a move, how long the tenants it moved a core between are left alone",
        default_doc="60s",
        default=60_000_000,
        role=Role.BALANCE,
        scopes=Scope.BALANCE,
    ),
    Setting(
        key="window",
        parse=parse_balance_time(MIN_BALANCE_WINDOW_US),
        prop=None,
        doc="how long a condition must hold before a core moves (at least interval and 30ms, "
            "Togashi et al.)",
        default_doc="30s",
        default=30_000_000,
        role=Role.BALANCE,
        scopes=Scope.BALANCE,
    ),
    Setting(
        key="grow_above",
        parse=parse_share(1, 100),
        prop=None,
        doc="a tenant is starved while its CPU use of its CPUs is at least this",
        default_doc="90%",
        default=90,
        role=Role.BALANCE,
        scopes=Scope.BALANCE,
    ),
    Setting(
        key="pressure_above",
        parse=parse_share(1, 100),
        prop=None,
        doc="… or while its cpu.pressure `some avg10` is at least this",
        default_doc="20%",
        default=20,
        role=Role.BALANCE,
        scopes=Scope.BALANCE,
    ),
    Setting(
        key="shrink_below",
        parse=parse_share(0, 99),
        prop=None,
        doc="a tenant is idle while its CPU use of its CPUs stays below this (and it is not "
            "under pressure); below grow_above",
        default_doc="40%",
        default=40,
        role=Role.BALANCE,
        scopes=Scope.BALANCE,
    ),
)
BALANCE_KEYS: Final[Mapping[str, Setting]] = {s.key: s for s in BALANCE_SETTINGS}

TOP_KEYS = ("version", "slice", "housekeeping", "confine", "tenants", "profiles", "schedule",
            "balance", "target")
HOUSEKEEPING_KEYS = ("cpus",)
# target: the paths on the hosts the units are for (the schedule's timers run them).
TARGET_KEYS = ("slicectl", "tenants")


def reference_rows(settings: tuple[Setting, ...]
                   ) -> list[tuple[str, str, str | None, int | None, str]]:
    """(key, default, systemd property, since systemd, meaning) of each setting: the rows of the
    README's reference tables and of the slicectl-tenants(5) man page."""
    rows: list[tuple[str, str, str | None, int | None, str]] = []
    for s in settings:
        prop = s.prop.name if s.prop is not None else (
            "Slice" if s.role is Role.MEMBERS else "Description" if s.role is Role.TEXT
            else None)
        rows.append((s.key, s.default_doc, prop, s.prop.since if s.prop is not None else None,
                     s.doc))
    return rows


def reference_table(settings: tuple[Setting, ...]) -> str:
    """The README's reference table for `settings` (tests/test_readme.py compares them)."""
    lines = ["| key | default | systemd property | since systemd | meaning |",
             "|---|---|---|---|---|"]
    for key, default, prop, since, doc in reference_rows(settings):
        lines.append(f"| `{key}` | {default} | {f'`{prop}`' if prop else '—'} | "
                     f"{since or '—'} | {doc} |")
    return "\n".join(lines)


def balance_reference_table() -> str:
    """The README's table of the `balance:` section (tests/test_readme.py compares them)."""
    lines = ["| key | default | meaning |", "|---|---|---|"]
    lines += [f"| `{s.key}` | {s.default_doc} | {s.doc} |" for s in BALANCE_SETTINGS]
    return "\n".join(lines)


def dbus_reference_table() -> str:
    """docs/dbus.md's table of the properties slicectl sets (tests/test_readme.py compares)."""
    lines = ["| unit-file property | D-Bus property | signature | value kind | since systemd "
             "| needs Linux | a share (50%) over D-Bus |", "|---|---|---|---|---|---|---|"]
    for p in PROPERTIES:
        kernel = "{}.{}".format(*p.kernel) if p.kernel else "—"
        if p.kernel and p.kernel_for is not None:
            kernel += " ({})".format(", ".join(
                c for c in getattr(p.kind, "choices", ()) if p.kernel_for(c)))
        since = getattr(p.kind, "scale_since", 0)
        share = f"`{p.dbus}Scale` `u` ({since})" if since else "—"
        lines.append(f"| `{p.name}` | `{p.dbus}` | `{p.signature}` | "
                     f"{type(p.kind).__name__} | {p.since} | {kernel} | {share} |")
    return "\n".join(lines)
