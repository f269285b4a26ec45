"""Live apply: plan → files (atomic) → Reload → start slices → live properties → verify.

The only code that changes a running host. Any failure rolls back files and live properties
to exactly what they were (a property that was unset becomes unset again) and raises
ApplyError with the reason. Nothing is restarted: CPU and memory settings reach running
processes through their cgroups.

Why both files and SetUnitProperties: the files make settings survive reboots and reloads
(and, in drop-ins named 50-slicectl.conf, they sort after `systemctl set-property` files);
SetUnitProperties makes running cgroups match at once. systemd records every runtime
SetUnitProperties call in /run/systemd/system.control/UNIT.d/50-PROPERTY.conf; slicectl puts
that directory back exactly as it found it afterwards, so none of its runtime calls lingers
as a stale override of its own files (DESIGN §6).
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slicectl.errors import ApplyError, LockError, SlicectlError
from slicectl.live import (
    CgroupExpectation,
    LiveValue,
    cgroup_expectations,
    desired,
    file_key,
    format_live,
    later_dropins,
    override_source,
)
from slicectl.plan import Plan, UnitPlan
from slicectl.unitdir import FileChanges, Journal, Manifest, UnitDir

if TYPE_CHECKING:
    from slicectl.config import Config
    from slicectl.systemd import Systemd, UnitState
    from slicectl.topology import Topology


@dataclass(frozen=True)
class ApplyOptions:
    """Where apply acts: the unit directory, cgroup root, bus, lock (defaults: the host)."""

    unit_dir: Path = Path("/etc/systemd/system")
    cgroup_root: Path = Path("/sys/fs/cgroup")
    bus_address: str | None = None  # None: the system bus
    control_dir: Path = Path("/run/systemd/system.control")
    lock_path: Path = Path("/run/slicectl.lock")
    templates: str | None = None


@dataclass(frozen=True)
class PropChange:
    """A live property that differs from the plan, and who set the live value."""

    unit: str
    prop: str
    live: LiveValue
    want: LiveValue
    source: str = ""

    def describe(self) -> str:
        src = f"  [{self.source}]" if self.source else ""
        return (f"{self.unit}: {self.prop} {format_live(self.prop, self.live)} -> "
                f"{format_live(self.prop, self.want)}{src}")


@dataclass
class Diff:
    """What apply would change: files, live properties, slices to start or stop."""

    files: FileChanges
    props: list[PropChange] = field(default_factory=list)
    start: list[str] = field(default_factory=list)
    stop: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Whether writing the files needs a daemon-reload: some unit whose files change is
    # loaded. Units systemd has not loaded get their new files when they are started.
    reload: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.files.changed or self.props or self.start or self.stop)

    def lines(self, unit_dir: Path) -> list[str]:
        """Human-readable lines, one per change."""
        out = [f"{verb} {unit_dir}/{p}" for verb, paths in (
            ("create", self.files.created), ("update", self.files.updated),
            ("remove", self.files.removed)) for p in paths]
        if self.reload:
            out.append("reload systemd (daemon-reload: files of loaded units change)")
        out += [f"set    {c.describe()}" for c in self.props]
        out += [f"start  {u}" for u in self.start]
        out += [f"stop   {u}" for u in self.stop]
        return out


@dataclass
class ApplyReport:
    """What an apply did."""

    diff: Diff
    reloaded: bool = False
    started: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    set_live: list[PropChange] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@contextmanager
def apply_lock(path: Path) -> Iterator[None]:
    """One apply at a time: an exclusive flock, with the holder's PID for the message."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise LockError(f"another slicectl apply is running (pid {holder}, lock {path})",
                            "wait for it to finish; one apply at a time keeps state "
                            "consistent") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


_LISTABLE = re.compile(r"^[A-Za-z0-9_.:-]+\.slice$")  # a slice name no glob could misread


def managed_units(plan: Plan) -> list[tuple[UnitPlan, bool]]:
    """Units with live properties: (unit, owned). Owned = slicectl's own slices."""
    return [(u, u.kind == "unit") for u in plan.units if u.kind == "unit" or u.properties]


