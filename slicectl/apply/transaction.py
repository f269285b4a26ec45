"""One apply's changes to the host, and putting them back: files, live properties, slices.

A Transaction records what it is about to change before changing it (the unit directory's
journal, each unit's live state before its first change, the slices it started), so
`rollback` restores exactly what was there: a property that was unset becomes unset again.
A rollback step that fails does not stop the others; every failure is returned, so the user
learns what could not be restored.

The cgroup files apply writes itself (cpuset.cpus.exclusive: slicectl.apply.partitions) are
recorded byte for byte before their first write and written back in reverse order; the
partition state of slicectl's slices (cpuset.cpus.partition), which systemd may not write
back when a property returns to unset (as with AllowedCPUs=, systemd#43846), is read after
the live properties are restored and written back where it differs. Both are read again, and
any byte that differs is reported as not restored.

Files outside cgroupfs follow the same rule (slicectl.apply.isolation): the kernel files
that steer noise off isolated CPUs (an IRQ's `smp_affinity_list`, the unbound workqueues'
mask) and slicectl's own files beside them (the isolation record, irqbalance's drop-in) are
recorded before their first change ("absent" included), put back last first, and read again;
a unit whose drop-in changed (irqbalance) is restarted once its files are back.

Runtime `SetUnitProperties` writes /run/systemd/system.control/UNIT.d/50-PROPERTY.conf;
slicectl puts that directory back exactly as it found it afterwards, so none of its runtime
calls lingers as a stale override of its own files (DESIGN §6).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from slicectl.core import defaults
from slicectl.core.errors import SlicectlError
from slicectl.core.properties.kinds import LiveValue
from slicectl.core.properties.partition import PartitionState
from slicectl.host.cgroup.cgroupfs import read_cgroup_bytes, write_cgroup_file
from slicectl.host.files.lock import make_dirs
from slicectl.host.files.owned import Undo, write_atomically
from slicectl.host.files.unitdir import FileChanges, Manifest, UnitDir
from slicectl.host.isolation.kernelfiles import read_kernel_file, write_kernel_file

if TYPE_CHECKING:
    from slicectl.host.systemd.systemd import Systemd, UnitState


class ControlDir:
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


async def set_live(sd: Systemd, unit: str, props: Mapping[str, LiveValue],
                   control_root: Path) -> None:
    """SetUnitProperties at runtime, leaving system.control/UNIT.d as it was."""
    snapshot = ControlDir(control_root, unit)
    try:
        await sd.set_unit_properties(unit, props, runtime=True)
    finally:
        snapshot.restore()


def _read_own(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _replace(path: Path, data: bytes | None) -> None:
    """Write one of slicectl's own files atomically, or remove it (None) and its folder
    when that is left empty (a drop-in folder slicectl made)."""
    if data is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, data, 0o644)
        return
    path.unlink(missing_ok=True)
    try:
        path.parent.rmdir()
    except OSError:
        pass  # not empty, or not ours to remove


@dataclass
class Transaction:
    """The changes of one apply so far, and how to undo them."""

    sd: Systemd
    unit_dir: UnitDir
    control_root: Path
    journal: Undo | None = None  # the unit directory's write
    before: dict[str, UnitState] = field(default_factory=dict)  # live state before changes
    started: list[str] = field(default_factory=list)
    reloaded: bool = False
    cgroup_root: Path = Path(defaults.CGROUP_ROOT)
    # (ControlGroup, file) -> its bytes before this apply's first write, in write order
    cgroup_before: dict[tuple[str, str], bytes] = field(default_factory=dict)
    # ControlGroup -> cpuset.cpus.partition before any change (slicectl's slices)
    partitions_before: dict[str, str] = field(default_factory=dict)
    # procfs/sysfs files -> their bytes before this apply's first write, in write order
    kernel_before: dict[Path, bytes] = field(default_factory=dict)
    # slicectl's own files outside the unit directory: how to put them back (the one undo
    # journal of slicectl's files), and their bytes before (None: absent) to read them again
    own_files: Undo = field(default_factory=Undo)
    own_before: dict[Path, bytes | None] = field(default_factory=dict)
    restart: list[str] = field(default_factory=list)  # restarted after their files are back

    def touch(self, unit: str, state: UnitState) -> None:
        """Remember `unit`'s live state before the first change to it."""
        self.before.setdefault(unit, state)

    def write_cgroup(self, group: str, name: str, data: bytes) -> None:
        """Write a cgroup file, its bytes recorded first (a missing file raises)."""
        key = (group, name)
        if key not in self.cgroup_before:
            before = read_cgroup_bytes(self.cgroup_root, group, name)
            if before is None:
                raise FileNotFoundError(f"{group}/{name}: no such cgroup file")
            self.cgroup_before[key] = before
        write_cgroup_file(self.cgroup_root, group, name, data)

    def write_kernel(self, path: Path, data: bytes) -> None:
        """Write a procfs or sysfs file (an IRQ's affinity, the workqueue mask), its bytes
        recorded first (a missing file raises)."""
        if path not in self.kernel_before:
            before = read_kernel_file(path)
            if before is None:
                raise FileNotFoundError(f"{path}: no such file")
            self.kernel_before[path] = before
        write_kernel_file(path, data)

    def replace_file(self, path: Path, data: bytes | None) -> None:
        """Replace one of slicectl's own files outside the unit directory atomically (None:
        remove it), its bytes (or its absence) recorded first."""
        if path not in self.own_before:
            before = _read_own(path)
            self.own_before[path] = before
            if data is not None:
                # Folders first: rollback, last first, puts the file back before it removes
                # the folders made for it.
                self.own_files.record_folders(make_dirs(path.parent))
            self.own_files.record_contents(path, before, 0o644)
        _replace(path, data)

    async def write_files(self, files: Mapping[str, str], manifest: Manifest,
                          changes: FileChanges, reload: bool) -> None:
        """Write the unit directory (atomically, journaled), then reload systemd if asked."""
        _, self.journal = self.unit_dir.write(files, manifest, changes)
        if reload:
            await self.sd.reload()
            self.reloaded = True

    async def set_live(self, unit: str, props: Mapping[str, LiveValue]) -> None:
        """Set properties of a unit whose state before was `touch`ed."""
        await set_live(self.sd, unit, props, self.control_root)

    async def rollback(self) -> list[str]:
        """Put files and live properties back exactly as they were, and stop the slices this
        apply started; returns what could not be restored (empty: everything was)."""
        failures: list[str] = []
        if self.journal is not None:
            failures += [f"{path}: {why}" for path, why in self.journal.rollback()]
            try:
                # Also without a reload during apply: units loaded since then must forget
                # the files that are now gone.
                await self.sd.reload()
            except SlicectlError as e:
                failures.append(f"reloading systemd: {e.message}")
        for unit, before in self.before.items():
            try:
                await self._restore(unit, before)
            except SlicectlError as e:
                failures.append(f"{unit}: {e.message}")
        failures += self._restore_cgroup_files()
        failures += self._restore_host_files()
        if self.restart:
            failures += await self._restart()
        for unit in self.started:
            if unit not in self.before:  # a timer: it was not running before
                try:
                    await self.sd.stop_unit(unit)
                except SlicectlError as e:
                    failures.append(f"{unit}: {e.message}")
        return failures

    def _restore_cgroup_files(self) -> list[str]:
        """Write back the cgroup files this apply wrote (last first), then the partition
        state of slicectl's slices where the kernel shows another; read all again."""
        failures: list[str] = []
        for (group, name), data in reversed(self.cgroup_before.items()):
            self._write_back(group, name, data, failures)
        for group, text in self.partitions_before.items():
            now = read_cgroup_bytes(self.cgroup_root, group, "cpuset.cpus.partition")
            if now is not None and now.decode(errors="replace") != text:
                # The state word alone is what the kernel takes ("isolated", not its
                # "invalid (reason)"); the kernel decides validity again.
                word = PartitionState.parse(text).state.encode() + b"\n"
                self._write_back(group, "cpuset.cpus.partition", word, failures)
        for (group, name), data in self.cgroup_before.items():
            now = read_cgroup_bytes(self.cgroup_root, group, name)
            if now is not None and now != data:
                failures.append(f"{group}/{name}: reads {now!r}, was {data!r}")
        for group, text in self.partitions_before.items():
            now = read_cgroup_bytes(self.cgroup_root, group, "cpuset.cpus.partition")
            if now is not None and now.decode(errors="replace") != text:
                failures.append(f"{group}/cpuset.cpus.partition: reads {now.decode()!r}, "
                                f"was {text!r}")
        return failures

    def _restore_host_files(self) -> list[str]:
        """Put back the procfs/sysfs files this apply changed (last first; only where they
        differ: a kernel file the kernel refused to change is left), then slicectl's own
        files (their Undo); then read all again."""
        failures: list[str] = []
        for path, data in reversed(self.kernel_before.items()):
            if read_kernel_file(path) == data:
                continue
            try:
                write_kernel_file(path, data)
            except FileNotFoundError:
                pass  # the IRQ is gone (its device went away): nothing to put back
            except OSError as e:
                failures.append(f"{path}: writing {data!r} back: {e.strerror or e}")
        failures += [f"{path}: putting it back: {why}"
                     for path, why in self.own_files.rollback()]
        for path, data in self.kernel_before.items():
            now = read_kernel_file(path)
            if now is not None and now != data:
                failures.append(f"{path}: reads {now!r}, was {data!r}")
        for own, before in self.own_before.items():
            now = _read_own(own)
            if now != before:
                failures.append(f"{own}: reads {now!r}, was {before!r}")
        return failures

    async def _restart(self) -> list[str]:
        """Reload (their drop-ins changed back), then restart the units in `restart`."""
        failures: list[str] = []
        try:
            await self.sd.reload()
            for unit in dict.fromkeys(self.restart):
                await self.sd.restart_unit(unit)
        except SlicectlError as e:
            failures.append(f"restarting {', '.join(self.restart)}: {e.message}")
        return failures

    def _write_back(self, group: str, name: str, data: bytes, failures: list[str]) -> None:
        try:
            write_cgroup_file(self.cgroup_root, group, name, data)
        except FileNotFoundError:
            pass  # the cgroup is gone (its slice was stopped): its file went with it
        except OSError as e:
            failures.append(f"{group}/{name}: writing {data!r} back: {e.strerror or e}")

    async def _restore(self, unit: str, before: UnitState) -> None:
        now = await self.sd.get_unit_properties(unit)
        back = {p: v for p, v in before.props.items() if now.props.get(p) != v}
        if back and now.control_group:
            await set_live(self.sd, unit, back, self.control_root)
        if (unit in self.started and before.active_state != "active"
                and now.active_state in ("active", "activating", "reloading")):
            await self.sd.stop_unit(unit)
