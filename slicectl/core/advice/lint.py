"""The lint rules: tenants.yaml against what published studies found about cgroups (docs/lint.md).

Pure: `lint(config, topology)` checks the configuration, `root_tasks(cgroups)` the live
processes that `slicectl.host.cgroup.readers.crowded_cgroups` found (`lint --live`); `slicectl lint`
itself lives in the CLI (slicectl/cli/advise.py). Every finding names its rule, a fix and its source
(one of the studies in docs/background.md, or a systemd man page).

Why this module runs past 400 lines: it is the rule table; each rule is a short function with
its source and fix, and splitting them across modules would scatter the one list docs/lint.md
mirrors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from enum import StrEnum
from typing import Any

from slicectl.core.config.config import Config, Confinement, Tenant
from slicectl.core.config.contradictions import contradictions, limited
from slicectl.core.config.values import (
    MemorySize,
    RamShare,
    format_duration_us,
    resolved,
)
from slicectl.core.cpulist import format_cpulist
from slicectl.core.frozen import frozen
from slicectl.core.human import exact_size, human_memory
from slicectl.core.placement.layout import Layout
from slicectl.core.placement.placement import place
from slicectl.core.placement.protection import node_overcommit, overcommit
from slicectl.core.placement.topology import Topology
from slicectl.core.properties.kinds import WEIGHT_IDLE
from slicectl.core.properties.partition import ISOLATED
from slicectl.core.properties.properties import Numa
from slicectl.core.shares.contention import (
    Competition,
    CpuShares,
    Guarantee,
    predict_shares,
    weight_on_cpu_scale,
)
from slicectl.core.shares.shares import Bound

# The studies the rules come from, cited so a reader can find them (docs/background.md).
SOURCE_NUMA = ('Red Hat reference architecture, "Resource Management using Control Groups '
               'in Red Hat Enterprise Linux 6", 2010')
SOURCE_MEMORY = ('Tran and Weng, "Don\'t Let Linux Control Groups Run Uncontrolled", LinkedIn '
                 'Engineering blog, 2016-08-18')
SOURCE_CPU_ACCURACY = ('Togashi, Katayama, Deguchi and Mouri, "Linux の資源管理機構 Control '
                       'Groups の性能調査", Ritsumeikan University / Mitsubishi Electric')
SOURCE_QUOTA = ('Babulal, "CFS Bandwidth Control - Test results of cgroups tasks pinned vs '
                'unpinned", linux-kernel mailing list, 2011-06-07')
SOURCE_HIERARCHY = "blog post verifying cpu.shares in a hierarchy on CentOS 6.6 and 7.1"
MAN_RESOURCE_CONTROL = "systemd.resource-control(5)"
# Linux 6.6 added the mount option; the rule reads it from the mount table, whatever mounted it.
SOURCE_HUGETLB = ('Linux, Documentation/admin-guide/cgroup-v2.rst, mount option '
                  '"memory_hugetlb_accounting" (Linux 6.6)')
SOURCE_ISOLATION = ('Red Hat, "Optimizing RHEL for Real Time for low latency operation", '
                    '"Isolating CPUs using tuned-profiles-real-time" (choosing CPUs to isolate '
                    'by the CPU topology)')

# Togashi et al.: the cpu controller is only accurate over windows of about 30 ms or more.
MIN_QUOTA_PERIOD_US = 30_000
# Units that run cron jobs on common distributions (LinkedIn, 2016, rec. 3: confine cron tightly).
CRON_UNITS = ("cron.service", "crond.service", "cronie.service", "anacron.service")
# share-below-cpus: a tenant guaranteed less than this fraction of its CPUs' worth of time
# when everything is busy (a pool shared by four equal tenants is not flagged; weight 100
# beside 400 is).
SHARE_FLOOR = 0.25


class Level(StrEnum):
    """How serious a finding is: errors fail `lint`, warnings only with --strict."""

    ERROR = "error"
    WARNING = "warning"


@frozen
class Rule:
    """One lint rule: its name, level, source and the usual fix."""

    name: str
    level: Level
    source: str
    fix: str


RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("quota-without-cpus", Level.WARNING, SOURCE_QUOTA,
         "pin the tenant with `cpus:` (a count or a cpulist) and prefer cpu_weight over a "
         "bare quota"),
    Rule("quota-exceeds-cpus", Level.ERROR, MAN_RESOURCE_CONTROL,
         "lower cpu_quota to at most 100% per CPU, or give the tenant more CPUs"),
    Rule("short-quota-period", Level.WARNING, SOURCE_CPU_ACCURACY,
         "set cpu_quota_period to 30ms or more (the default 100ms is fine)"),
    Rule("memory-not-reserved", Level.WARNING, SOURCE_MEMORY,
         "add memory_low (the sustained footprint, see `slicectl recommend`) so the memory "
         "is protected under pressure"),
    Rule("high-above-max", Level.ERROR, MAN_RESOURCE_CONTROL,
         "set memory_high below memory_max (e.g. halfway between footprint and max)"),
    Rule("protection-overcommit", Level.ERROR, MAN_RESOURCE_CONTROL,
         "lower memory_low/memory_min so all protections fit in RAM minus housekeeping"),
    Rule("limit-exceeds-memory", Level.WARNING, MAN_RESOURCE_CONTROL,
         "lower memory_max (and memory_high) to what the tenant's node(s) hold, or bind it to "
         "more nodes"),
    Rule("unconfined-housekeeping", Level.WARNING, SOURCE_MEMORY,
         "add e.g. `confine: {system.slice: {memory_high: 2G, memory_max: 3G}, "
         "cron.service: {memory_max: 512M, cpu_quota: 50%}}`"),
    Rule("cross-node-cpus", Level.WARNING, SOURCE_NUMA,
         "ask for at most one node's CPUs, drop conflicting `nodes:`, or set numa: spread "
         "if spanning nodes is intended"),
    Rule("swap-unbounded", Level.WARNING, SOURCE_MEMORY,
         "set memory_swap_max: 0 (or a small bound) for the tenant"),
    Rule("share-below-cpus", Level.WARNING, SOURCE_HIERARCHY,
         "raise the tenant's cpu_weight or lower its competitors' (e.g. `confine: "
         "{system.slice: {cpu_weight: 20}}`), keep housekeeping off its CPUs "
         "(housekeeping.cpus), or give it CPUs of its own"),
    Rule("root-tasks", Level.WARNING, SOURCE_HIERARCHY,
         "move these processes into their own unit or sub-slice (e.g. `systemd-run "
         "--scope`, or a service with Slice=)"),
    Rule("idle-with-quota", Level.WARNING, SOURCE_QUOTA,
         "drop cpu_quota: an idle tenant already yields to everyone else, and the quota "
         "only keeps it off CPUs nobody uses"),
    Rule("io-device-missing", Level.WARNING, MAN_RESOURCE_CONTROL,
         "name a block device this host has (or a file on its file system), e.g. /dev/sda "
         "or /var/lib/db; `lsblk` lists them"),
    Rule("oomd-not-running", Level.WARNING, MAN_RESOURCE_CONTROL,
         "start systemd-oomd (`systemctl enable --now systemd-oomd`), or drop "
         "managed_oom_memory_pressure"),
    Rule("hugetlb-in-memory-limit", Level.WARNING, SOURCE_HUGETLB,
         "size memory_max/memory_high for the tenant's huge pages too (what it maps of "
         "HugePages_Total, `grep Huge /proc/meminfo`), or leave them out of memory "
         "accounting (cgroup2 mounted without memory_hugetlb_accounting)"),
    Rule("isolated-shares-core", Level.WARNING, SOURCE_ISOLATION,
         "give the tenant whole cores: an even count on a host with two threads per core "
         "(placement keeps SMT siblings together), or a cpulist holding every thread of its "
         "cores"),
)}

# The per-device keys (IO weights and limits): systemd skips a device it cannot find.
DEVICE_KEYS = ("io_device_weight", "io_read_bandwidth_max", "io_write_bandwidth_max",
               "io_read_iops_max", "io_write_iops_max")


@frozen
class Finding:
    """One problem: where, which rule, what is wrong, how to fix it, and why (the source)."""

    file: str
    line: int
    rule: str
    level: Level
    message: str
    fix: str
    source: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.rule}: {self.message}"

    def to_json(self) -> dict[str, object]:
        """The finding as `lint --json` prints it (docs/lint.md)."""
        return {"file": self.file, "line": self.line, "rule": self.rule,
                "level": str(self.level), "message": self.message, "fix": self.fix,
                "source": self.source}


def _finding(rule: str, file: str, line: int, message: str, fix: str = "") -> Finding:
    r = RULES[rule]
    return Finding(file, line, rule, r.level, message, fix or r.fix, r.source)


def _size(value: MemorySize) -> str:
    return human_memory(value)


# --- rules on the configuration (pure) ----------------------------------------------------


def _cpu_count(t: Tenant, layout: Layout | None) -> int | None:
    if layout is not None:
        return len(layout.of(t.name).cpus)
    if isinstance(t.cpus, int):
        return t.cpus
    if isinstance(t.cpus, frozenset):
        return len(t.cpus)
    return None


def _cpu_rules(c: Config, t: Tenant, layout: Layout | None) -> Iterator[Finding]:
    if t.cpu_quota is not None and t.cpus is None:
        # Babulal, LKML 2011: unpinned quotas left 30-40% of CPU time idle, shares uneven.
        yield _finding("quota-without-cpus", c.path, t.line_of("cpu_quota"),
                       f"tenant {t.name} has cpu_quota {t.cpu_quota}% on the shared pool "
                       "(no `cpus` of its own): a quota on CPUs shared with others leaves "
                       "CPUs idle and shares them unevenly")
    if t.cpu_weight == 0 and t.cpu_quota is not None:  # 0: idle
        # Babulal, LKML 2011: a quota leaves CPUs idle; an idle tenant is meant to use them.
        yield _finding("idle-with-quota", c.path, t.line_of("cpu_quota"),
                       f"tenant {t.name} has cpu_weight idle and cpu_quota {t.cpu_quota}%: "
                       "the quota keeps it off CPUs that nobody else wants")
    if t.cpu_quota_period is not None and t.cpu_quota_period < MIN_QUOTA_PERIOD_US:
        yield _finding("short-quota-period", c.path, t.line_of("cpu_quota_period"),
                       f"tenant {t.name} has cpu_quota_period "
                       f"{format_duration_us(t.cpu_quota_period)}: the cpu controller is only "
                       "accurate over windows of about 30ms or more")


def _memory_rules(c: Config, t: Tenant, ram: int) -> Iterator[Finding]:
    if limited(t.memory_max) and not t.memory_low and not t.memory_min:
        assert t.memory_max is not None
        yield _finding("memory-not-reserved", c.path, t.line_of("memory_max"),
                       f"tenant {t.name} has memory_max {_size(t.memory_max)} but no "
                       "memory_low/memory_min: a limit is not a reservation, the memory "
                       "can be taken by others under pressure")
    if limited(t.memory_max) and (t.memory_swap_max is None or t.memory_swap_max != 0):
        assert t.memory_max is not None
        swap = ("unset (unlimited)" if t.memory_swap_max is None
                else _size(t.memory_swap_max))
        line = t.line_of("memory_swap_max" if t.memory_swap_max is not None else "memory_max")
        # LinkedIn, 2016, pitfall 4: under global pressure any cgroup is swapped, limit or not.
        yield _finding("swap-unbounded", c.path, line,
                       f"tenant {t.name} has memory_max {_size(t.memory_max)} but "
                       f"memory_swap_max is {swap}: it can be swapped out despite its limit")


def _contradictions(c: Config, layout: Layout | None, ram: int) -> Iterator[Finding]:
    """The settings that cannot take effect: validate's errors too, from one place
    (slicectl.core.config.contradictions), with the placed CPU counts when there is a layout."""
    def cpus_of(t: Tenant) -> int | None:
        return _cpu_count(t, layout)

    for x in contradictions(c, cpus_of, ram):
        yield _finding(x.rule, c.path, x.problem.line, x.problem.message, x.problem.hint)


def _memory_bound(conf: Confinement | None) -> bool:
    return conf is not None and (limited(conf.memory_max) or limited(conf.memory_high))


def _housekeeping_rules(c: Config) -> Iterator[Finding]:
    by_unit = {conf.unit: conf for conf in c.confine}
    fallback = min((conf.line for conf in c.confine), default=1) or 1
    system = by_unit.get("system.slice")
    if not _memory_bound(system):
        line = system.line if system is not None else fallback
        yield _finding("unconfined-housekeeping", c.path, line,
                       "system.slice has no memory_max/memory_high: system services draw from "
                       "the same RAM as the tenants and can steal their page cache or push "
                       "them into swap")
    crons = [by_unit[u] for u in CRON_UNITS if u in by_unit]
    if not any(_memory_bound(conf) for conf in crons):
        line = crons[0].line if crons else fallback
        yield _finding("unconfined-housekeeping", c.path, line,
                       "cron is not confined: cron jobs (OS utilities and application jobs) "
                       "can use unbounded anonymous memory and dirty page cache",
                       "add `cron.service: {memory_max: 512M, cpu_quota: 50%}` under confine: "
                       "(crond.service on RHEL)")


def overcommit_rule(c: Config, topo: Topology, layout: Layout | None = None
                    ) -> Iterator[Finding]:
    """protection-overcommit: also enforced by build_plan, so nothing is generated."""
    found = overcommit(c, topo)
    if found is not None:
        yield _finding("protection-overcommit", c.path, found.tenant.line_of(found.key),
                       found.message())
        return
    on_nodes = node_overcommit(c, topo, layout) if layout is not None else None
    if on_nodes is not None:
        yield _finding("protection-overcommit", c.path, on_nodes.tenant.line_of(on_nodes.key),
                       on_nodes.message(), on_nodes.fix)


def _of_ram(written: MemorySize, limit: int) -> str:
    """" (48G on this host)" after a share of RAM; nothing after a size."""
    return f" ({exact_size(limit)} on this host)" if isinstance(written, RamShare) else ""


def _nodes_text(nodes: tuple[int, ...]) -> str:
    return f"node {nodes[0]}" if len(nodes) == 1 else f"nodes {', '.join(map(str, nodes))}"


def _limit_rule(c: Config, topo: Topology, layout: Layout) -> Iterator[Finding]:
    """limit-exceeds-memory: a memory limit the tenant's memory can never reach, and what
    happens first: swap or the host's OOM killer (above RAM), an OOM kill on its nodes
    (memory bound with cpuset.mems), or memory from other nodes (memory unbound)."""
    ram = topo.total_memory
    if ram <= 0:
        return
    node_memory = {n.id: n.memory_bytes for n in topo.nodes}
    for t in c.tenants:
        key = "memory_max" if limited(t.memory_max) else "memory_high"
        written = t.resources.get(key)
        limit = resolved(written, ram)  # a share of RAM as systemd resolves it on this host
        if not isinstance(limit, int) or not limited(written):
            continue
        p = layout.of(t.name)
        line = t.line_of(key)
        if limit > ram:
            yield _finding("limit-exceeds-memory", c.path, line,
                           f"tenant {t.name} has {key} {_size(written)} but the host has "
                           f"{_size(ram)} of RAM: the limit is never reached, the tenant is "
                           "pushed into swap (or the kernel OOM-kills on the host) first")
            continue
        if p.memory_nodes:
            here = sum(topo.node(n).memory_bytes for n in
                       dict.fromkeys(topo.node(m).id for m in p.memory_nodes))
            if limit > here:
                yield _finding("limit-exceeds-memory", c.path, line,
                               f"tenant {t.name} has {key} {_size(written)}"
                               f"{_of_ram(written, limit)} but its memory is "
                               f"bound to {_nodes_text(p.memory_nodes)} ({_size(here)}): past "
                               f"{_size(here)} it swaps or the kernel OOM-kills it on "
                               f"{'that node' if len(p.memory_nodes) == 1 else 'those nodes'}, "
                               "before the limit")
            continue
        local = sum(node_memory.get(n, 0) for n in p.cpu_nodes)
        if p.cpu_nodes and 0 < local < limit:
            yield _finding("limit-exceeds-memory", c.path, line,
                           f"tenant {t.name} has {key} {_size(written)}"
                           f"{_of_ram(written, limit)} but its CPUs' "
                           f"{_nodes_text(p.cpu_nodes)} "
                           f"{'holds' if len(p.cpu_nodes) == 1 else 'hold'} {_size(local)}: "
                           "beyond that its "
                           "memory comes from other nodes (remote memory, slower)")


def _cross_node_rule(c: Config, topo: Topology, layout: Layout) -> Iterator[Finding]:
    for t in c.tenants:
        p = layout.of(t.name)
        if p.pool or t.numa is not Numa.LOCAL:
            continue  # the shared pool and numa: spread/any span nodes by design
        line = t.line_of("cpus")
        if len(p.cpu_nodes) > 1:
            yield _finding("cross-node-cpus", c.path, line,
                           f"tenant {t.name} has CPUs {format_cpulist(p.cpus)} on nodes "
                           f"{', '.join(map(str, p.cpu_nodes))}: threads and memory on "
                           "different nodes pay for remote access")
            continue
        local = {m for n in p.cpu_nodes for m in topo.memory_nodes_for(n)}
        if p.memory_nodes is not None and not set(p.memory_nodes) <= local:
            yield _finding("cross-node-cpus", c.path, t.line_of("nodes"),
                           f"tenant {t.name} runs on node(s) "
                           f"{', '.join(map(str, p.cpu_nodes))} but its memory is bound to "
                           f"node(s) {', '.join(map(str, p.memory_nodes))}: every access is "
                           "remote")


class _Rivals:
    """Every tenant's and competitor's guarantee, grouped by their CPUs and heaviest first
    in each group: who shares a tenant's CPUs is found set by set, not guarantee by
    guarantee (the thousands of tenants on the shared pool are one set)."""

    SHOWN = 4

    def __init__(self, shares: CpuShares) -> None:
        self.groups: dict[frozenset[int], list[tuple[int, str, int, Guarantee]]] = {}
        everyone = (*shares.tenants.items(), *((o.name, o) for o in shares.competitors))
        for i, (name, o) in enumerate(everyone):  # i: ties keep this order
            self.groups.setdefault(o.cpus, []).append((-o.weight, name, i, o))
        for group in self.groups.values():
            group.sort(key=lambda r: r[:3])

    def of(self, g: Guarantee, weights: bool = True) -> str:
        """Who shares the CPUs of `g` (one of the shares' guarantees), heaviest first:
        "batch (weight 400), system.slice (weight 100)"."""
        groups = [group for cpus, group in self.groups.items() if cpus & g.cpus]
        count = sum(map(len, groups)) - (1 if g.cpus else 0)  # all but g itself
        first = sorted((r for group in groups for r in group[:self.SHOWN + 1] if r[3] is not g),
                       key=lambda r: r[:3])[:self.SHOWN]
        shown = [f"{name} (weight {weight_on_cpu_scale(-w)})" if weights else name
                 for w, name, _, _ in first]
        more = f" and {count - self.SHOWN} more" if count > self.SHOWN else ""
        return ", ".join(shown) + more


def _share_rule(c: Config, topo: Topology, layout: Layout,
                competition: Competition | None) -> Iterator[Finding]:
    """share-below-cpus: the guarantee under full contention is far below the CPU count."""
    shares = predict_shares(c, layout, topo, competition)
    basis = ("competitors counted on this host" if shares.live else
             "standard competitors assumed: system.slice, user.slice, init.scope")
    rivals = _Rivals(shares)
    for t in c.tenants:
        g = shares.tenants[t.name]
        cpus = len(g.cpus)
        if g.bound not in (Bound.WEIGHT, Bound.THREADS) or g.cores >= SHARE_FLOOR * cpus:
            continue  # alone on its CPUs, or capped by its own quota: as configured
        if t.cpu_weight == WEIGHT_IDLE:
            continue  # asked to run only when nothing else wants the CPU
        head = (f"tenant {t.name} is guaranteed {g.cores:.2f} of its {cpus} CPU(s) "
                f"({100 * g.cores / cpus:.0f}%) when everything is busy ({basis})")
        if g.bound is Bound.THREADS:
            yield _finding(
                "share-below-cpus", c.path, t.line,
                f"{head}: it shares them with {rivals.of(g, weights=False)} and no "
                "cpu controller "
                "separates them (nothing sets cpu_weight or cpu_quota): every thread competes "
                "on its own", "set cpu_weight on the tenants (100 is the default weight) so "
                "systemd enables the cpu controller and the kernel shares CPU between groups, "
                "not threads; keep housekeeping off the tenants' CPUs (housekeeping.cpus)")
            continue
        yield _finding("share-below-cpus", c.path, t.line_of("cpu_weight"),
                       f"{head}: it shares them by weight with {rivals.of(g)}")


def _isolation_rule(c: Config, topo: Topology, layout: Layout) -> Iterator[Finding]:
    """isolated-shares-core: an isolated tenant's physical cores run other work on their other
    threads (SMT siblings share the core's execution units and caches, so its latency
    follows their load whatever the partition keeps off its own CPUs)."""
    by_id = {cpu.id: cpu for cpu in topo.cpus}
    owners = {cpu: p.tenant for p in layout.tenants if not p.pool for cpu in p.cpus}
    for t in c.tenants:
        if t.resources.get("cpuset_partition") != ISOLATED:
            continue
        mine = layout.of(t.name).cpus
        shared: list[str] = []
        for cpu in sorted({s for m in mine if m in by_id for s in by_id[m].siblings} - mine):
            if cpu not in by_id or not by_id[cpu].online:
                continue
            who = ("housekeeping" if cpu in layout.housekeeping
                   else f"tenant {owners[cpu]}" if cpu in owners
                   else "the shared pool" if cpu in layout.shared_pool else None)
            if who is not None:
                shared.append(f"CPU {cpu} ({who})")
        if shared:
            yield _finding("isolated-shares-core", c.path, t.line_of("cpuset_partition"),
                           f"tenant {t.name} is isolated but shares physical cores with "
                           f"{', '.join(shared)}: SMT siblings share a core's execution units "
                           "and caches, so their load reaches the tenant's CPUs")


def lint(config: Config, topology: Topology | None,
         competition: Competition | None = None) -> list[Finding]:
    """Every finding for `config`; rules that need a topology are skipped without one;
    `competition`: what competes for CPU on the host (default: the standard units)."""
    layout = place(config, topology) if topology is not None else None
    ram = topology.total_memory if topology is not None else 0
    findings: list[Finding] = []
    for t in config.tenants:
        findings += _cpu_rules(config, t, layout)
        findings += _memory_rules(config, t, ram)
    findings += _contradictions(config, layout, ram)
    findings += _housekeeping_rules(config)
    if topology is not None and layout is not None:
        findings += overcommit_rule(config, topology, layout)
        findings += _limit_rule(config, topology, layout)
        findings += _cross_node_rule(config, topology, layout)
        findings += _share_rule(config, topology, layout, competition)
        findings += _isolation_rule(config, topology, layout)
    return sorted(findings, key=lambda f: (f.file, f.line, f.rule))


# --- live rule: processes beside sub-trees ----------------------------------------------------


@frozen
class CrowdedCgroup:
    """The root cgroup or a slice with child cgroups and processes of its own (not kernel
    threads), as `slicectl.host.cgroup.readers.crowded_cgroups` reads it."""

    procs_file: str  # its cgroup.procs, where the finding points
    slice: str | None  # the slice's name; None for the root cgroup
    children: int
    processes: tuple[tuple[int, int, str], ...]  # (line in cgroup.procs, PID, name)


def root_tasks(cgroups: list[CrowdedCgroup]) -> list[Finding]:
    """root-tasks: one finding per cgroup with processes directly beside its sub-trees."""
    findings = []
    for cg in cgroups:
        if not cg.processes:
            continue
        where = "the root cgroup" if cg.slice is None else f"slice {cg.slice}"
        shown = ", ".join(f"{pid} ({name})" for _, pid, name in cg.processes[:5])
        count = len(cg.processes)
        more = f" and {count - 5} more" if count > 5 else ""
        # cpu.shares experiments: each process directly in a group competes as one sibling
        # with whole sub-trees (1 root task + a `test` group got 50/50).
        findings.append(_finding(
            "root-tasks", cg.procs_file, cg.processes[0][0],
            f"{count} process(es) directly in {where}, beside {cg.children} child "
            f"cgroup(s): {shown}{more}; each competes with whole sub-trees for CPU"))
    return sorted(findings, key=lambda f: (f.file, f.line))


# --- live rules: what the host has --------------------------------------------------------


def _units(c: Config) -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, int], int]]:
    """(key path prefix, resources, lines, line) of every tenant and confined unit."""
    for t in c.tenants:
        yield f"tenant {t.name}", t.resources, t.lines, t.line
    for conf in c.confine:
        yield f"unit {conf.unit}", conf.resources, conf.lines, conf.line


def missing_devices(c: Config, present: Callable[[str], bool]) -> list[Finding]:
    """io-device-missing: IO settings for a path that is no block device here (systemd logs
    a warning and skips it: the limit silently does not apply)."""
    findings = []
    for what, resources, lines, line in _units(c):
        for key in DEVICE_KEYS:
            for path, _ in resources.get(key, ()):
                if not present(path):
                    findings.append(_finding(
                        "io-device-missing", c.path, lines.get(key, line),
                        f"{what} has {key} for {path}, which is not a block device (or a "
                        "file on one) on this host: systemd skips it"))
    return findings


def oomd_rule(c: Config, oomd_running: bool) -> list[Finding]:
    """oomd-not-running: ManagedOOM kill asked for, but no systemd-oomd to act on it."""
    if oomd_running:
        return []
    return [_finding("oomd-not-running", c.path, lines.get("managed_oom_memory_pressure", line),
                     f"{what} has managed_oom_memory_pressure: kill, but systemd-oomd is not "
                     "running: nothing will kill it under memory pressure")
            for what, resources, lines, line in _units(c)
            if resources.get("managed_oom_memory_pressure") == "kill"]


def hugetlb_rule(c: Config, hugetlb_accounted: bool) -> list[Finding]:
    """hugetlb-in-memory-limit: the host's cgroup2 counts huge pages in memory.current
    (`memory_hugetlb_accounting`), so a tenant's memory_max/memory_high now covers the huge
    pages its processes fault in (charged at use, not when the pool reserves them), which
    reclaim cannot free: a limit sized for its other memory squeezes that memory instead,
    and a huge page that cannot be charged is a SIGBUS (cgroup-v2.rst)."""
    if not hugetlb_accounted:
        return []
    findings = []
    for t in c.tenants:
        key = "memory_max" if limited(t.memory_max) else "memory_high"
        written = t.resources.get(key)
        if not limited(written):
            continue
        findings.append(_finding(
            "hugetlb-in-memory-limit", c.path, t.line_of(key),
            f"tenant {t.name} has {key} {_size(written)} and this host's cgroup2 is mounted "
            "with memory_hugetlb_accounting: the huge pages it uses (reserved as HugePages) "
            "count against that limit once it touches them, and cannot be reclaimed"))
    return findings