def read_cgroup_file(root: Path, control_group: str, name: str) -> str | None:
    """A cgroup file of a unit, found through its ControlGroup (never a hand-built path)."""
    return read_cgroup_files(root, control_group, [name])[name]


def read_cgroup_files(root: Path, control_group: str, names: list[str]
                      ) -> dict[str, str | None]:
    """Several files of one cgroup (None: missing), opened relative to the cgroup's folder
    (a quarter of the cost of a full path per file)."""
    out: dict[str, str | None] = dict.fromkeys(names)
    try:
        folder = os.open(os.path.join(root, control_group.lstrip("/")),
                         os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        return out
    try:
        for name in names:
            try:
                fd = os.open(name, os.O_RDONLY, dir_fd=folder)
            except (FileNotFoundError, NotADirectoryError):
                continue
            try:
                out[name] = os.read(fd, 65536).decode()
            finally:
                os.close(fd)
    finally:
        os.close(folder)
    return out


def _read_texts(paths: list[str]) -> list[tuple[str, str]]:
    out = []
    for p in paths:
        try:
            out.append((p, Path(p).read_text()))
        except OSError:
            continue  # e.g. a control file removed since the last reload
    return out


def load_plan(config: Config, topology: Topology, options: ApplyOptions) -> tuple[
        Plan, dict[str, str]]:
    """The plan (starting from where the last apply placed tenants) and its rendered files."""
    from slicectl.plan import build_plan
    from slicectl.render import render

    plan = build_plan(config, topology, UnitDir(options.unit_dir).manifest().placements)
    return plan, render(plan, options.templates)


async def live_diff(sd: Systemd, plan: Plan, unit_dir: Path,
                    notes: list[str] | None = None) -> tuple[
        list[PropChange], list[str], dict[str, UnitState]]:
    """Live properties that differ from the plan, tenant slices to start, and the states."""
    import asyncio

    from slicectl.render import dropin_path
    from slicectl.systemd import UnitState

    managed = managed_units(plan)
    # Which of slicectl's slices systemd has loaded, in one call (slices have no aliases, and
    # their names no glob characters); a slice it has not loaded needs no more calls (100 new
    # tenants: 0.15 s of GetUnit calls in the testbed). Listing does not load a unit, and
    # neither does GetUnit: a unit systemd has not loaded stays unloaded, so starting it later
    # reads its new files without a daemon-reload.
    listed = {u.unit for u, owned in managed if owned and _LISTABLE.match(u.unit)}
    loaded = ({row.name for row in await sd.list_units_by_patterns([], sorted(listed))}
              if listed else set())

    async def state(unit: str) -> UnitState:
        if unit in listed and unit not in loaded:
            return UnitState.absent(unit)
        return await sd.get_unit_properties(unit, load=False)

    # One connection, many calls in flight: systemd answers them in order, without waiting
    # for us between calls (100 tenants: one round of latency instead of 100).
    got = await asyncio.gather(*(state(u.unit) for u, _ in managed))
    changes: list[PropChange] = []
    start: list[str] = []
    states: dict[str, UnitState] = {}
    notes = [] if notes is None else notes
    for (u, owned), st in zip(managed, got, strict=True):
        states[u.unit] = st
        if st.load_state not in ("loaded", "") and u.kind == "dropin":
            continue  # e.g. cron.service not installed: its drop-in waits for it
        if owned and st.active_state not in ("active", "reloading"):
            start.append(u.unit)
        if not st.control_group:
            continue  # no cgroup yet: the files apply when the unit starts
        ours = str(unit_dir / dropin_path(u.unit))
        texts = _read_texts([st.fragment_path, *st.drop_in_paths])
        live = st.props
        for prop, want in desired(u, owned).items():
            if live.get(prop) == want:
                continue
            changes.append(PropChange(u.unit, prop, live.get(prop), want,
                                      override_source(prop, ours, texts)))
        wanted = {file_key(p) for p in desired(u, owned)}
        for path, key in later_dropins(ours, texts):
            if key in wanted:
                notes.append(f"{u.unit}: {path} sorts after slicectl's drop-in and sets {key}; "
                             "its value wins at every daemon-reload (slicectl does not edit "
                             "files it did not generate: remove it or move the setting into "
                             "tenants.yaml)")
    return changes, start, states


async def host_diff(sd: Systemd, plan: Plan, files: Mapping[str, str],
                    options: ApplyOptions) -> tuple[Diff, dict[str, UnitState]]:
    """What applying `plan` would change: files, live properties, slices to start and stop."""
    unit_dir = UnitDir(options.unit_dir)
    diff = Diff(files=unit_dir.diff(files))
    notes: list[str] = []
    diff.props, diff.start, states = await live_diff(sd, plan, options.unit_dir, notes)
    diff.stop, diff.notes = await _removed_slices(sd, plan, unit_dir, options)
    diff.notes += notes + await _member_notes(sd, plan)
    diff.reload = await _needs_reload(sd, diff.files, states)
    return diff, states


def unit_of(rel: str) -> str:
    """The unit a generated file belongs to: "a.slice" and "a.slice.d/50-x.conf" -> a.slice."""
    return rel.split("/", 1)[0].removesuffix(".d")


async def _needs_reload(sd: Systemd, files: FileChanges,
                        states: Mapping[str, UnitState]) -> bool:
    """True if a unit whose files change is loaded: only a daemon-reload updates a loaded
    unit's configuration (else systemd reports NeedDaemonReload=yes). A unit that is not
    loaded reads its files when it is loaded (by StartUnit), so a first apply of new tenants
    costs no reload (measured on systemd 252, docs/design-notes.md)."""
    import asyncio

    units = sorted({unit_of(rel) for rel in files.created + files.updated + files.removed})
    if any(states[u].loaded for u in units if u in states):
        return True
    others = [u for u in units if u not in states]
    return any(path is not None
               for path in await asyncio.gather(*(sd.get_unit(u) for u in others)))


async def diff_plan(plan: Plan, files: Mapping[str, str], options: ApplyOptions) -> Diff:
    """host_diff over a connection of its own; changes nothing."""
    from slicectl.systemd import Systemd

    async with await Systemd.connect(options.bus_address) as sd:
        return (await host_diff(sd, plan, files, options))[0]


async def compute_diff(config: Config, topology: Topology, options: ApplyOptions) -> Diff:
    """What `apply` would change on the host (files and live state); changes nothing."""
    return await diff_plan(*load_plan(config, topology, options), options)


async def _removed_slices(sd: Systemd, plan: Plan, unit_dir: UnitDir,
                          options: ApplyOptions) -> tuple[list[str], list[str]]:
    """Tenant slices slicectl generated before but no longer plans: stop them if empty."""
    planned = {u.unit for u in plan.units}
    old = {rel for rel in unit_dir.manifest().files if rel.endswith(".slice")}
    stop: list[str] = []
    notes: list[str] = []
    for unit in sorted(old - planned):
        st = await sd.get_unit_properties(unit, load=False)
        if st.active_state != "active":
            continue
        events = read_cgroup_file(options.cgroup_root, st.control_group, "cgroup.events") or ""
        if "populated 1" in events:
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


class _ControlDir:
    """Snapshot of /run/systemd/system.control/UNIT.d to put back after runtime calls."""

    def __init__(self, root: Path, unit: str) -> None:
        self.dir = root / f"{unit}.d"
        self.before = self._read()

    def _read(self) -> dict[str, bytes]:
        try:
            return {p.name: p.read_bytes() for p in self.dir.iterdir() if p.is_file()}
        except (FileNotFoundError, NotADirectoryError):
            return {}

    def restore(self) -> None:
        for name, data in self._read().items():
            if name not in self.before:
                (self.dir / name).unlink(missing_ok=True)
            elif data != self.before[name]:
                (self.dir / name).write_bytes(self.before[name])
        if not self.before and self.dir.is_dir() and not any(self.dir.iterdir()):
            self.dir.rmdir()


async def _set_live(sd: Systemd, unit: str, props: Mapping[str, LiveValue],
                    control_root: Path) -> None:
    snapshot = _ControlDir(control_root, unit)
    try:
        await sd.set_unit_properties(unit, props, runtime=True)
    finally:
        snapshot.restore()


def _verify_cgroup(options: ApplyOptions, unit: str, control_group: str,
                   expectations: list[CgroupExpectation]) -> list[str]:
    problems = []
    contents = read_cgroup_files(options.cgroup_root, control_group,
                                 [exp.file for exp in expectations])
    for exp in expectations:
        content = contents[exp.file]
        if not exp.matches(content):
            shown = "(missing)" if content is None else repr(content.strip())
            problems.append(f"{unit}: {control_group}/{exp.file} is {shown}, "
                            f"expected {exp.expected!r}")
    return problems


async def _verify(sd: Systemd, plan: Plan, options: ApplyOptions,
                  only: set[str] | None = None) -> tuple[dict[str, list[str]],
                                                         list[PropChange]]:
    """Read back managed units (all, or `only`) in their cgroup files, found through each
    unit's ControlGroup. Where a file differs, ask systemd: a property it reports differently
    (e.g. a `systemctl set-property` value) is returned for the caller to set live and verify
    again; where systemd agrees with the plan, the kernel did not take the value: a problem.
    Returns the problems per unit and the live properties that still differ."""
    import asyncio

    problems: dict[str, list[str]] = {}
    differ: list[PropChange] = []
    managed = [(u, o) for u, o in managed_units(plan) if only is None or u.unit in only]
    groups = await asyncio.gather(*(sd.control_group(u.unit) for u, _ in managed))
    suspects: list[tuple[UnitPlan, bool]] = []
    for (u, owned), group in zip(managed, groups, strict=True):
        if not group:
            continue  # no cgroup (a drop-in for a unit that is not running)
        if _verify_cgroup(options, u.unit, group, cgroup_expectations(desired(u, owned))):
            suspects.append((u, owned))
        else:
            problems[u.unit] = []
    # The cgroup interface alone has ControlGroup and every managed property.
    states = await asyncio.gather(*(sd.get_unit_properties(u.unit, unit_interface=False)
                                    for u, _ in suspects))
    for (u, owned), st in zip(suspects, states, strict=True):
        want = desired(u, owned)
        live = st.props
        wrong = [PropChange(u.unit, p, live.get(p), v) for p, v in want.items()
                 if live.get(p) != v]
        if wrong:
            differ += wrong
            continue
        problems[u.unit] = _verify_cgroup(options, u.unit, st.control_group,
                                          cgroup_expectations(want))
    return problems, differ


async def apply_plan(config: Config, topology: Topology, options: ApplyOptions,
                     dry_run: bool = False, confirm: object = None,
                     progress: Callable[[str], None] | None = None) -> ApplyReport:
    """Apply `config` to the host; roll back and raise ApplyError on any failure.

    `confirm`, if given, is called with the Diff and returns False to cancel; `progress`, if
    given, is called with one line per phase (the CLI prints them on stderr).
    """
    say = progress or (lambda _line: None)
    from slicectl.systemd import Systemd

    unit_dir = UnitDir(options.unit_dir)
    with apply_lock(options.lock_path):
        plan, files = load_plan(config, topology, options)
        async with await Systemd.connect(options.bus_address) as sd:
            diff, states = await host_diff(sd, plan, files, options)
            report = ApplyReport(diff=diff, notes=list(diff.notes))
            if dry_run or not diff.changed:
                return report
            if callable(confirm) and not confirm(diff):
                raise ApplyError("cancelled; nothing was changed", "")
            journal: Journal | None = None
            touched: dict[str, UnitState] = {}
            try:
                if diff.files.changed:
                    say(f"writing {len(diff.files.created) + len(diff.files.updated)} file(s), "
                        f"removing {len(diff.files.removed)}"
                        + (", reloading systemd" if diff.reload else ""))
                    manifest = Manifest(placements=plan.placements(),
                                        source=Path(config.path).name)
                    _, journal = unit_dir.write(files, manifest, diff.files)
                    if diff.reload:
                        await sd.reload()
                        report.reloaded = True
                for unit in diff.start:
                    touched.setdefault(unit, states[unit])
                if diff.start:
                    say(f"starting {len(diff.start)} slice(s)")
                    report.started.extend(diff.start)  # before: a failure stops them again
                    await _start_slices(sd, plan.units[0].unit, diff.start)
                for unit in diff.stop:
                    await sd.stop_unit(unit)
                    report.stopped.append(unit)
                # Reload has applied the files to running cgroups (measured on systemd 252);
                # read everything back once, set at runtime only what still differs (e.g. a
                # `systemctl set-property` value), then read those units back again.
                say(f"verifying {len(managed_units(plan))} unit(s) in their cgroups")
                checked, remaining = await _verify(sd, plan, options)
                if remaining:
                    by_unit: dict[str, dict[str, LiveValue]] = {}
                    for c in remaining:
                        by_unit.setdefault(c.unit, {})[c.prop] = c.want
                        touched.setdefault(c.unit, states[c.unit])
                    say(f"setting {len(remaining)} live propert(ies) on {len(by_unit)} "
                        "unit(s)")
                    await _gather_all([_set_live(sd, unit, props, options.control_dir)
                                       for unit, props in by_unit.items()])
                    report.set_live = remaining
                    again, still = await _verify(sd, plan, options, set(by_unit))
                    checked.update(again)
                    for c in still:
                        checked.setdefault(c.unit, []).append(
                            f"{c.unit}: systemd reports {c.prop}={format_live(c.prop, c.live)}"
                            f", expected {format_live(c.prop, c.want)}")
                report.verified = sorted(checked)
                problems = [p for unit in sorted(checked) for p in checked[unit]]
                if problems:
                    raise ApplyError("verification failed: " + "; ".join(problems),
                                     "the kernel or systemd did not take the values; see "
                                     "`systemctl status` of the unit")
            except (SlicectlError, OSError) as e:
                say("failed: rolling back files and live properties")
                await _rollback(sd, journal, touched, report, options)
                reason = e.message if isinstance(e, SlicectlError) else str(e)
                hint = e.hint if isinstance(e, SlicectlError) else ""
                raise ApplyError(f"apply failed: {reason}; rolled back to the previous state",
                                 hint) from e
    return report


async def _start_slices(sd: Systemd, parent: str, units: list[str]) -> None:
    """Start `units` (tenant slices, maybe their parent): the parent Wants= them, so one
    StartUnit queues a job for each in one transaction. Then wait, polling one
    ListUnitsByNames call, until none has a job left, and start individually (waiting for
    the job's result, to report it) whatever did not come up. Not waiting on the first
    StartUnit spares subscribing to systemd's signals: 1.4-1.7 s instead of 1.5-2.0 s for
    101 slices in the testbed."""
    import asyncio
    import time

    await sd.start_unit(parent, wait=False)
    watched = list(dict.fromkeys([parent, *units]))
    deadline = time.monotonic() + sd.job_timeout
    rows = await sd.list_units_by_names(watched)
    while any(r.job_id for r in rows) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
        rows = await sd.list_units_by_names(watched)
    await _gather_all([sd.start_unit(r.name) for r in rows if r.active_state != "active"])


async def _gather_all(calls: list[Coroutine[Any, Any, Any]]) -> None:
    """Run calls concurrently; wait for all of them, then raise the first failure."""
    import asyncio

    results = await asyncio.gather(*calls, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r


async def _rollback(sd: Systemd, journal: Journal | None, touched: dict[str, UnitState],
                    report: ApplyReport, options: ApplyOptions) -> None:
    """Put files and live properties back exactly as they were (best effort, all units)."""
    if journal is not None:
        journal.rollback()
    try:
        if journal is not None:
            # Also without a reload during apply: units loaded since then must forget
            # the files that are now gone.
            await sd.reload()
        for unit, before in touched.items():
            now = await sd.get_unit_properties(unit)
            old = before.props
            back = {p: v for p, v in old.items() if now.props.get(p) != v}
            if back and now.control_group:
                await _set_live(sd, unit, back, options.control_dir)
            if (unit in report.started and before.active_state != "active"
                    and now.active_state in ("active", "activating", "reloading")):
                await sd.stop_unit(unit)
    except SlicectlError:
        pass  # the original error is what the user needs; the rollback did what it could
