"""Generator mode: the host's tenants placed at every boot and daemon-reload by
`slicectl-generator` (slicectl.generator) instead of files in /etc/systemd/system.

Two ways to run a host, one owner of each unit:

- **files mode** (the default): `apply` writes the units into /etc/systemd/system; they stay as
  placed until the next apply. Good for units committed to a config repo.
- **generator mode** (`slicectl generator enable`): /etc/slicectl/tenants.yaml is the source,
  the generator places it on the live topology at every boot and daemon-reload into
  /run/systemd/generator (where a file in /etc/systemd/system still wins). `apply` then writes
  /etc/slicectl/tenants.yaml (the previous one kept), records the placement, reloads and makes
  running cgroups match; a failure restores the previous tenants.yaml and reloads.

`enable` takes over the files an earlier files-mode apply wrote (kept under
/etc/slicectl/files-mode/ so that `disable` puts them back exactly), links the generator into
/etc/systemd/system-generators/, and reloads. Every step is undone, in reverse, on failure.
All of it under the unit directory's lock, the one every writer of the host takes.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from slicectl.core.errors import ApplyError, SlicectlError, shown
from slicectl.core.frozen import frozen
from slicectl.host.files import placement_record
from slicectl.host.files.owned import Undo, replace_link, write_atomically, write_folder, write_tree
from slicectl.host.files.tenantsfile import read_tenants_text
from slicectl.host.files.unitdir import MANIFEST_NAME, Manifest, UnitDir

if TYPE_CHECKING:
    from slicectl.apply.applier import ApplyOptions, ApplyReport, Confirm, Progress
    from slicectl.core.config.config import Config
    from slicectl.core.placement.topology import Topology

GENERATOR = "slicectl-generator"


@frozen
class GeneratorPaths:
    """Where generator mode keeps its files (a root other than / for tests)."""

    root: Path = Path("/")

    @property
    def etc(self) -> Path:
        return self.root / "etc/slicectl"

    @property
    def tenants(self) -> Path:
        return self.etc / "tenants.yaml"

    @property
    def previous(self) -> Path:
        return self.etc / "tenants.yaml.previous"

    @property
    def files_mode(self) -> Path:
        return self.etc / "files-mode"

    @property
    def found(self) -> Path:
        """What enable found in /etc/slicectl (tenants.yaml and its previous copy, those that
        were there), for disable to put back."""
        return self.etc / "before-generator-mode"

    @property
    def link(self) -> Path:
        return self.root / "etc/systemd/system-generators" / GENERATOR

    @property
    def output(self) -> Path:
        return self.root / "run/systemd/generator"


def enabled(paths: GeneratorPaths) -> bool:
    """Whether the host is in generator mode (the generator is linked)."""
    return paths.link.is_symlink() or paths.link.exists()


def generator_error(paths: GeneratorPaths) -> str | None:
    """Why the generator's last run fell back (its note in its output folder), or None."""
    try:
        return (paths.output / ".slicectl-generator-error").read_text().strip() or None
    except OSError:
        return None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _record(paths: GeneratorPaths, config: Config, topology: Topology, sysfs: str,
            options: ApplyOptions, generator: str, undo: Undo) -> None:
    """Place `config` (read from paths.tenants) as the generator (`generator`, the
    executable the link names) will, with its own builder, keeping the recorded placement,
    and record it as the last good one."""
    from slicectl.host.planning import generator_command, generator_files

    last = placement_record.recorded(str(paths.tenants))
    previous = Manifest.load(Path(last[0]) / MANIFEST_NAME) if last else \
        UnitDir(options.unit_dir).manifest()
    files = generator_files(config, topology, previous,
                            generator_command(generator, str(paths.tenants)),
                            options.templates, options.repack)
    fingerprint = placement_record.fingerprint(str(paths.tenants), sysfs) or b""
    if last is None:
        def forget() -> None:
            shutil.rmtree(placement_record.record_dir(str(paths.tenants)), ignore_errors=True)
        placement_record.save(str(paths.tenants), files, fingerprint)
        undo.add("the recorded placement", forget)
        return
    folder, old_print = last
    old = placement_record.recorded_files(folder)
    placement_record.save(str(paths.tenants), files, fingerprint)
    def restore() -> None:
        placement_record.save(str(paths.tenants), old, old_print)
    undo.add("the recorded placement", restore)


