"""Live apply: plan → files (atomic) → Reload → start slices → live properties → verify.

The only code that changes a running host, as named steps over three parts: the live state
and its diff (slicectl.apply.host_diff), the transaction that changes and restores the host
(slicectl.apply.transaction), and systemd (slicectl.host.systemd.systemd). Any failure rolls back
files and live properties to exactly what they were and raises ApplyError with the reason, and with
what could not be restored if anything could not. Nothing is restarted: CPU and memory settings
reach running processes through their cgroups.

Why both files and SetUnitProperties: the files make settings survive reboots and reloads
(and, in drop-ins named 50-slicectl.conf, they sort after `systemctl set-property` files);
SetUnitProperties makes running cgroups match at once, for what a reload did not change.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slicectl.apply.host_diff import Diff, PropChange, host_diff, managed_units, read_back
from slicectl.apply.isolation import IsolationPaths, steer_isolation
from slicectl.apply.partitions import (
    ExclusiveChange,
    apply_exclusive,
    partition_files,
    partitions,
)
from slicectl.apply.transaction import Transaction
from slicectl.core import defaults
from slicectl.core.errors import ApplyError, SlicectlError
from slicectl.core.frozen import frozen
from slicectl.core.plan import Plan, ScheduleCommand
from slicectl.core.properties.live_values import LiveValue, human_live
from slicectl.core.properties.versions import check_version, parse_version
from slicectl.host.files.balance_state_file import reset_state, state_or_none
from slicectl.host.files.lock import LOCK_TIMEOUT
from slicectl.host.files.unitdir import Manifest, UnitDir
from slicectl.host.planning import plan_for_host

if TYPE_CHECKING:
    from slicectl.core.config.config import Config
    from slicectl.core.placement.topology import Topology
    from slicectl.host.systemd.systemd import Systemd, UnitState

__all__ = ["ApplyOptions", "ApplyReport", "Diff", "PropChange", "apply_plan", "compute_diff",
           "diff_plan", "load_plan"]


@frozen
class ApplyOptions:
    """Where apply acts: the unit directory, cgroup root and bus (defaults: the host)."""

    unit_dir: Path = Path(defaults.UNIT_DIR)
    cgroup_root: Path = Path(defaults.CGROUP_ROOT)
    bus_address: str | None = None  # None: the system bus
    control_dir: Path = Path(defaults.CONTROL_DIR)
    # Seconds to wait for another slicectl writing unit_dir (generate, apply: one lock).
    lock_timeout: float = LOCK_TIMEOUT
    templates: str | None = None
    # How the schedule's timers run slicectl on this host (None: ScheduleCommand.default).
    schedule_command: ScheduleCommand | None = None
    force: bool = False  # replace/remove slicectl's files even if edited by hand (UnitDir.diff)
    kernel: str | None = None  # the host's kernel release (None: this machine's, uname -r)
    # The balancer's state: its moves are not drift, and apply records their undoing there.
    balance_state: Path = Path(defaults.BALANCE_STATE)
    # Move the fewest tenants where keeping all in place would split a local one (--repack).
    repack: bool = False
    # Where IRQs and unbound work are steered off isolated CPUs (slicectl.apply.isolation).
    proc_root: Path = Path(defaults.PROC)
    sysfs_root: Path = Path(defaults.SYSFS)
    isolation_record: Path = Path(defaults.ISOLATION_RECORD)
    runtime_unit_dir: Path = Path(defaults.RUNTIME_UNIT_DIR)

    def isolation_paths(self) -> IsolationPaths | None:
        """Where to steer IRQs and unbound work; None when this apply acts on another cgroup
        tree than the host's (the demo, a test's) while these paths were left at the host's:
        the host's IRQs, workqueue mask and irqbalance are never touched for another tree."""
        paths = IsolationPaths(self.proc_root, self.sysfs_root, self.isolation_record,
                               self.runtime_unit_dir)
        if paths == _HOST_ISOLATION and self.cgroup_root != Path(defaults.CGROUP_ROOT):
            return None
        return paths


_HOST_ISOLATION = IsolationPaths(Path(defaults.PROC), Path(defaults.SYSFS),
                                 Path(defaults.ISOLATION_RECORD),
                                 Path(defaults.RUNTIME_UNIT_DIR))


@dataclass
class ApplyReport:
    """What an apply did."""

    diff: Diff
    reloaded: bool = False
    started: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    set_live: list[PropChange] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    not_running: list[str] = field(default_factory=list)  # managed, no cgroup: not verified
    notes: list[str] = field(default_factory=list)
    exclusive: list[ExclusiveChange] = field(default_factory=list)  # cgroup files written
    # Seconds each phase took (plan, connect, diff, write, start, stop, verify), as
    # `apply --json` reports them: where an apply's time goes (BENCHMARKS.md, apply.100.floor).
    phases: dict[str, float] = field(default_factory=dict)


