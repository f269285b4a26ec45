"""slicectl's own files, written and put back one way: the one owner of

- the digest slicectl records of what it wrote and checks before touching it again (sha256);
- the undo journal of a change to its files (Undo): what each path held before (a file's bytes
  and mode, a symbolic link's target, or nothing), the folders made, and the caller's own
  labelled steps; rollback undoes them last first and reports what it could not;
- the atomic writes, each replacing a file whole (readers see the old one or the new one,
  never half): write_atomically (one file), write_many (many, one syncfs), replace_link (a
  symbolic link), write_tree (a tree of files, never through a link) and write_folder (a
  whole folder at once);
- reading a JSON file tagged with its format (read_tagged): the unit directory's manifest and
  the install manifest (their callers keep their own messages).

Every writer of slicectl's files uses these, none has its own temporary file and rename, hash
or undo list (tests/host/files/test_owned.py checks). This module is on the generator's fast
path (placement_record imports it): only os, stat, errno and functools at import; tempfile,
ctypes, json and shutil are imported where they are used.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import partial

from slicectl.core.errors import SlicectlError

TYPE_CHECKING = False  # typing itself is not imported on the generator's fast path
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    StrPath: TypeAlias = str | os.PathLike[str]

# Temporary files are named `.NAME.RANDOM.slicectl-tmp` beside the file they replace, so that
# one a power cut left behind can be found (slicectl.host.files.unitdir removes them).
TEMP_SUFFIX = ".slicectl-tmp"


def _sha256_type() -> Callable[[bytes], Any]:
    """CPython's own SHA-256, where it has it: hashlib would load OpenSSL first, which costs
    milliseconds at every daemon-reload on the generator's fast path (BENCHMARKS.md)."""
    for module in ("_sha2", "_sha256", "hashlib"):  # Python >= 3.12, 3.11, any other
        try:
            return __import__(module).sha256  # type: ignore[no-any-return]
        except ImportError:
            continue
    raise ImportError("no SHA-256")


_SHA256 = _sha256_type()


def sha256(data: bytes) -> str:
    """The SHA-256 of `data` in hex, as slicectl's manifests record it."""
    return str(_SHA256(data).hexdigest())


# -- the undo journal ----------------------------------------------------------------------


class Undo:
    """How to put back what one change to slicectl's files did, recorded step by step before
    each change; `rollback` runs the steps last first. A step that fails does not stop the
    others: rollback returns each failure, so the user learns what could not be put back."""

    def __init__(self) -> None:
        self._steps: list[tuple[StrPath, Callable[[], None]]] = []

    def __bool__(self) -> bool:
        return bool(self._steps)

    def record(self, path: StrPath) -> None:
        """Before changing `path`: what is there now, a regular file (its bytes and mode), a
        symbolic link (its target, never followed) or nothing, for rollback to put back.
        Anything else there (a folder, a FIFO) could not be put back: refused (OSError)."""
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            self.record_contents(path, None)
            return
        if stat.S_ISLNK(st.st_mode):
            self._steps.append((path, partial(replace_link, path, os.readlink(path))))
        elif stat.S_ISREG(st.st_mode):
            self.record_contents(path, read_regular_file(path), stat.S_IMODE(st.st_mode))
        else:
            raise OSError(errno.EINVAL, "not a regular file or a symbolic link",
                          os.fspath(path))

    def record_contents(self, path: StrPath, data: bytes | None,
                        mode: int | None = None) -> None:
        """Before changing `path`: its bytes as the caller has just read them (None: nothing
        is there). Rollback writes them back atomically (its folder made again if it went),
        with `mode` when given, else the mode of the file then there, else 0644; or removes
        the file where there was none."""
        self._steps.append((path, partial(_put_back, path, data, mode)))

    def record_folders(self, folders: Iterable[StrPath]) -> None:
        """Folders just made, outermost first. Rollback removes each once it is empty again;
        one that holds someone else's file by then is left, as is one already gone."""
        for folder in folders:
            self._steps.append((folder, partial(_remove_folder, folder)))

    def add(self, label: str, step: Callable[[], None]) -> None:
        """One of the caller's own steps, `label` naming it in what rollback reports; it
        reports a failure by raising OSError or SlicectlError."""
        self._steps.append((label, step))

    def rollback(self) -> list[tuple[StrPath, str]]:
        """Run every step, last first, and forget them; returns the paths or labels of those
        that failed, each with why (every other step has run)."""
        steps, self._steps = self._steps, []
        failed: list[tuple[StrPath, str]] = []
        for what, step in reversed(steps):
            try:
                step()
            except OSError as e:
                failed.append((what, e.strerror or str(e)))
            except SlicectlError as e:
                failed.append((what, e.message))
        return failed