def _install_tenants(paths: GeneratorPaths, source: str, undo: Undo) -> None:
    """Write tenants.yaml to /etc/slicectl atomically, the one it replaces kept: generator
    mode's own copy of `source`, replaced whole (not edited, so not through tenantsfile's
    compare-and-swap) under the unit directory's lock. Taking the tenants file's lock here
    too would take the two locks in the order opposite to the TUI's (it holds the file's
    across its apply)."""
    new = read_tenants_text(source).encode()
    old = _read(paths.tenants)
    paths.etc.mkdir(parents=True, exist_ok=True)
    if old is not None and old != new:
        undo.record_contents(paths.previous, _read(paths.previous))
        write_atomically(paths.previous, old)
    undo.record_contents(paths.tenants, old)
    write_atomically(paths.tenants, new)


def _keep_what_was_there(paths: GeneratorPaths, undo: Undo) -> None:
    """The operator's own tenants.yaml (and its previous copy) as enable found them, kept for
    disable: the balancer and the exporter read /etc/slicectl/tenants.yaml by default. Kept
    once: enabling again keeps what the first enable found."""
    if paths.found.is_dir():
        return
    kept = {path.name: data for path in (paths.tenants, paths.previous)
            if (data := _read(path)) is not None}
    paths.etc.mkdir(parents=True, exist_ok=True)
    write_folder(str(paths.found), kept,
                 staging=str(paths.found.with_name(f".{paths.found.name}.{os.getpid()}")))
    undo.add(shown(paths.found), lambda: shutil.rmtree(paths.found))


def _put_back_what_was_there(paths: GeneratorPaths) -> list[str]:
    """disable's half of _keep_what_was_there: each file as enable found it, or removed
    where there was none (a host enabled before slicectl kept them: removed)."""
    done = []
    kept = placement_record.recorded_files(str(paths.found)) if paths.found.is_dir() else {}
    for path in (paths.tenants, paths.previous):
        if path.name in kept:
            if _read(path) != kept[path.name]:
                write_atomically(path, kept[path.name])
                done.append(f"restored {shown(path)} as it was before generator mode")
        elif path.exists():
            path.unlink()
            done.append(f"removed {shown(path)}")
    shutil.rmtree(paths.found, ignore_errors=True)
    return done


def _take_over(paths: GeneratorPaths, units: UnitDir, undo: Undo) -> None:
    """The files a files-mode apply wrote, moved under files-mode/ (disable restores them):
    a unit in /etc/systemd/system would win over the generator's."""
    listed = units.manifest().paths
    if not listed:
        return
    keep = {rel: (units.root / rel).read_bytes() for rel in listed
            if (units.root / rel).is_file()}
    keep[MANIFEST_NAME] = units.manifest_path.read_bytes()
    shutil.rmtree(paths.files_mode, ignore_errors=True)
    write_tree(str(paths.files_mode), keep)
    undo.add(shown(paths.files_mode), lambda: shutil.rmtree(paths.files_mode))
    _, journal = units.write({}, Manifest())
    undo.add(f"the files in {shown(units.root)}", lambda: _raise_failed(journal.rollback()))


def _raise_failed(failed: list[tuple[str | os.PathLike[str], str]]) -> None:
    if failed:
        raise ApplyError("; ".join(f"{shown(p)}: {why}" for p, why in failed), "")


def _link(paths: GeneratorPaths, executable: str, undo: Undo) -> None:
    paths.link.parent.mkdir(parents=True, exist_ok=True)
    replace_link(paths.link, executable)
    undo.add(shown(paths.link), lambda: paths.link.unlink(missing_ok=True))


async def _reload(options: ApplyOptions) -> None:
    from slicectl.host.systemd.systemd import Systemd

    async with await Systemd.connect(options.bus_address) as sd:
        await sd.reload()


async def enable(source: str, topology: Topology, sysfs: str, options: ApplyOptions,
                 paths: GeneratorPaths, executable: str,
                 progress: Progress | None = None) -> ApplyReport:
    """Switch the host to generator mode with tenants file `source`; see the module."""
    from slicectl.host.planning import load_tenants

    say = progress or (lambda _line: None)
    load_tenants(source)  # every check, before anything changes
    units = UnitDir(options.unit_dir)
    undo = Undo()
    with units.locked(options.lock_timeout):
        try:
            say(f"writing {shown(paths.tenants)}")
            _keep_what_was_there(paths, undo)
            _install_tenants(paths, source, undo)
            config = load_tenants(str(paths.tenants))
            _record(paths, config, topology, sysfs, options, executable, undo)
            say(f"taking over slicectl's files in {shown(units.root)}")
            _take_over(paths, units, undo)
            say(f"linking {shown(paths.link)} -> {executable}; reloading systemd")
            _link(paths, executable, undo)
            await _reload(options)
            return await _apply_live(config, topology, options, paths, progress)
        except (SlicectlError, OSError) as e:
            raise await _rolled_back(undo, options, e) from e