class _Clock:
    """Times the phases of one apply into a dict, each from the end of the one before."""

    def __init__(self, phases: dict[str, float]) -> None:
        self.phases, self.last = phases, time.monotonic()

    def lap(self, phase: str) -> None:
        now = time.monotonic()
        self.phases[phase] = round(self.phases.get(phase, 0.0) + now - self.last, 6)
        self.last = now


Confirm = Callable[[Diff], bool]
Progress = Callable[[str], None]


def load_plan(config: Config, topology: Topology, options: ApplyOptions,
              manifest: Manifest | None = None) -> tuple[Plan, dict[str, str]]:
    """The host's plan (slicectl.host.planning.plan_for_host) and its rendered files."""
    from slicectl.core.render import render
    from slicectl.host.files.templates import load_templates

    plan = plan_for_host(config, topology, options.unit_dir, options.schedule_command,
                         manifest=manifest, repack=options.repack)
    return plan, render(plan, load_templates(options.templates))


async def diff_plan(plan: Plan, files: dict[str, str], options: ApplyOptions) -> Diff:
    """What applying `plan` would change, over a connection of its own; changes nothing."""
    from slicectl.host.systemd.systemd import Systemd

    async with await Systemd.connect(options.bus_address) as sd:
        return (await host_diff(sd, plan, files, UnitDir(options.unit_dir), options.cgroup_root,
                                force=options.force,
                                balance=state_or_none(options.balance_state)))[0]


async def compute_diff(config: Config, topology: Topology, options: ApplyOptions) -> Diff:
    """What `apply` would change on the host (files and live state); changes nothing."""
    return await diff_plan(*load_plan(config, topology, options), options)


async def apply_plan(config: Config, topology: Topology, options: ApplyOptions,
                     dry_run: bool = False, confirm: Confirm | None = None,
                     progress: Progress | None = None) -> ApplyReport:
    """Apply `config` to the host; roll back and raise ApplyError on any failure.

    `confirm`, if given, is called with the Diff and returns False to cancel; `progress`, if
    given, is called with one line per phase (the CLI prints them on stderr).
    """
    from slicectl.host.systemd.systemd import Systemd

    say = progress or (lambda _line: None)
    units = UnitDir(options.unit_dir)
    phases: dict[str, float] = {}
    # The unit directory's one lock (generate takes it too), held from reading the manifest
    # to writing it; the manifest is read once, here.
    with units.locked(options.lock_timeout,
                      on_wait=lambda holder: say(f"waiting for {holder}, which is writing "
                                                 f"{options.unit_dir}")):
        clock = _Clock(phases)
        plan, files = load_plan(config, topology, options, units.manifest())
        clock.lap("plan")
        async with await Systemd.connect(options.bus_address) as sd:
            clock.lap("connect")
            # Before anything is written: a key this systemd (or kernel) cannot take is
            # refused here.
            check_version(config, parse_version(await sd.version()), "systemd on this host",
                          options.kernel or os.uname().release)
            diff, states = await host_diff(sd, plan, files, units,
                                           options.cgroup_root, force=options.force,
                                           balance=state_or_none(options.balance_state))
            report = ApplyReport(diff=diff, notes=list(diff.notes), phases=phases)
            clock.lap("diff")
            if dry_run:
                return report
            if not diff.changed:
                reset_state(options.balance_state, plan.elastic)
                return report
            if confirm is not None and not confirm(diff):
                raise ApplyError("cancelled; nothing was changed", "")
            tx = Transaction(sd, units, options.control_dir, cgroup_root=options.cgroup_root)
            try:
                await _change(tx, plan, files, config, states, report, options, say, clock)
            except (SlicectlError, OSError) as e:
                say("failed: rolling back files and live properties")
                raise await _rolled_back(tx, e) from e
            # Every tenant has its declared CPUs now: so says the balancer's state, before
            # the lock lets the balancer move again.
            reset_state(options.balance_state, plan.elastic)
    return report


async def _change(tx: Transaction, plan: Plan, files: dict[str, str], config: Config,
                  states: dict[str, UnitState], report: ApplyReport, options: ApplyOptions,
                  say: Progress, clock: _Clock) -> None:
    """The changing steps of an apply, in order; any exception leaves `tx` to roll back."""
    diff = report.diff
    partitioned = bool(partitions(plan) or diff.exclusive)
    if partitioned:
        tx.partitions_before = partition_files(states, plan, options.cgroup_root)
    if diff.files.changed:
        await _write(tx, plan, files, config, diff, say)
        report.reloaded = tx.reloaded
    clock.lap("write")
    await _start(tx, plan, diff.start, states, report, say)
    clock.lap("start")
    for unit in diff.stop:
        await tx.sd.stop_unit(unit)
        report.stopped.append(unit)
    clock.lap("stop")
    if partitioned:
        say("writing the exclusive CPUs of cpuset partitions (cpuset.cpus.exclusive)")
        report.exclusive = await apply_exclusive(tx, plan, states, options.cgroup_root)
        clock.lap("exclusive")
    await _verify(tx, plan, states, report, options, say)
    clock.lap("verify")
    isolation = options.isolation_paths()
    if isolation is not None and (partitioned or isolation.record.exists()):
        # Once the partitions are what the plan says: IRQs and unbound work off isolated
        # CPUs, or back where they were when no CPU is isolated any more.
        report.notes += await steer_isolation(tx, plan, isolation,
                                              options.kernel or os.uname().release, say)
        clock.lap("isolation")


