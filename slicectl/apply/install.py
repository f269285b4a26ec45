"""Placing slicectl's own files on a host (`slicectl install`) and taking them away again
(`slicectl uninstall`), with a manifest of what was placed.

The front end decides what goes where (units, completion scripts, man pages, command links);
this module places it under a root (`/`, or an image being built) and keeps the rules:

- a path slicectl did not place (no manifest entry) is never overwritten: install refuses
  before writing anything and names every such path;
- a file slicectl placed and someone changed since (its SHA-256, or a link's target, differs
  from the manifest's) is kept and reported, by install and by uninstall alike;
- every file is written atomically (temp + rename); on an error midway everything this run
  changed is put back;
- the manifest records each file's SHA-256 (a link's target) and the folders install made, so
  uninstall removes exactly those, and a folder only once it is empty;
- everything stays under the root: a path is resolved one component at a time inside it (an
  absolute link means the root's own folder, as for `systemctl --root`), a link that would
  climb out of it is refused and never followed, and a manifest path that is not a plain path
  under the prefix (`..`, `.`, a path elsewhere) is refused before anything is removed;
- folders install makes are 0755 and files 0644, whatever the umask.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from slicectl.core.errors import InstallError, OutputError, shown
from slicectl.core.frozen import frozen
from slicectl.host.files.owned import Undo, read_tagged, replace_link, sha256, write_atomically
from slicectl.host.files.rootpath import is_folder, under_root

FORMAT = "slicectl-install/1"


@frozen
class Entry:
    """One thing install places: a file's bytes, or a symbolic link's target. `path` is
    absolute on the target host; `optional` entries (command links) are skipped, with a
    note, where something slicectl did not place is in the way."""

    path: str
    data: bytes | None = None
    link: str | None = None
    optional: bool = False


@frozen
class Step:
    """What install or uninstall did (or, dry, would do) at one path, and why."""

    action: str  # write, replace, link, unchanged, keep, skip, remove, gone, rmdir
    path: str
    detail: str = ""

    def line(self, dry_run: bool) -> str:
        verbs = {"write": "would write", "replace": "would replace", "link": "would link",
                 "remove": "would remove", "rmdir": "would remove folder"} if dry_run else {
            "write": "wrote", "replace": "replaced", "link": "linked", "remove": "removed",
            "rmdir": "removed folder"}
        verb = verbs.get(self.action, self.action)
        return f"{verb} {self.path}" + (f" {self.detail}" if self.detail else "")


@dataclass
class InstallManifest:
    """What an install placed: path → {"sha256": hex} or {"link": target}; folders it made."""

    files: dict[str, dict[str, str]] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> InstallManifest | None:
        """The manifest at `path`, None when there is none; a damaged one is an error."""
        try:
            raw = read_tagged(path.read_bytes(), FORMAT)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise InstallError(f"{shown(path)}: cannot read the install manifest: {e}",
                               "restore it from a backup, or remove it and the files it "
                               "listed by hand") from e
        if not (raw is not None
                and isinstance(raw.get("files"), dict) and isinstance(raw.get("dirs"), list)
                and all(isinstance(v, dict) and set(v) <= {"sha256", "link"} and len(v) == 1
                        for v in raw["files"].values())):
            raise InstallError(f"{shown(path)}: not a slicectl install manifest "
                               f"(format {FORMAT})",
                               "restore it from a backup, or remove it and the files it "
                               "listed by hand")
        return cls(files=dict(raw["files"]), dirs=[str(d) for d in raw["dirs"]])

    def check(self, path: Path, prefix: str) -> None:
        """Refuse a manifest listing a file outside `prefix`, or a folder neither under it nor
        above it (install makes the missing folders above the prefix too), or any path that is
        not plain (`..`, `.`, `//`): uninstall would remove it, wherever it points."""
        for listed in self.files:
            if not (_plain(listed) and listed.startswith(prefix.rstrip("/") + "/")):
                raise _bad_entry(path, listed, f"a file outside {prefix}")
        for folder in self.dirs:
            if not (_plain(folder) and (folder.startswith(prefix.rstrip("/") + "/")
                                        or f"{prefix}/".startswith(folder + "/"))):
                raise _bad_entry(path, folder, f"a folder neither under nor above {prefix}")

    def text(self) -> str:
        return json.dumps({"format": FORMAT, "files": dict(sorted(self.files.items())),
                           "dirs": sorted(self.dirs)}, indent=2) + "\n"


def _plain(path: str) -> bool:
    """An absolute path with no `..`, `.` or empty component, nor a control character."""
    return (path.startswith("/") and path != "/" and os.path.normpath(path) == path
            and not path.startswith("//") and ".." not in path.split("/")
            and path.isprintable())


def _bad_entry(manifest: Path, listed: str, what: str) -> InstallError:
    return InstallError(f"{shown(manifest)} lists {shown(listed)!r}, {what}: refusing to "
                        "install or uninstall anything",
                        "the manifest was edited or damaged: restore it from a backup, or "
                        "remove that entry (and the file, by hand, if it is slicectl's)")


def _state(real: Path) -> dict[str, str] | None:
    """What is at `real` now, in the manifest's terms; {"other": kind} for anything else."""
    if real.is_symlink():
        return {"link": os.readlink(real)}
    if real.is_file():
        return {"sha256": sha256(real.read_bytes())}
    if real.exists():
        return {"other": "a folder" if real.is_dir() else "not a regular file"}
    return None


