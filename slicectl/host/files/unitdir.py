"""A directory of unit files that slicectl owns part of (an `--out DIR`, /etc/systemd/system).

slicectl records what it generated, with each file's SHA-256, in a manifest and only ever
writes, replaces or removes files listed there, and only while they still hold what slicectl
wrote (a file edited by hand is refused unless `--force`). Any other file is left alone, a
planned path already taken by a file slicectl did not generate is an error, and a symbolic
link is never written through or replaced. Changes are transactional: every file is written to
a temporary name and renamed into place, the previous contents are kept, and on any error all
changes are undone (folders made, parents of the directory included), so nothing half-written
is ever left behind. One run at a time per directory: `UnitDir.locked()` (slicectl.host.files.lock).

Why this module runs past 400 lines: the manifest, the hash checks and the transaction (write,
keep the previous contents, undo) act on the same records and must agree on them; the lock
stands alone and is in `lock`; the digest, the atomic writes and the undo journal are
`owned`'s, the one owner of how slicectl writes and puts back its files.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import field
from pathlib import Path
from typing import Any

from slicectl import __version__
from slicectl.core.config.parsers import UNIT_NAME_RE
from slicectl.core.cpulist import format_cpulist, parse_cpulist
from slicectl.core.defaults import MANIFEST_NAME as MANIFEST_NAME  # re-exported
from slicectl.core.errors import LockTimeout, OutputError, shown
from slicectl.core.frozen import frozen
from slicectl.core.plan import DROPIN_NAME
from slicectl.host.files import owned
from slicectl.host.files.lock import LOCK_TIMEOUT, locked_dir, make_dirs
from slicectl.host.files.owned import Undo, read_regular_file, read_tagged, sha256

MANIFEST_FORMAT = "slicectl-manifest/1"
# Every unit type systemd knows (systemd.unit(5)): slicectl writes slices, drop-ins for
# services and scopes, the schedule's timers and service, and a drop-in for timers.target.
SYSTEMD_UNIT_TYPES = frozenset({"service", "socket", "device", "mount", "automount", "swap",
                                "target", "path", "timer", "slice", "scope"})


def generated_path(rel: str) -> bool:
    """True if slicectl could have generated `rel`: a unit file or its slicectl drop-in."""
    unit, slash, name = rel.partition("/")
    if slash:
        if name != DROPIN_NAME or not unit.endswith(".d"):
            return False
        unit = unit.removesuffix(".d")
    return (len(unit) <= 255 and UNIT_NAME_RE.fullmatch(unit) is not None
            and unit.rsplit(".", 1)[1] in SYSTEMD_UNIT_TYPES)


def read_regular(path: Path) -> bytes | None:
    """The bytes of the regular file at `path`, None if nothing is there.

    Never follows a symbolic link and never blocks on a FIFO: a link, a folder or any other
    kind of file there is refused, naming the path.
    """
    try:
        return read_regular_file(path)
    except FileNotFoundError:
        return None
    except IsADirectoryError as e:
        raise _not_a_file(path, "a folder") from e
    except OSError as e:
        if os.path.islink(path):
            raise _symlink_error(path) from e
        if e.errno == errno.EINVAL:  # opened, but not a regular file
            raise _not_a_file(path, "not a regular file") from e
        raise OutputError(f"{shown(path)}: cannot read: {e.strerror}",
                          "check permissions of the output directory") from e


def _not_a_file(path: Path, kind: str) -> OutputError:
    return OutputError(f"{shown(path)} is {kind}, where slicectl writes a unit file",
                       "slicectl never replaces what it did not write: move it away, then "
                       "run again")


def _symlink_error(path: Path) -> OutputError:
    try:
        target = f" (to {shown(os.readlink(path))})"
    except OSError:
        target = ""
    return OutputError(
        f"{shown(path)} is a symbolic link{target}; slicectl never writes through or replaces "
        "a link it did not make",
        "move the link away, then run again (the settings of a unit slicectl should manage "
        "belong in tenants.yaml)")


def _edited_error(path: Path, manifest: Path, action: str) -> OutputError:
    """`action`: "replace" or "remove"."""
    return OutputError(
        f"{shown(path)} was changed since slicectl generated it (it no longer matches its "
        f"SHA-256 in {shown(manifest)}); not {action.removesuffix('e')}ing it",
        "move the change into tenants.yaml, or into a drop-in of your own that sorts after "
        "slicectl's (e.g. UNIT.d/60-local.conf); then remove the file, or run again with "
        f"--force (`slicectl generate --force`, `slicectl apply --force`) to {action} it")


@frozen
class Manifest:
    """What slicectl generated in a directory, and where it placed each tenant."""

    files: Mapping[str, str] = field(default_factory=dict)  # relative path → sha256
    placements: Mapping[str, frozenset[int]] = field(default_factory=dict)
    source: str = ""
    # While a write is under way: the digest each changing file will have once it is done.
    # A write that stopped half-way (a kill, a power cut) leaves each file old or new, and
    # this says both are slicectl's; the write's last step drops it.
    pending: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = {
            "format": MANIFEST_FORMAT,
            "generator": f"slicectl {__version__}",
            "source": shown(self.source),  # any file name, as UTF-8 text on one line
            "files": dict(sorted(self.files.items())),
            "placements": {k: format_cpulist(v) for k, v in sorted(self.placements.items())},
        }
        if self.pending:
            data["pending"] = dict(sorted(self.pending.items()))
        return data

    @property
    def paths(self) -> frozenset[str]:
        """Every file slicectl may have left in the directory (pending ones included)."""
        return frozenset(self.files) | frozenset(self.pending)

    def ours(self, rel: str, digest: str) -> bool:
        """True if a file `rel` whose content has `digest` is as slicectl left it."""
        return digest in (self.files.get(rel), self.pending.get(rel))

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """Read a manifest; a missing file is an empty manifest (a symlink is refused)."""
        raw = read_regular(path)
        return cls() if raw is None else cls.parse(raw, path)

    @classmethod
    def parse(cls, raw: bytes, path: Path) -> Manifest:
        """The manifest in `raw`, the bytes of file `path` (named in errors)."""
        try:
            data = read_tagged(raw, MANIFEST_FORMAT)
        except ValueError as e:  # UnicodeDecodeError and JSONDecodeError
            raise OutputError(f"{shown(path)}: cannot read slicectl's manifest: {e}",
                              "restore it from version control, or remove it and the files "
                              "slicectl generated, then run again") from e
        if data is None:
            raise OutputError(f"{shown(path)}: not a slicectl manifest",
                              "remove or rename the file; slicectl writes it itself")
        try:
            return cls(files=_string_map(data.get("files", {})),
                       placements={k: parse_cpulist(v)
                                   for k, v in _string_map(data.get("placements", {})).items()},
                       source=str(data.get("source", "")),
                       pending=_string_map(data.get("pending", {})))
        except (TypeError, ValueError) as e:
            raise OutputError(f"{shown(path)}: malformed slicectl manifest: {e}",
                              "remove it and the files slicectl generated, then run again"
                              ) from e


def _string_map(value: object) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise TypeError(f"expected an object of strings, got {json.dumps(value)[:80]}")
    return value


@frozen
class FileChanges:
    """What writing a set of files would do to a directory."""

    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    # Entries of a damaged manifest that `force` drops (their files are left alone).
    forgotten: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.removed or self.forgotten)


class UnitDir:
    """The unit directory slicectl writes into, with its manifest."""

    def __init__(self, root: Path, manifest_path: Path | None = None) -> None:
        self.root = root
        self.manifest_path = manifest_path or root / MANIFEST_NAME
        self._manifest: Manifest | None = None

    def manifest(self) -> Manifest:
        """The manifest, read once until this UnitDir writes it (read it under `locked`)."""
        if self._manifest is None:
            self._manifest = Manifest.load(self.manifest_path)
        return self._manifest

    @contextmanager
    def locked(self, timeout: float = LOCK_TIMEOUT,
               on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
        """Hold the directory's lock (slicectl.host.files.lock) for read manifest → plan → write.

        Makes the directory if needed and removes what it made if the block leaves it empty.
        Waits up to `timeout` seconds for another run, calling `on_wait(holder)` once.
        """
        with ExitStack() as stack:
            try:
                stack.enter_context(locked_dir(self.root, timeout, on_wait))
            except LockTimeout as e:
                raise OutputError(
                    f"{shown(self.root)} is in use by {e.holder}: gave up after waiting "
                    f"{timeout:g} s",
                    "slicectl writes a directory one run at a time, so that its manifest "
                    "matches its files: let that run finish, then run again") from None
            except OSError as e:
                raise OutputError(
                    f"cannot use {shown(e.filename or self.root)} as the unit directory: "
                    f"{e.strerror}",
                    "give a folder (or a path where one can be made) that you can write") from e
            yield

    def _target(self, rel: str) -> Path:
        if rel.startswith("/") or ".." in rel.split("/"):
            raise OutputError(f"refusing to write outside {shown(self.root)}: {shown(rel)}",
                              "this is a bug in slicectl; please report it")
        return self.root / rel

    def _check_folders(self, rel: str) -> None:
        """The folders between the root and `rel` must be real folders (or not exist yet)."""
        folder = self.root
        for part in rel.rstrip("/").split("/")[:-1]:
            if not part or part == ".":
                continue  # as Path(rel).parts reads "a//b" and "./a"
            folder = folder / part
            try:
                st = os.lstat(folder)
            except FileNotFoundError:
                return
            except OSError as e:
                raise OutputError(f"{shown(folder)}: cannot read: {e.strerror}",
                                  "check permissions of the output directory") from e
            if stat.S_ISLNK(st.st_mode):
                raise _symlink_error(folder)
            if not stat.S_ISDIR(st.st_mode):
                raise OutputError(f"{shown(folder)} is not a folder, where slicectl writes "
                                  f"{shown(self.root / rel)}",
                                  "slicectl never replaces what it did not write: move it "
                                  "away, then run again")

    def _listed(self, force: bool) -> tuple[dict[str, str], tuple[str, ...]]:
        """The manifest's files that slicectl could have written, and (with `force`) those
        it could not have, which are forgotten; without `force` such an entry is an error."""
        listed: dict[str, str] = {}
        forgotten: list[str] = []
        manifest = self.manifest()
        for rel, digest in sorted({**manifest.pending, **manifest.files}.items()):
            if generated_path(rel):
                listed[rel] = digest
            elif force:
                forgotten.append(rel)
            else:
                outside = rel.startswith("/") or ".." in rel.split("/")
                raise OutputError(
                    f"{shown(self.manifest_path)} lists {shown(rel)!r}, "
                    + (f"which is outside {shown(self.root)}" if outside else
                       "which is not a file slicectl generates (a unit file or its "
                       f"UNIT.d/{DROPIN_NAME})"),
                    "the manifest was edited or damaged: restore it, or run with --force to "
                    "drop that entry (slicectl leaves the file itself alone)")
        return listed, tuple(forgotten)

    def _compare(self, rel: str, new: bytes, recorded: str | None, force: bool) -> str:
        """"created", "updated" or "unchanged"; raises if the path is not slicectl's to write."""
        path = self._target(rel)
        self._check_folders(rel)
        current = read_regular(path)
        if current is None:
            return "created"
        if recorded is None:
            raise OutputError(
                f"{shown(path)} exists and was not generated by slicectl",
                "slicectl never edits files it did not generate: move that file away, "
                "or merge its settings into tenants.yaml",
            )
        if current == new:
            return "unchanged"
        if not self.manifest().ours(rel, sha256(current)) and not force:
            raise _edited_error(path, self.manifest_path, "replace")
        return "updated"

    def _removable(self, rel: str, recorded: str, force: bool) -> bool:
        """True if slicectl's file `rel` is there to remove; raises if it was edited."""
        path = self._target(rel)
        self._check_folders(rel)
        current = read_regular(path)
        if current is None:
            return False
        if not self.manifest().ours(rel, sha256(current)) and not force:
            raise _edited_error(path, self.manifest_path, "remove")
        return True

    def diff(self, files: Mapping[str, str], *, force: bool = False) -> FileChanges:
        """Compare planned files with the directory; raises if a path is not slicectl's, or
        (unless `force`) if a file slicectl would replace or remove was changed by hand."""
        listed, forgotten = self._listed(force)
        changes: dict[str, list[str]] = {"created": [], "updated": [], "unchanged": []}
        for rel in sorted(files):
            changes[self._compare(rel, files[rel].encode(), listed.get(rel), force)].append(rel)
        removed = [rel for rel in listed
                   if rel not in files and self._removable(rel, listed[rel], force)]
        return FileChanges(tuple(changes["created"]), tuple(changes["updated"]),
                           tuple(removed), tuple(changes["unchanged"]), forgotten)

    def write(self, files: Mapping[str, str], manifest: Manifest,
              changes: FileChanges | None = None, *,
              force: bool = False) -> tuple[FileChanges, Undo]:
        """Make the directory hold exactly `files` (of slicectl's); all or nothing.

        `changes` is the caller's diff of these files, just taken (else diffed here, with
        `force`). Returns the changes and the journal of the write (owned.Undo), which the
        caller may roll back later (apply does, when systemd refuses the new configuration).
        """
        if changes is None:
            changes = self.diff(files, force=force)
        journal = Undo()
        try:
            journal.record_folders(make_dirs(self.root))
            self._remove_stale_temporaries(files, changes)
            if changes.created or changes.updated:
                self._write_intent(files, changes, journal)
            self._write_files(files, changes, journal)
            self._remove_files(changes, journal)
            self._write_manifest(files, manifest, journal)
        except BaseException as e:
            journal.rollback()
            if not isinstance(e, OSError):
                raise
            raise OutputError(
                f"cannot write {shown(e.filename or self.root)}: {e.strerror}; nothing was "
                "changed",
                f"check that {shown(self.root)} is writable (permissions, read-only file "
                "system, free space)",
            ) from e
        return changes, journal

    def _write_files(self, files: Mapping[str, str], changes: FileChanges,
                     journal: Undo) -> None:
        writes: list[tuple[Path, bytes]] = []
        new: set[Path] = set()
        folders = {self.root}
        updated = set(changes.updated)
        for rel in changes.created + changes.updated:
            path = self._target(rel)
            if path.parent not in folders:
                journal.record_folders(make_dirs(path.parent))
                folders.add(path.parent)
            if rel in updated:
                journal.record_contents(path, read_regular(path))
            else:  # the diff just found no file there
                journal.record_contents(path, None)
                new.add(path)
            writes.append((path, files[rel].encode()))
        owned.write_many(writes, new)

    def _remove_files(self, changes: FileChanges, journal: Undo) -> None:
        for rel in changes.removed:
            path = self._target(rel)
            journal.record_contents(path, read_regular(path))
            path.unlink()
            if path.parent != self.root and not any(path.parent.iterdir()):
                path.parent.rmdir()

    def _write_intent(self, files: Mapping[str, str], changes: FileChanges,
                      journal: Undo) -> None:
        """Before any file changes, record in the manifest the digests the created and updated
        files will have (`pending`): whatever moment the write stops at, every file is one the
        manifest names as slicectl's, and the next run replaces or removes it."""
        old = self.manifest()
        pending = {rel: sha256(files[rel].encode())
                   for rel in (*changes.created, *changes.updated)}
        self._manifest = None
        self._replace_manifest(json_bytes(Manifest(
            files=old.files, placements=old.placements, source=old.source,
            pending=pending).to_json()), journal)

    def _remove_stale_temporaries(self, files: Mapping[str, str],
                                  changes: FileChanges) -> None:
        """Remove the temporary files a write cut short by a power cut left
        (slicectl.host.files.owned names them `.NAME.RANDOM.slicectl-tmp`, beside the file they
        were to replace)."""
        needed = {self._target(rel).parent for rel in files}
        folders = needed | {self._target(rel).parent
                            for rel in (*self.manifest().paths, *changes.removed)
                            if generated_path(rel)}
        for folder in folders:
            stale = list(folder.glob(f".*{owned.TEMP_SUFFIX}"))
            for path in stale:
                path.unlink(missing_ok=True)
            if stale and folder not in needed and folder != self.root:
                with suppress(OSError):  # not empty: someone else's file is there
                    folder.rmdir()

    def _replace_manifest(self, text: bytes, journal: Undo) -> None:
        journal.record_folders(make_dirs(self.manifest_path.parent))
        old = read_regular(self.manifest_path)
        if old != text:
            journal.record_contents(self.manifest_path, old)
            owned.write_atomically(self.manifest_path, text)

    def _write_manifest(self, files: Mapping[str, str], manifest: Manifest,
                        journal: Undo) -> None:
        """Write the manifest if it would change (a stale entry for a file someone removed
        is dropped too)."""
        self._manifest = None  # read again after a write (or its rollback)
        self._replace_manifest(manifest_text(files, manifest), journal)


def manifest_text(files: Mapping[str, str], manifest: Manifest) -> bytes:
    """The manifest file of a directory holding `files`: their digests, and `manifest`'s
    placements and source."""
    full = Manifest(files={rel: sha256(files[rel].encode()) for rel in files},
                    placements=manifest.placements, source=manifest.source)
    return json_bytes(full.to_json())


def json_bytes(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=False) + "\n").encode()
