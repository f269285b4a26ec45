"""A directory of unit files that slicectl owns part of (an `--out DIR`, /etc/systemd/system).

slicectl records what it generated in a manifest and only ever writes, replaces or removes
files listed there; any other file is left alone, and a planned path already taken by a file
slicectl did not generate is an error. Changes are transactional: every file is written to a
temporary name and renamed into place, the previous contents are kept, and on any error all
changes are undone, so nothing half-written is ever left behind.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slicectl import __version__
from slicectl.atomic import write_atomically, write_many
from slicectl.cpulist import format_cpulist, parse_cpulist
from slicectl.errors import OutputError

if TYPE_CHECKING:
    from slicectl.config import Config
    from slicectl.plan import Plan, ScheduleCommand
    from slicectl.topology import Topology

MANIFEST_NAME = ".slicectl-manifest.json"
MANIFEST_FORMAT = "slicectl-manifest/1"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Manifest:
    """What slicectl generated in a directory, and where it placed each tenant."""

    files: Mapping[str, str] = field(default_factory=dict)  # relative path → sha256
    placements: Mapping[str, frozenset[int]] = field(default_factory=dict)
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT,
            "generator": f"slicectl {__version__}",
            "source": self.source,
            "files": dict(sorted(self.files.items())),
            "placements": {k: format_cpulist(v) for k, v in sorted(self.placements.items())},
        }

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """Read a manifest; a missing file is an empty manifest."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as e:
            raise OutputError(f"{path}: cannot read slicectl's manifest: {e}",
                              "restore it from version control, or remove it and the files "
                              "slicectl generated, then run again") from e
        if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
            raise OutputError(f"{path}: not a slicectl manifest",
                              "remove or rename the file; slicectl writes it itself")
        try:
            return cls(files=dict(data.get("files", {})),
                       placements={k: parse_cpulist(v)
                                   for k, v in dict(data.get("placements", {})).items()},
                       source=str(data.get("source", "")))
        except (TypeError, ValueError) as e:
            raise OutputError(f"{path}: malformed slicectl manifest: {e}",
                              "remove it and the files slicectl generated, then run again"
                              ) from e


@dataclass(frozen=True)
class FileChanges:
    """What writing a set of files would do to a directory."""

    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.removed)


@dataclass
class Journal:
    """Undo information for one transaction: previous contents of every path touched."""

    root: Path
    previous: list[tuple[Path, bytes | None]] = field(default_factory=list)
    made_dirs: list[Path] = field(default_factory=list)

    def rollback(self) -> list[tuple[Path, str]]:
        """Restore every touched path to what it was (a file that did not exist is removed);
        returns the paths that could not be restored, with why (the others are restored)."""
        failed: list[tuple[Path, str]] = []
        for path, old in reversed(self.previous):
            try:
                if old is None:
                    path.unlink(missing_ok=True)
                else:
                    path.parent.mkdir(parents=True, exist_ok=True)  # a removed .d folder
                    _write_atomic(path, old)
            except OSError as e:
                failed.append((path, e.strerror or str(e)))
        for d in reversed(self.made_dirs):
            try:
                d.rmdir()
            except OSError:
                pass  # not empty (someone else's file) or gone: leave it
        self.previous.clear()
        self.made_dirs.clear()
        return failed


def _write_atomic(path: Path, data: bytes) -> None:
    """Atomic replace (slicectl.atomic); a separate name so tests can make writes fail."""
    write_atomically(path, data)


def _write_all(writes: list[tuple[Path, bytes]], new: Collection[Path] = ()) -> None:
    """Write the files atomically, flushed to disk together (slicectl.atomic.write_many);
    a separate name so tests can make writes fail."""
    write_many(writes, new)


def _make_dirs(folder: Path, root: Path) -> list[Path]:
    """Make `folder` and any missing parents up to `root`; returns those it made, outermost
    first (one mkdir for the usual `UNIT.d`, which is either there or not)."""
    try:
        folder.mkdir()
    except FileExistsError:
        return []
    except FileNotFoundError:
        if folder.parent == folder or folder == root:
            raise
        made = _make_dirs(folder.parent, root)
        folder.mkdir()
        return [*made, folder]
    return [folder]