def _wanted(entry: Entry) -> dict[str, str]:
    if entry.link is not None:
        return {"link": entry.link}
    return {"sha256": sha256(entry.data or b"")}


def _plan(root: Path, entries: Iterable[Entry], old: InstallManifest
          ) -> tuple[list[tuple[Step, Entry | None]], list[str]]:
    """The steps of an install, each with the entry it writes, and the paths in the way."""
    steps: list[tuple[Step, Entry | None]] = []
    foreign: list[str] = []
    wanted_paths = set()
    for entry in entries:
        wanted_paths.add(entry.path)
        now = _state(under_root(root, entry.path))
        recorded = old.files.get(entry.path)
        if now is None:
            steps.append((Step("link" if entry.link else "write", entry.path,
                               f"-> {entry.link}" if entry.link else ""), entry))
        elif recorded is None:
            if entry.optional:
                steps.append((Step("skip", entry.path, "(not slicectl's: left alone)"), None))
            else:
                foreign.append(entry.path)
        elif now != recorded:
            steps.append((Step("keep", entry.path, "(changed since slicectl installed it: "
                               "not replaced)"), None))
        elif now == _wanted(entry):
            steps.append((Step("unchanged", entry.path), entry))
        else:
            steps.append((Step("link" if entry.link else "replace", entry.path,
                               f"-> {entry.link}" if entry.link else ""), entry))
    for path, recorded in sorted(old.files.items()):
        if path in wanted_paths:
            continue
        now = _state(under_root(root, path))
        if now is None:
            continue
        steps.append((Step("remove", path, "(no longer installed)") if now == recorded else
                      Step("keep", path, "(no longer installed, but changed since slicectl "
                           "installed it: not removed)"), None))
    return steps, foreign


def _make_dirs(root: Path, path: str, made: list[str], undo: Undo) -> None:
    """The folders above `path` that are missing, made 0755 (whatever the umask: the units
    and pages in them are for every user) and recorded (target paths)."""
    missing = []
    parent = Path(path).parent
    while not is_folder(under_root(root, str(parent), follow=True)):
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        real = under_root(root, str(folder), follow=True)
        real.mkdir(mode=0o755)
        undo.record_folders([real])
        made.append(str(folder))
        os.chmod(real, 0o755)


def _loaded(root: Path, manifest: str, prefix: str) -> InstallManifest | None:
    """The manifest at target path `manifest`, its paths checked against `prefix`."""
    real = under_root(root, manifest)
    old = InstallManifest.load(real)
    if old is not None:
        old.check(real, prefix)
    return old


def install(root: Path, entries: list[Entry], manifest: str, *, prefix: str,
            dry_run: bool = False) -> list[Step]:
    """Place `entries` under `root` and record them in the manifest at target path
    `manifest` (under `prefix`); see the module for the rules. Returns the steps, in order.
    Every path is resolved, and refused if it leads out of `root`, before anything is
    written."""
    manifest_real = under_root(root, manifest)
    old = _loaded(root, manifest, prefix) or InstallManifest()
    steps, foreign = _plan(root, entries, old)
    if foreign:
        raise InstallError(
            "not installed: slicectl did not place " + ", ".join(map(shown, foreign)) +
            " and never overwrites such a file",
            "move it away (it may be an earlier copy made by hand), or install into "
            "another --prefix")
    for folder in {str(Path(step.path).parent) for step, _ in steps} | {
            str(Path(manifest).parent)}:
        under_root(root, folder, follow=True)  # refused here, before any write, if it leads out
    if dry_run:
        return [step for step, _ in steps]
    undo = Undo()
    try:
        new = _carry_out(root, steps, old, undo)
        _make_dirs(root, manifest, new.dirs, undo)
        undo.record(manifest_real)
        write_atomically(manifest_real, new.text(), 0o644)
    except (InstallError, OutputError) as e:  # a link changed since the paths were resolved
        failed = _rolled_back(undo)
        raise InstallError(e.message + ("; could not put back: " + "; ".join(failed) if failed
                                        else "; nothing was changed"), e.hint) from e
    except OSError as e:
        failed = _rolled_back(undo)
        why = f"{shown(e.filename or '')}: {e.strerror}" if e.filename else str(e)
        if failed:
            raise InstallError(f"install failed ({why}); could not put back: "
                               + "; ".join(failed), "check the files named above by hand"
                               ) from e
        raise InstallError(f"install failed: {why}; nothing was changed",
                           "run as root, or give --root DIR / --prefix DIR to install "
                           "somewhere you may write" if e.errno in (1, 13, 30) else "") from e
    return [step for step, _ in steps]