async def apply_generated(config: Config, topology: Topology, sysfs: str,
                          options: ApplyOptions, paths: GeneratorPaths, dry_run: bool = False,
                          confirm: Confirm | None = None,
                          progress: Progress | None = None) -> ApplyReport:
    """`apply` on a host in generator mode: tenants.yaml and the record replaced, a reload (the
    generator places it), running cgroups made to match; all put back on failure.
    `confirm`, if given, is called with what would change (as `plan` shows it) before anything
    does, unless nothing would, and returns False to cancel."""
    from slicectl.apply.applier import compute_diff
    from slicectl.host.planning import load_tenants

    if dry_run:
        from slicectl.apply.applier import ApplyReport

        return ApplyReport(diff=await compute_diff(config, topology, _generated(options,
                                                                                paths)))
    say = progress or (lambda _line: None)
    units = UnitDir(options.unit_dir)
    undo = Undo()
    with units.locked(options.lock_timeout):
        if confirm is not None:
            diff = await compute_diff(config, topology, _generated(options, paths))
            same = _read(paths.tenants) == read_tenants_text(config.path).encode()
            if (diff.changed or not same) and not confirm(diff):
                raise ApplyError("cancelled; nothing was changed", "")
        try:
            say(f"writing {shown(paths.tenants)} (the previous one kept)")
            _install_tenants(paths, config.path, undo)
            installed = load_tenants(str(paths.tenants), config.profile)
            _record(paths, installed, topology, sysfs, options, str(paths.link), undo)
            say("reloading systemd (the generator places the tenants)")
            await _reload(options)
            return await _apply_live(installed, topology, options, paths, progress)
        except (SlicectlError, OSError) as e:
            raise await _rolled_back(undo, options, e) from e


def _generated(options: ApplyOptions, paths: GeneratorPaths) -> ApplyOptions:
    return replace(options, unit_dir=paths.output)


async def _apply_live(config: Config, topology: Topology, options: ApplyOptions,
                      paths: GeneratorPaths, progress: Progress | None) -> ApplyReport:
    """After the reload: the generator's files are the unit directory; make running cgroups
    match them and verify, as apply does (no file to write when the generator wrote it)."""
    from slicectl.apply.applier import apply_plan

    error = generator_error(paths)
    if error is not None:
        raise ApplyError(f"the generator fell back: {error}",
                         "journalctl -b | grep slicectl-generator shows its log")
    return await apply_plan(config, topology, _generated(options, paths), progress=progress)


async def _rolled_back(undo: Undo, options: ApplyOptions, error: BaseException
                       ) -> ApplyError:
    failed = [f"{shown(what)}: {why}" for what, why in undo.rollback()]
    try:
        await _reload(options)
    except SlicectlError as e:
        failed.append(f"reloading systemd: {e}")
    reason = error.message if isinstance(error, SlicectlError) else str(error)
    if failed:
        return ApplyError(f"{reason}; could not restore: {'; '.join(failed)}",
                          "check the files named above by hand")
    return ApplyError(f"{reason}; rolled back to the previous state",
                      getattr(error, "hint", ""))


async def disable(options: ApplyOptions, paths: GeneratorPaths,
                  progress: Progress | None = None) -> list[str]:
    """Back to files mode, exactly as before `enable`: the generator unlinked, the files it
    took over restored, /etc/slicectl's tenants.yaml put back as enable found it (removed
    where there was none), the record removed; returns what it did."""
    say = progress or (lambda _line: None)
    units = UnitDir(options.unit_dir)
    done = []
    with units.locked(options.lock_timeout):
        if paths.link.is_symlink() or paths.link.exists():
            paths.link.unlink()
            done.append(f"removed {shown(paths.link)}")
        if paths.files_mode.is_dir():
            files = {rel: data.decode() for rel, data in
                     placement_record.recorded_files(str(paths.files_mode)).items()
                     if rel != MANIFEST_NAME}
            manifest = Manifest.load(paths.files_mode / MANIFEST_NAME)
            units.write(files, manifest)
            shutil.rmtree(paths.files_mode)
            done.append(f"restored {len(files)} file(s) in {shown(units.root)}")
        done.extend(_put_back_what_was_there(paths))
        record = Path(placement_record.record_dir(str(paths.tenants)))
        if record.exists():
            shutil.rmtree(record)
            done.append(f"removed {shown(record)}")
        say("reloading systemd")
        await _reload(options)
    return done
