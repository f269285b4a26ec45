"""cpuset partitions on apply: the `cpuset.cpus.exclusive` files systemd has no setting for.

A tenant with `cpuset_partition: root|isolated` gets CPUSetPartition= from its files like any
property, and systemd writes `cpuset.cpus.partition`. But its slice sits below `tenants.slice`,
a member, which makes it what the kernel calls a remote partition: valid only once every
cgroup from the top down to it lists the tenant's CPUs in `cpuset.cpus.exclusive`
(Documentation/admin-guide/cgroup-v2.rst). systemd does not write that file (systemd#42013
added CPUSetPartition= alone; on systemd 262 the kernel then answers "isolated invalid
(Invalid cpu list in cpuset.cpus.exclusive)" and systemd only logs a warning), so apply
writes it itself, after systemd has applied the units:

- what each cgroup needs is computed from the plan (slicectl.core.properties.partition):
  every ancestor below the root holds the CPUs of every partition at or below it; slicectl's
  own slices that need none are emptied;
- each file's bytes are recorded by the transaction before its first write, and rollback
  writes them back and reads them again to prove it (slicectl.apply.transaction);
- a partition the kernel refused before its parents were ready is asked for again through
  systemd, which writes `cpuset.cpus.partition` anew; the read-back then checks that the
  kernel reports what was asked, with every planned CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from slicectl.core.cpulist import format_cpulist, parse_cpulist
from slicectl.core.errors import ApplyError
from slicectl.core.frozen import frozen
from slicectl.core.plan import FileKind, Plan
from slicectl.core.properties.partition import (
    PartitionState,
    exclusive_cpus,
    exclusive_steps,
    is_partition,
)
from slicectl.host.cgroup.cgroupfs import read_cgroup_file, read_cgroup_files

if TYPE_CHECKING:
    from slicectl.apply.transaction import Transaction
    from slicectl.host.systemd.systemd import Systemd, UnitState

EXCLUSIVE = "cpuset.cpus.exclusive"
PARTITION = "cpuset.cpus.partition"
PROP = "CPUSetPartition"


@frozen
class ExclusiveChange:
    """A cgroup whose `cpuset.cpus.exclusive` apply changes."""

    control_group: str
    live: frozenset[int]
    want: frozenset[int]

    def describe(self) -> str:
        return (f"{self.control_group}/{EXCLUSIVE}: {format_cpulist(self.live) or '(empty)'} "
                f"-> {format_cpulist(self.want) or '(empty)'}  [slicectl writes it: systemd "
                "has no setting for it]")


def partitions(plan: Plan) -> dict[str, tuple[str, frozenset[int]]]:
    """slicectl's slices the plan makes partitions: unit -> (root|isolated, its CPUs)."""
    out = {}
    for u in plan.units:
        value, cpus = u.properties.get(PROP), u.properties.get("AllowedCPUs")
        if u.kind is FileKind.UNIT and is_partition(value) and isinstance(cpus, frozenset):
            out[u.unit] = (str(value), cpus)
    return out


def owned(plan: Plan) -> list[str]:
    """slicectl's own slices (their cpuset.cpus.exclusive is slicectl's to empty)."""
    return [u.unit for u in plan.units if u.kind is FileKind.UNIT and u.unit.endswith(".slice")]


def exclusive_changes(plan: Plan, groups: Mapping[str, str], cgroup_root: Path
                      ) -> tuple[list[ExclusiveChange], dict[str, frozenset[int]]]:
    """(changes, current): the cgroups whose cpuset.cpus.exclusive must change for the plan's
    partitions, given the ControlGroup of slicectl's slices (`groups`, "" for none), and
    what the files say now (cgroups without the file, e.g. kernels before 6.7, are left out:
    the version check refuses a partition there)."""
    parts = {groups[u]: cpus for u, (_, cpus) in partitions(plan).items() if groups.get(u)}
    want = exclusive_cpus(parts)
    current: dict[str, frozenset[int]] = {}
    for group in sorted({*want, *(groups[u] for u in owned(plan) if groups.get(u))}):
        text = read_cgroup_file(cgroup_root, group, EXCLUSIVE)
        if text is not None:
            current[group] = parse_cpulist(text)
    changes = [ExclusiveChange(g, current[g], want.get(g, frozenset())) for g in sorted(current)
               if current[g] != want.get(g, frozenset())]
    return changes, current


async def apply_exclusive(tx: Transaction, plan: Plan, states: Mapping[str, UnitState],
                          cgroup_root: Path) -> list[ExclusiveChange]:
    """Write the cpuset.cpus.exclusive files the plan's partitions need (each recorded by
    `tx` first), then ask systemd again for each partition the kernel refused meanwhile."""
    sd = tx.sd
    groups = {u: await sd.control_group(u) for u in owned(plan)}
    changes, current = exclusive_changes(plan, groups, cgroup_root)
    if not changes:
        return []
    want = {c.control_group: c.want for c in changes}
    for group, cpus in exclusive_steps(current, {**current, **want}):
        try:
            tx.write_cgroup(group, EXCLUSIVE, format_cpulist(cpus).encode() + b"\n")
        except OSError as e:
            raise ApplyError(
                f"the kernel refused CPUs {format_cpulist(cpus) or '(none)'} in "
                f"{group}/{EXCLUSIVE}: {e.strerror or e}",
                "a cgroup beside it claims some of these CPUs in its own "
                "cpuset.cpus.exclusive, or would be left without a CPU of its own (Linux "
                "6.7 or later is needed for the file)") from e
    await _ask_again(tx, sd, plan, groups, states, cgroup_root)
    return changes


async def _ask_again(tx: Transaction, sd: Systemd, plan: Plan, groups: Mapping[str, str],
                     states: Mapping[str, UnitState], cgroup_root: Path) -> None:
    """SetUnitProperties CPUSetPartition= again where the kernel shows the partition asked
    for as invalid: systemd writes cpuset.cpus.partition again, now that the parents hold the
    CPUs (a partition systemd has not been asked for yet is set by the read-back)."""
    for unit, (value, _) in partitions(plan).items():
        text = read_cgroup_file(cgroup_root, groups.get(unit, ""), PARTITION)
        if not groups.get(unit) or text is None:
            continue
        state = PartitionState.parse(text)
        if state.state == value and not state.valid:
            tx.touch(unit, states[unit])
            await tx.set_live(unit, {PROP: value})


def partition_files(states: Mapping[str, UnitState], plan: Plan, cgroup_root: Path
                    ) -> dict[str, str]:
    """ControlGroup -> cpuset.cpus.partition now, for slicectl's slices that have a cgroup
    (what rollback checks the kernel shows again)."""
    groups = [states[u].control_group for u in owned(plan)
              if u in states and states[u].control_group]
    out = {}
    for group in groups:
        text = read_cgroup_files(cgroup_root, group, [PARTITION])[PARTITION]
        if text is not None:
            out[group] = text
    return out