def _rolled_back(undo: Undo) -> list[str]:
    """Everything this run changed put back; what could not be, each with why."""
    return [f"{shown(what)}: {why}" for what, why in undo.rollback()]


def _carry_out(root: Path, steps: list[tuple[Step, Entry | None]], old: InstallManifest,
               undo: Undo) -> InstallManifest:
    """Write, link and remove as the steps say, each change recorded in `undo`; returns the
    new manifest (the manifest file itself is the caller's)."""
    new = InstallManifest(dirs=[d for d in old.dirs if is_folder(under_root(root, d, follow=True))])
    for step, entry in steps:
        real = under_root(root, step.path)
        if step.action in ("keep", "skip"):
            if step.path in old.files:
                new.files[step.path] = old.files[step.path]
            continue
        if step.action == "remove":
            undo.record(real)
            real.unlink()
            continue
        assert entry is not None
        new.files[entry.path] = _wanted(entry)
        if step.action == "unchanged":
            continue
        _make_dirs(root, entry.path, new.dirs, undo)
        undo.record(real)
        if entry.link is not None:
            replace_link(real, entry.link)
        else:
            write_atomically(real, entry.data or b"", 0o644)
    return new


def uninstall(root: Path, manifest: str, *, prefix: str, dry_run: bool = False
              ) -> list[Step]:
    """Remove what the install recorded in the manifest at target path `manifest` (under
    `prefix`): files still as placed, then the folders it made once empty, then the manifest.
    A file changed since is kept (a "keep" step); nothing else is touched. A manifest path
    outside the prefix, or one that leads out of `root`, is refused before anything is
    removed."""
    manifest_real = under_root(root, manifest)
    old = _loaded(root, manifest, prefix)
    if old is None:
        raise InstallError(f"nothing to uninstall: no install manifest at {shown(manifest_real)}",
                           "give the --prefix and --root that install was given")
    files = {path: under_root(root, path) for path in sorted(old.files)}
    folders = {folder: under_root(root, folder, follow=True) for folder in old.dirs}
    try:
        return _uninstall(old, files, folders, (manifest, manifest_real), dry_run)
    except OSError as e:
        raise InstallError(f"uninstall stopped: {shown(e.filename or '')}: {e.strerror}; "
                           "what it removed before is gone, the manifest still lists it all",
                           "run as root, then run uninstall again" if e.errno in (1, 13, 30)
                           else "fix the cause, then run uninstall again") from e


def _uninstall(old: InstallManifest, files: dict[str, Path], folders: dict[str, Path],
               manifest: tuple[str, Path], dry_run: bool) -> list[Step]:
    """Uninstall's removals, every path already resolved under the root."""
    steps = []
    for path, real in files.items():
        recorded = old.files[path]
        now = _state(real)
        if now is None:
            steps.append(Step("gone", path, "(already removed)"))
        elif now != recorded:
            steps.append(Step("keep", path, "(changed since slicectl installed it: not "
                              "removed)"))
        else:
            steps.append(Step("remove", path))
            if not dry_run:
                real.unlink()
    steps.append(Step("remove", manifest[0]))
    if not dry_run:
        manifest[1].unlink()
    gone = {step.path for step in steps if step.action in ("remove", "gone")}
    for folder in sorted(folders, key=lambda d: d.count("/"), reverse=True):
        real = folders[folder]
        left = ({str(Path(folder, name)) for name in os.listdir(real)} if is_folder(real)
                else None)
        if left is not None and (not left or dry_run and left <= gone):
            steps.append(Step("rmdir", folder))
            gone.add(folder)
            if not dry_run:
                real.rmdir()
    return steps
