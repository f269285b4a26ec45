"""What the host has now, against the plan: the diff `plan` shows and apply acts on, and the
read-back apply verifies with (an edge: it asks systemd over D-Bus and reads cgroupfs).

Differences are named by their source (slicectl.core.properties.live_values.override_source): a
`systemctl set-property` file, a drop-in that sorts after slicectl's, a pending daemon-reload.

Why this module runs past 400 lines: the diff and the read-back compare the same three things
(the plan, what systemd reports, what the cgroup files hold) with the same helpers; apart,
each would need the other's.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from slicectl.apply.partitions import ExclusiveChange, exclusive_changes
from slicectl.core.frozen import frozen
from slicectl.core.plan import FileKind, Plan, UnitPlan
from slicectl.core.properties.kinds import HostLimits
from slicectl.core.properties.live_values import (
    CgroupExpectation,
    LiveValue,
    cgroup_expectations,
    desired,
    expectations_by_property,
    file_key,
    human_live,
    later_dropins,
    matches,
    override_source,
)
from slicectl.core.properties.partition import PartitionState
from slicectl.core.render import dropin_path
from slicectl.host.cgroup.cgroupfs import block_device, populated, read_cgroup_files
from slicectl.host.files.unitdir import FileChanges, UnitDir

if TYPE_CHECKING:
    from slicectl.core.balance.balance_state import BalanceState
    from slicectl.host.systemd.systemd import Systemd, UnitState

_LISTABLE = re.compile(r"[A-Za-z0-9_.:-]+\.slice")  # a slice name no glob could misread


@frozen
class PropChange:
    """A live property that differs from the plan, and who set the live value."""

    unit: str
    prop: str
    live: LiveValue
    want: LiveValue
    source: str = ""

    def describe(self) -> str:
        src = f"  [{self.source}]" if self.source else ""
        # The unit-file key (CPUQuota), as the values are spelled: not the D-Bus name
        # (CPUQuotaPerSecUSec) beside a value in percent.
        return (f"{self.unit}: {file_key(self.prop)} {human_live(self.prop, self.live)} -> "
                f"{human_live(self.prop, self.want)}{src}")


@dataclass
class Diff:
    """What apply would change: files, live properties, slices to start or stop."""

    files: FileChanges
    props: list[PropChange] = field(default_factory=list)
    # AllowedCPUs of elastic tenants that `slicectl balance` moved (a state it may leave them
    # in, as its state file records): not drift, but apply returns them to the plan's.
    balanced: list[PropChange] = field(default_factory=list)
    start: list[str] = field(default_factory=list)
    stop: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # cpuset.cpus.exclusive files apply writes for the plan's partitions
    exclusive: list[ExclusiveChange] = field(default_factory=list)
    # Whether writing the files needs a daemon-reload: some unit whose files change is
    # loaded. Units systemd has not loaded get their new files when they are started.
    reload: bool = False

    @property
    def drifted(self) -> bool:
        """The host differs from the plan other than by the balancer's moves (what `plan
        --exit-code` and `slicectl_drift` report)."""
        return bool(self.files.changed or self.props or self.start or self.stop
                    or self.exclusive)

    @property
    def changed(self) -> bool:
        """Apply would change something: drift, or balanced tenants to return."""
        return self.drifted or bool(self.balanced)

    def lines(self, unit_dir: Path, balanced: bool = True) -> list[str]:
        """Human-readable lines, one per change (`balanced`: with the balanced tenants
        apply would return to their declared CPUs)."""
        out = [f"{verb} {unit_dir}/{p}" for verb, paths in (
            ("create", self.files.created), ("update", self.files.updated),
            ("remove", self.files.removed)) for p in paths]
        if self.reload:
            out.append("reload systemd (daemon-reload: files of loaded units change)")
        out += [f"set    {c.describe()}" for c in self.props]
        out += [f"return {balanced_line(c)}" for c in self.balanced if balanced]
        out += [f"write  {c.describe()}" for c in self.exclusive]
        out += [f"start  {u}" for u in self.start]
        out += [f"stop   {u}" for u in self.stop]
        return out


def balanced_line(c: PropChange) -> str:
    """A balanced tenant for humans: its size now and its declared size."""
    live, want = c.live, c.want
    assert isinstance(live, frozenset) and isinstance(want, frozenset)
    return (f"{c.unit}: balanced to {len(live)} CPUs ({human_live(c.prop, live)}) by "
            f"slicectl balance; declared {len(want)} ({human_live(c.prop, want)})")


def split_balanced(plan: Plan, changes: list[PropChange], state: BalanceState | None
                   ) -> tuple[list[PropChange], list[PropChange]]:
    """(drift, balanced): the AllowedCPUs changes of elastic tenants whose live CPUs are a
    state the balancer left them in (slicectl.core.balance.balance_state.is_balanced) apart."""
    from slicectl.core.balance.balance_state import is_balanced

    if not plan.elastic:
        return changes, []
    ranges = {r.tenant: r for r in plan.elastic}
    units = {u.unit: ranges[u.tenant] for u in plan.units
             if u.kind is FileKind.UNIT and u.tenant in ranges}
    drift: list[PropChange] = []
    balanced: list[PropChange] = []
    for c in changes:
        r = units.get(c.unit)
        ok = (r is not None and c.prop == "AllowedCPUs" and isinstance(c.live, frozenset)
              and is_balanced(r, c.live, state))
        (balanced if ok else drift).append(c)
    return drift, balanced


def managed_units(plan: Plan) -> list[tuple[UnitPlan, bool]]:
    """Units with live properties: (unit, owned). Owned = slicectl's own slices."""
    return [(u, u.kind is FileKind.UNIT) for u in plan.units
            if u.kind is FileKind.UNIT or u.properties]


def _read_texts(paths: list[str]) -> list[tuple[str, str]]:
    out = []
    for p in paths:
        try:
            out.append((p, Path(p).read_text()))
        except OSError:
            continue  # e.g. a control file removed since the last reload
    return out


async def _states(sd: Systemd, managed: list[tuple[UnitPlan, bool]]) -> list[UnitState]:
    """The live state of every managed unit, loading none of them.

    Which of slicectl's slices systemd has loaded comes from one ListUnitsByPatterns call
    (slices have no aliases, and their names no glob characters); a slice it has not loaded
    needs no more calls. Neither listing nor GetUnit loads a unit, so starting one later
    reads its new files without a daemon-reload. Many calls are in flight on one connection:
    systemd answers them in order, without waiting for us between calls.
    """
    from slicectl.host.systemd.systemd import UnitState

    listed = {u.unit for u, owned in managed if owned and _LISTABLE.fullmatch(u.unit)}
    loaded = ({row.name: row for row in await sd.list_units_by_patterns([], sorted(listed))}
              if listed else {})

    async def state(unit: str) -> UnitState:
        if unit in listed and unit not in loaded:
            return UnitState.absent(unit)
        # A listed unit's row has its object path and states: no GetUnit, no three Gets.
        return await sd.get_unit_properties(unit, load=False, listed=loaded.get(unit))

    return list(await asyncio.gather(*(state(u.unit) for u, _ in managed)))


def _unit_changes(u: UnitPlan, owned: bool, st: UnitState, unit_dir: Path,
                  notes: list[str], host: HostLimits) -> list[PropChange]:
    """The live properties of one unit that differ from the plan, with their sources."""
    ours = str(unit_dir / dropin_path(u.unit))
    texts = _read_texts([st.fragment_path, *st.drop_in_paths])
    want = desired(u, owned, host)
    changes = [PropChange(u.unit, prop, st.props.get(prop), value,
                          override_source(prop, ours, texts))
               for prop, value in want.items() if not matches(prop, st.props.get(prop), value)]
    wanted = {file_key(p) for p in want}
    for path, key in later_dropins(ours, texts):
        if key in wanted:
            notes.append(f"{u.unit}: {path} sorts after slicectl's drop-in and sets {key}; "
                         "its value wins at every daemon-reload (slicectl does not edit "
                         "files it did not generate: remove it or move the setting into "
                         "tenants.yaml)")
    return changes


async def live_diff(sd: Systemd, plan: Plan, unit_dir: Path,
                    notes: list[str] | None = None) -> tuple[
        list[PropChange], list[str], dict[str, UnitState]]:
    """Live properties that differ from the plan, tenant slices to start, and the states."""
    managed = managed_units(plan)
    got = await _states(sd, managed)
    changes: list[PropChange] = []
    start: list[str] = []
    states: dict[str, UnitState] = {}
    notes = [] if notes is None else notes
    for (u, owned), st in zip(managed, got, strict=True):
        states[u.unit] = st
        if st.load_state not in ("loaded", "") and u.kind is FileKind.DROPIN:
            continue  # e.g. cron.service not installed: its drop-in waits for it
        if owned and st.active_state not in ("active", "reloading"):
            start.append(u.unit)
        if st.control_group:  # else no cgroup yet: the files apply when the unit starts
            changes += _unit_changes(u, owned, st, unit_dir, notes, plan.limits)
    return changes, start, states


def timers(plan: Plan) -> list[str]:
    """The schedule's timers in the plan."""
    return [u.unit for u in plan.units
            if u.kind is FileKind.SCHEDULE and u.unit.endswith(".timer")]


async def _stopped_timers(sd: Systemd, plan: Plan) -> list[str]:
    """The schedule's timers that are not running (apply starts them)."""
    names = timers(plan)
    if not names:
        return []
    return [row.name for row in await sd.list_units_by_names(names)
            if row.active_state not in ("active", "activating", "reloading")]


async def host_diff(sd: Systemd, plan: Plan, files: Mapping[str, str],
                    units: UnitDir, cgroup_root: Path, *, force: bool = False,
                    balance: BalanceState | None = None
                    ) -> tuple[Diff, dict[str, UnitState]]:
    """What applying `plan` would change: files, live properties, units to start and stop.
    Raises if a file slicectl would replace or remove was edited by hand, unless `force`.
    `balance`: the balancer's state, whose moves are told apart from drift."""
    diff = Diff(files=units.diff(files, force=force))
    notes: list[str] = []
    props, diff.start, states = await live_diff(sd, plan, units.root, notes)
    diff.props, diff.balanced = split_balanced(plan, props, balance)
    diff.props = _from_changed_files(diff.props, diff.files)
    changed = {c.unit for c in diff.props + diff.balanced} | set(diff.start)
    diff.props += _stale_cgroups(plan, states, cgroup_root, changed)
    diff.start += await _stopped_timers(sd, plan)
    diff.stop, diff.notes = await _removed_slices(sd, plan, units, cgroup_root)
    diff.notes = [*plan.layout.repack_notes(), *diff.notes]
    diff.notes += notes + await _member_notes(sd, plan)
    diff.reload = await _needs_reload(sd, diff.files, states)
    diff.exclusive = exclusive_changes(
        plan, {u: st.control_group for u, st in states.items()}, cgroup_root)[0]
    return diff, states


# What override_source says when no other file explains a live value: for a unit whose
# files this run writes, the reason is the change of tenants.yaml itself.
_NO_OTHER_SOURCE = ("slicectl's file is not loaded yet (daemon-reload pending)",
                    "changed at runtime (no file sets it)")


def _from_changed_files(props: list[PropChange], files: FileChanges) -> list[PropChange]:
    """Changes of units whose files apply writes now, explained as the edit of tenants.yaml
    they are (not as a reload pending or a runtime change)."""
    from dataclasses import replace

    writing = {unit_of(rel) for rel in files.created + files.updated}
    return [replace(c, source="tenants.yaml changed: apply writes and sets it")
            if c.unit in writing and c.source in _NO_OTHER_SOURCE else c for c in props]


def unit_of(rel: str) -> str:
    """The unit a generated file belongs to: "a.slice" and "a.slice.d/50-x.conf" -> a.slice."""
    return rel.split("/", 1)[0].removesuffix(".d")


async def _needs_reload(sd: Systemd, files: FileChanges,
                        states: Mapping[str, UnitState]) -> bool:
    """True if a unit whose files change is loaded: only a daemon-reload updates a loaded
    unit's configuration (else systemd reports NeedDaemonReload=yes). A unit that is not
    loaded reads its files when it is loaded (by StartUnit), so a first apply of new tenants
    costs no reload (measured on systemd 252, docs/design-notes.md)."""
    units = sorted({unit_of(rel) for rel in files.created + files.updated + files.removed})
    if any(states[u].loaded for u in units if u in states):
        return True
    others = [u for u in units if u not in states]
    return any(path is not None
               for path in await asyncio.gather(*(sd.get_unit(u) for u in others)))


async def _removed_slices(sd: Systemd, plan: Plan, units: UnitDir,
                          cgroup_root: Path) -> tuple[list[str], list[str]]:
    """Tenant slices and timers slicectl generated before but no longer plans: stop them
    (a slice only if it is empty)."""
    planned = {u.unit for u in plan.units}
    old = {rel for rel in units.manifest().paths if rel.endswith((".slice", ".timer"))}
    stop: list[str] = []
    notes: list[str] = []
    for unit in sorted(old - planned):
        st = await sd.get_unit_properties(unit, load=False)
        if st.active_state != "active":
            continue
        if unit.endswith(".slice") and populated(cgroup_root, st.control_group):
            notes.append(f"{unit} is no longer planned but still has processes: not stopped "
                         "(move them out, then `systemctl stop` it)")
        else:
            stop.append(unit)
    return stop, notes


async def _member_notes(sd: Systemd, plan: Plan) -> list[str]:
    notes = []
    for u in plan.units:
        if u.slice is None:
            continue
        st = await sd.get_unit_properties(u.unit, load=False)
        if st.active_state == "active" and st.slice and st.slice != u.slice:
            notes.append(f"{u.unit} runs in {st.slice}; restart it to move it into {u.slice} "
                         "(slicectl never restarts services)")
    return notes


# --- read-back ------------------------------------------------------------------------------


def cgroup_problems(cgroup_root: Path, unit: str, control_group: str,
                    expectations: list[CgroupExpectation]) -> list[str]:
    """The cgroup files of a unit that do not say what they must."""
    problems = []
    contents = read_cgroup_files(cgroup_root, control_group, [e.file for e in expectations])
    for exp in expectations:
        content = contents[exp.file]
        if not exp.matches(content):
            shown = "(missing)" if content is None else repr(content.strip())
            problems.append(partition_problem(unit, control_group, exp, content, contents)
                            or f"{unit}: {control_group}/{exp.file} is {shown}, "
                               f"expected {exp.expected!r}")
    return problems


def partition_problem(unit: str, group: str, exp: CgroupExpectation, content: str | None,
                      contents: Mapping[str, str | None]) -> str | None:
    """A partition the kernel refused, with its reason in its own words and what to do; or
    one that holds fewer CPUs than planned (None: not a partition's file)."""
    partition = contents.get("cpuset.cpus.partition")
    if content is None or partition is None:
        return None
    state = PartitionState.parse(partition)
    if exp.file == "cpuset.cpus.partition" and not state.valid:
        return (f"{unit}: the kernel refused the {exp.expected} partition: "
                f"{state.reason or 'it gives no reason'} ({group}/cpuset.cpus.partition "
                f"says {partition.strip()!r}); {state.hint()}")
    if exp.file == "cpuset.cpus.effective" and state.valid:
        return (f"{unit}: the {state.state} partition holds CPUs {content.strip()} of the "
                f"planned {exp.expected} ({group}/cpuset.cpus.effective): the kernel gave the "
                "others to a cgroup beside it that claims them, or they are offline")
    return None


@dataclass
class ReadBack:
    """Managed units read back: problems per unit checked, and live properties that differ."""

    problems: dict[str, list[str]] = field(default_factory=dict)
    differ: list[PropChange] = field(default_factory=list)
    not_running: list[str] = field(default_factory=list)  # no cgroup: nothing to read back


# Why a live value that systemd reports as planned is set again: its cgroup file lacks it.
STALE = "systemd has it, its cgroup does not (a daemon-reload did not apply it)"


def _stale_cgroups(plan: Plan, states: Mapping[str, UnitState], cgroup_root: Path,
                   changed: set[str]) -> list[PropChange]:
    """Running managed units whose properties systemd reports as planned but whose cgroup
    files do not hold them (systemd 257 applied a daemon-reload's new values to the unit, not
    to its running cgroup): each planned property, to set live again."""
    stale: list[PropChange] = []
    for u, owned in managed_units(plan):
        st = states.get(u.unit)
        if st is None or not st.control_group or u.unit in changed:
            continue
        want = desired(u, owned, plan.limits)
        stale += [PropChange(u.unit, p, st.props.get(p), want[p], STALE)
                  for p in _missed(cgroup_root, st.control_group, want)]
    return stale


def _missed(cgroup_root: Path, control_group: str, want: Mapping[str, LiveValue]
            ) -> list[str]:
    """The properties of `want` whose cgroup files do not say what they must (only those are
    set again: a property this systemd cannot set is never sent)."""
    by_prop = expectations_by_property(want, block_device)
    contents = read_cgroup_files(cgroup_root, control_group,
                                 [e.file for exps in by_prop.values() for e in exps])
    return [p for p, exps in by_prop.items()
            if any(not e.matches(contents[e.file]) for e in exps)]


async def read_back(sd: Systemd, plan: Plan, cgroup_root: Path,
                    only: set[str] | None = None, reapply: bool = False) -> ReadBack:
    """Read back managed units (all, or `only`) in their cgroup files, found through each
    unit's ControlGroup. Where a file differs, ask systemd: a property it reports differently
    (e.g. a `systemctl set-property` value) is returned for the caller to set live and verify
    again. Where systemd agrees with the plan, with `reapply` the unit's planned properties are
    returned too, to set live once (a reload that did not reach the running cgroup: STALE);
    without it the kernel did not take the value: a problem."""
    result = ReadBack()
    managed = [(u, o) for u, o in managed_units(plan) if only is None or u.unit in only]
    groups = await asyncio.gather(*(sd.control_group(u.unit) for u, _ in managed))
    suspects: list[tuple[UnitPlan, bool]] = []
    for (u, owned), group in zip(managed, groups, strict=True):
        if not group:  # no cgroup (a drop-in for a unit that is not running)
            result.not_running.append(u.unit)
            continue
        if cgroup_problems(cgroup_root, u.unit, group,
                           cgroup_expectations(desired(u, owned, plan.limits), block_device)):
            suspects.append((u, owned))
        else:
            result.problems[u.unit] = []
    # The cgroup interface alone has ControlGroup and every managed property.
    states = await asyncio.gather(*(sd.get_unit_properties(u.unit, unit_interface=False)
                                    for u, _ in suspects))
    for (u, owned), st in zip(suspects, states, strict=True):
        want = desired(u, owned, plan.limits)
        wrong = [PropChange(u.unit, p, st.props.get(p), v) for p, v in want.items()
                 if not matches(p, st.props.get(p), v)]
        if wrong:
            result.differ += wrong
        elif reapply:
            result.differ += [PropChange(u.unit, p, st.props.get(p), want[p], STALE)
                              for p in _missed(cgroup_root, st.control_group, want)]
        else:
            result.problems[u.unit] = cgroup_problems(
                cgroup_root, u.unit, st.control_group, cgroup_expectations(want, block_device))
    return result