def _put_back(path: StrPath, data: bytes | None, mode: int | None) -> None:
    if data is None:
        try:
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError):
            pass  # already gone, or its folder is a file now: nothing of ours is there
        return
    folder = os.path.dirname(os.fspath(path))
    if folder:
        os.makedirs(folder, exist_ok=True)  # a drop-in folder removed with its last file
    write_atomically(path, data, mode)


def _remove_folder(folder: StrPath) -> None:
    try:
        os.rmdir(folder)
    except OSError as e:
        if e.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
            raise


def read_regular_file(path: StrPath) -> bytes:
    """The bytes of the regular file `path`, never through a link nor blocking on a FIFO:
    anything else there is refused (OSError; IsADirectoryError for a folder)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "a folder", os.fspath(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


# -- atomic writes -------------------------------------------------------------------------


def write_atomically(path: StrPath, data: bytes | str, mode: int | None = None) -> None:
    """Replace `path` whole: `data` written to a temporary file beside it, fsync'ed, then
    renamed over it; a reader sees the old file or the new one, even after a power cut.

    The new file gets `mode` when given, else the mode of the file it replaces, else 0644. On
    any error the temporary file is removed and `path` is untouched.
    """
    raw = data.encode() if isinstance(data, str) else data
    tmp, _ = _temp_file(path, raw, mode, sync=True)
    try:
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def write_many(items: Sequence[tuple[StrPath, bytes]], new: Collection[StrPath] = ()) -> None:
    """Replace several files, each whole, flushed to disk together.

    Each file is written to a temporary file beside it; then one syncfs(2) per file system
    makes all of them durable (one journal commit instead of one fsync per file, which was
    much slower; apply.100's phases are in BENCHMARKS.md); only then is each renamed over its
    target. Readers see each file old or new, never half. On an error before the renames
    nothing is replaced; an error during them leaves the earlier ones replaced (the caller's
    Undo puts them back). Paths in `new` are known not to exist (the caller has just looked):
    they get mode 0644 without a stat; the others keep the mode of the file they replace.
    """
    pending: list[tuple[str, StrPath]] = []
    folders: dict[int, str] = {}  # one folder per file system, for syncfs
    done = 0
    try:
        for path, data in items:
            tmp, dev = _temp_file(path, data, 0o644 if path in new else None, sync=False)
            pending.append((tmp, path))
            folders.setdefault(dev, os.path.dirname(tmp))
        _flush(folders.values(), [tmp for tmp, _ in pending])
        for tmp, path in pending:
            os.replace(tmp, path)
            done += 1
    finally:
        for tmp, _ in pending[done:]:
            _unlink_quietly(tmp)


def replace_link(path: StrPath, target: str) -> None:
    """Make `path` a symbolic link to `target`, whole: a new link made beside it and renamed
    over whatever is there (a file, or a link, which is replaced, not followed); a reader
    sees the old one or the new one."""
    folder, name = os.path.split(os.fspath(path))
    tmp = os.path.join(folder, f".{name}.{os.getpid()}{TEMP_SUFFIX}")
    _unlink_quietly(tmp)
    os.symlink(target, tmp)
    try:
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def write_tree(root: str, files: Mapping[str, bytes], *, sync: bool = True) -> None:
    """Write `files` (relative path → bytes) under `root` (made if missing), each replaced
    whole and never through a link: each goes to a temporary file created anew (O_EXCL and
    O_NOFOLLOW: neither a link nor a file someone left there is opened) and is renamed over
    the file, so a link in its place is replaced, not followed; a link or file where a folder
    belongs is replaced by a folder. Flushed to disk first with `sync` (the generator's
    output lives on a tmpfs made anew at every run: no need there). Files are 0644, folders
    0755, whatever the umask."""
    made: set[str] = set()
    for rel, data in sorted(files.items()):
        path = os.path.join(root, rel)
        _real_folders(root, os.path.dirname(rel), made)
        tmp = f"{path}.tmp{os.getpid()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(tmp, flags, 0o644)
        except FileExistsError:  # left by a process of the same PID, or put there
            os.unlink(tmp)
            fd = os.open(tmp, flags, 0o644)
        try:
            os.fchmod(fd, 0o644)
            _write_fd(fd, data)
            if sync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        os.replace(tmp, path)


def write_folder(folder: str, files: Mapping[str, bytes], staging: str) -> None:
    """Make `folder` (not there yet) hold exactly `files`, appearing whole: written with
    write_tree into `staging` (a name beside it; whatever a run cut short left there is
    removed first), flushed, then renamed to `folder`."""
    import shutil

    shutil.rmtree(staging, ignore_errors=True)
    os.mkdir(staging, 0o755)  # made even for no files: the folder is there, empty
    write_tree(staging, files)
    os.replace(staging, folder)


def sync_folder(folder: str) -> None:
    """fsync(2) `folder`: the renames and links made in it are on disk."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _real_folders(root: str, rel: str, made: set[str]) -> None:
    """The folders `rel` under `root`, each a real folder: a link or a file in the way is
    removed (never followed), a missing one made 0755."""
    if not os.path.isdir(root):
        os.makedirs(root, mode=0o755, exist_ok=True)
    folder = root
    for part in rel.split(os.sep) if rel else ():
        folder = os.path.join(folder, part)
        if folder in made:
            continue
        try:
            st: os.stat_result | None = os.lstat(folder)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISDIR(st.st_mode):
            os.unlink(folder)
            st = None
        if st is None:
            os.mkdir(folder, 0o755)
            os.chmod(folder, 0o755)
        made.add(folder)


def _temp_file(path: StrPath, raw: bytes, mode: int | None, *, sync: bool) -> tuple[str, int]:
    """A temporary file next to `path` holding `raw`, with `mode` when given (no stat), else
    the mode of the file it will replace, else 0644; fsync'ed if `sync`; removed again on any
    error. Returns its name and its file system (st_dev)."""
    import tempfile

    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = 0o644
    folder, name = os.path.split(os.fspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=TEMP_SUFFIX, dir=folder or ".")
    try:
        try:
            _write_fd(fd, raw)
            os.fchmod(fd, mode)
            if sync:
                os.fsync(fd)
            dev = os.fstat(fd).st_dev
        finally:
            os.close(fd)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp, dev


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _flush(folders: Iterable[str], files: list[str]) -> None:
    """syncfs(2) the file system of each folder; fsync each file where syncfs is missing."""
    import ctypes

    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        for name in files:
            fd = os.open(name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return
    for folder in folders:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if syncfs(fd) != 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err), folder)
        finally:
            os.close(fd)


# -- manifests -----------------------------------------------------------------------------


def read_tagged(raw: bytes, tag: str) -> dict[str, Any] | None:
    """The JSON object in `raw` (UTF-8) when its "format" is `tag`; None when `raw` holds
    something else (another format, no format, not an object). Raises ValueError when it is
    not UTF-8 JSON at all; the caller says which manifest, in its own words."""
    import json

    data = json.loads(raw.decode("utf-8"))
    if not isinstance(data, dict) or data.get("format") != tag:
        return None
    return data