async def _write(tx: Transaction, plan: Plan, files: dict[str, str], config: Config,
                 diff: Diff, say: Progress) -> None:
    say(f"writing {len(diff.files.created) + len(diff.files.updated)} file(s), "
        f"removing {len(diff.files.removed)}" + (", reloading systemd" if diff.reload else ""))
    manifest = Manifest(placements=plan.placements(), source=Path(config.path).name)
    await tx.write_files(files, manifest, diff.files, diff.reload)


async def _start(tx: Transaction, plan: Plan, units: list[str],
                 states: dict[str, UnitState], report: ApplyReport, say: Progress) -> None:
    """Start the tenant slices and the schedule's timers that are not running (recorded
    first: a failure stops them again)."""
    if not units:
        return
    slices = [u for u in units if u in states]
    timers = [u for u in units if u not in states]
    for unit in slices:
        tx.touch(unit, states[unit])
    say(f"starting {len(units)} unit(s)")
    tx.started.extend(units)
    report.started.extend(units)
    if slices:
        await start_slices(tx.sd, plan.units[0].unit, slices)
    await gather_all([tx.sd.start_unit(t) for t in timers])


async def _verify(tx: Transaction, plan: Plan, states: dict[str, UnitState],
                  report: ApplyReport, options: ApplyOptions, say: Progress) -> None:
    """Read everything back once; set at runtime only what still differs (e.g. a `systemctl
    set-property` value: a reload applies changed files to running cgroups, measured on
    systemd 252), read those units back again, and fail on anything still wrong."""
    say(f"reading {len(managed_units(plan))} unit(s) back from systemd and their cgroups")
    first = await read_back(tx.sd, plan, options.cgroup_root, reapply=True)
    checked = first.problems
    if first.differ:
        by_unit: dict[str, dict[str, LiveValue]] = {}
        for c in first.differ:
            by_unit.setdefault(c.unit, {})[c.prop] = c.want
            tx.touch(c.unit, states[c.unit])
        count = len(first.differ)
        say(f"setting {count} live propert{'y' if count == 1 else 'ies'} on {len(by_unit)} "
            f"unit(s), then verifying them")
        await gather_all([tx.set_live(unit, props) for unit, props in by_unit.items()])
        report.set_live = first.differ
        again = await read_back(tx.sd, plan, options.cgroup_root, set(by_unit))
        checked.update(again.problems)
        for c in again.differ:
            checked.setdefault(c.unit, []).append(
                f"{c.unit}: systemd reports {c.prop}={human_live(c.prop, c.live)}, "
                f"expected {human_live(c.prop, c.want)}")
    report.verified = sorted(checked)
    report.not_running = sorted(first.not_running)
    if report.not_running:
        report.notes.append(
            f"not verified, not running (no cgroup): {', '.join(report.not_running)}; "
            "their files apply when they start")
    problems = [p for unit in sorted(checked) for p in checked[unit]]
    if problems:
        raise ApplyError("verification failed: " + "; ".join(problems),
                         "the kernel or systemd did not take the values; see "
                         "`systemctl status` of the unit")


async def _rolled_back(tx: Transaction, error: Exception) -> ApplyError:
    """Roll back, and say so: what failed and, if anything could not be restored, what."""
    failures = await tx.rollback()
    reason = error.message if isinstance(error, SlicectlError) else str(error)
    hint = error.hint if isinstance(error, SlicectlError) else ""
    if not failures:
        return ApplyError(f"apply failed: {reason}; rolled back to the previous state", hint)
    return ApplyError(
        f"apply failed: {reason}; the rollback could not restore: " + "; ".join(failures),
        "restore those by hand (`systemctl revert`, or the files from version control), then "
        "run `slicectl plan` to see what still differs")


async def start_slices(sd: Systemd, parent: str, units: list[str]) -> None:
    """Start `units` (tenant slices, maybe their parent): the parent Wants= them, so one
    StartUnit queues a job for each in one transaction. Then wait, polling one
    ListUnitsByNames call, until none has a job left, and start individually (waiting for
    the job's result, to report it) whatever did not come up. Not waiting on the first
    StartUnit spares subscribing to systemd's signals (docs/design-notes.md)."""
    await sd.start_unit(parent, wait=False)
    watched = list(dict.fromkeys([parent, *units]))
    deadline = time.monotonic() + sd.job_timeout
    rows = await sd.list_units_by_names(watched)
    while any(r.job_id for r in rows) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
        rows = await sd.list_units_by_names(watched)
    await gather_all([sd.start_unit(r.name) for r in rows if r.active_state != "active"])


async def gather_all(calls: list[Coroutine[Any, Any, Any]]) -> None:
    """Run calls concurrently; wait for all of them, then raise the first failure."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
