"""Paths of another system's tree (`install --root DIR`, an image being built) as that system
reads them: each folder on the way resolved inside the root, never outside it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from slicectl.core.errors import OutputError, shown

_MAX_LINKS = 40  # as the kernel's path walk (ELOOP)


def under_root(root: Path, path: str, *, follow: bool = False) -> Path:
    """Where target path `path` is under `root`: each folder on the way resolved inside the
    root (an absolute link names the root's own folder, a relative one is taken from the
    folder it is in), so that what is placed stays in the root whatever links it holds. The
    last component is followed only with `follow` (a folder); else it is the thing itself
    (what install places or removes). A link that climbs out of the root, or loops, is refused
    (OutputError) and not followed."""
    if ".." in path.split("/"):
        raise OutputError(f"refusing {shown(path)}: a path with '..' could lead out of "
                          f"{shown(root)}", "give plain absolute paths")
    todo = [part for part in path.split("/") if part not in ("", ".")]
    name = "" if follow or not todo else todo.pop()
    done: list[str] = []  # components resolved so far, under the root
    links = 0
    link = ""  # the last link followed, for the error
    todo.reverse()
    while todo:
        part = todo.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not done:
                raise _escape(root, path, link)
            done.pop()
            continue
        real = root.joinpath(*done, part)
        try:
            st = os.lstat(real)
        except (FileNotFoundError, NotADirectoryError):
            done.append(part)
            done.extend(p for p in reversed(todo) if p not in ("", "."))
            if ".." in done:
                raise _escape(root, path, link) from None
            break
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > _MAX_LINKS:
                raise OutputError(f"refusing {shown(path)}: too many symbolic links under "
                                  f"{shown(root)} (a loop?)", "replace them with folders")
            target = os.readlink(real)
            link = f"{shown(real)} -> {shown(target)}"
            if target.startswith("/"):
                done = []  # the root's own "/" (chroot's view of an absolute link)
            todo.extend(reversed(target.split("/")))
            continue
        done.append(part)
    return root.joinpath(*done, name) if name else root.joinpath(*done)


def _escape(root: Path, path: str, link: str) -> OutputError:
    return OutputError(f"refusing {shown(path)}: the symbolic link {link} leads out of "
                       f"{shown(root)}, and slicectl never follows a link there",
                       "replace that link with a folder (or a link inside the root), or "
                       "install with another --root or --prefix")


def is_folder(real: Path) -> bool:
    """A folder itself, not a link to one (which may lead anywhere)."""
    try:
        return stat.S_ISDIR(os.lstat(real).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