class UnitDir:
    """The unit directory slicectl writes into, with its manifest."""

    def __init__(self, root: Path, manifest_path: Path | None = None) -> None:
        self.root = root
        self.manifest_path = manifest_path or root / MANIFEST_NAME

    def manifest(self) -> Manifest:
        return Manifest.load(self.manifest_path)

    def _target(self, rel: str) -> Path:
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise OutputError(f"refusing to write outside {self.root}: {rel}",
                              "this is a bug in slicectl; please report it")
        return self.root / rel

    def diff(self, files: Mapping[str, str]) -> FileChanges:
        """Compare planned files with the directory; raises if a path is not slicectl's."""
        owned = self.manifest().files
        created: list[str] = []
        updated: list[str] = []
        unchanged: list[str] = []
        for rel in sorted(files):
            path = self._target(rel)
            try:
                current = path.read_bytes()
            except FileNotFoundError:
                created.append(rel)
                continue
            except OSError as e:
                raise OutputError(f"{path}: cannot read: {e.strerror}",
                                  "check permissions of the output directory") from e
            if rel not in owned:
                raise OutputError(
                    f"{path} exists and was not generated by slicectl",
                    "slicectl never edits files it did not generate: move that file away, "
                    "or merge its settings into tenants.yaml",
                )
            (unchanged if current == files[rel].encode() else updated).append(rel)
        removed = [rel for rel in sorted(owned)
                   if rel not in files and self._target(rel).exists()]
        return FileChanges(tuple(created), tuple(updated), tuple(removed), tuple(unchanged))

    def write(self, files: Mapping[str, str], manifest: Manifest,
              changes: FileChanges | None = None) -> tuple[FileChanges, Journal]:
        """Make the directory hold exactly `files` (of slicectl's); all or nothing.

        Returns the changes and a journal the caller may use to roll back later (apply does,
        when systemd refuses the new configuration).
        """
        if changes is None:  # else: the caller's diff of these files, just taken
            changes = self.diff(files)
        journal = Journal(self.root)
        try:
            if not self.root.is_dir():
                self.root.mkdir(parents=True)
                journal.made_dirs.append(self.root)
            writes: list[tuple[Path, bytes]] = []
            new: set[Path] = set()
            folders = {self.root}
            updated = set(changes.updated)
            for rel in changes.created + changes.updated:
                path = self._target(rel)
                if path.parent not in folders:
                    journal.made_dirs.extend(_make_dirs(path.parent, self.root))
                    folders.add(path.parent)
                if rel in updated:
                    journal.previous.append((path, path.read_bytes()))
                else:  # the diff just found no file there
                    journal.previous.append((path, None))
                    new.add(path)
                writes.append((path, files[rel].encode()))
            _write_all(writes, new)
            for rel in changes.removed:
                path = self._target(rel)
                journal.previous.append((path, path.read_bytes()))
                path.unlink()
                if path.parent != self.root and not any(path.parent.iterdir()):
                    path.parent.rmdir()
            if changes.changed or not self.manifest_path.exists():
                self.manifest_path.parent.mkdir(parents=True, exist_ok=True)
                old_manifest = (self.manifest_path.read_bytes()
                                if self.manifest_path.exists() else None)
                journal.previous.append((self.manifest_path, old_manifest))
                full = Manifest(files={rel: sha256(files[rel].encode()) for rel in files},
                                placements=manifest.placements, source=manifest.source)
                text = json.dumps(full.to_json(), indent=2, sort_keys=False) + "\n"
                _write_atomic(self.manifest_path, text.encode())
        except OSError as e:
            journal.rollback()
            where = e.filename or self.root
            raise OutputError(
                f"cannot write {where}: {e.strerror}; nothing was changed",
                f"check that {self.root} is writable (permissions, read-only file system, "
                "free space)",
            ) from e
        return changes, journal


def plan_from_manifest(config: Config, topology: Topology, unit_dir: Path,
                       command: ScheduleCommand | None = None) -> Plan:
    """The plan, keeping tenants where the last apply or generate into `unit_dir` placed
    them (its manifest): what plan shows is what apply does, and generate is stable. Here,
    not in apply, so that generate does not import apply's asyncio and D-Bus machinery."""
    from slicectl.plan import build_plan

    return build_plan(config, topology, UnitDir(unit_dir).manifest().placements, command)
