"""Which cgroup hierarchy this host mounts (an edge: it reads the mount table,
`/proc/self/mountinfo` in a proc root).

slicectl needs the unified hierarchy: a cgroup2 mount at /sys/fs/cgroup, where systemd puts
every controller. Older distributions boot cgroup v1 (RHEL 7: a tmpfs at /sys/fs/cgroup and
one `cgroup` mount per controller below it) or the hybrid layout (RHEL 8, systemd 239's
default: the same v1 controllers, and a cgroup2 mount at /sys/fs/cgroup/unified holding no
controller). There systemd sets CPU and memory limits through v1 controllers, which
slicectl's settings, reads and checks do not describe: every verb that touches the live host
refuses such a host (systemd 256 refuses cgroup v1 at boot, and 258 removed it).

The mount at the cgroup root slicectl reads decides, as systemd decides by what is mounted at
/sys/fs/cgroup. A root that is no mount point at all (a fixture tree, a copy of another
host's) is not judged here: the readers' own checks apply.
"""

from __future__ import annotations

import os
from pathlib import Path

from slicectl.core import defaults
from slicectl.core.errors import HierarchyError, shown
from slicectl.core.frozen import frozen

MOUNTINFO = "self/mountinfo"
# cgroup2's mount option (Linux 6.6) that counts huge pages in memory.current, so in the
# memory.max and memory.high systemd sets from MemoryMax= and MemoryHigh=.
HUGETLB_ACCOUNTING = "memory_hugetlb_accounting"
# A mount table is a few hundred lines; a bound keeps a broken proc root from exhausting us.
MAX_MOUNTINFO = 4 << 20
# The hint of every refusal: what a user changes to get the unified hierarchy.
UNIFIED_HINT = ("slicectl needs the unified cgroup hierarchy (cgroup v2): boot with "
                "systemd.unified_cgroup_hierarchy=1 on the kernel command line (on RHEL 8: "
                "grubby --update-kernel=ALL --args=systemd.unified_cgroup_hierarchy=1), then "
                "reboot")


@frozen
class Mount:
    """One line of the mount table: where, which file system, its super block's options."""

    point: str
    fstype: str
    options: frozenset[str]

    @property
    def hugetlb_accounted(self) -> bool:
        """Whether huge pages count in the memory limits of the cgroups below this mount."""
        return self.fstype == "cgroup2" and HUGETLB_ACCOUNTING in self.options


def _unescape(field: str) -> str:
    r"""A mount point as the kernel escapes it in mountinfo (space as \040, tab, newline and
    backslash as octal)."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        code = field[i + 1:i + 4]
        if field[i] == "\\" and len(code) == 3 and all(c in "01234567" for c in code):
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> tuple[Mount, ...]:
    """The mounts of a mountinfo text (proc(5)), in its order: a later mount on the same
    point hides an earlier one. Lines it cannot read are left out."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        if "-" not in fields[6:]:
            continue
        dash = fields.index("-", 6)
        if len(fields) < dash + 4:
            continue
        mounts.append(Mount(_unescape(fields[4]), fields[dash + 1],
                            frozenset(fields[dash + 3].split(","))))
    return tuple(mounts)


def read_mounts(proc_root: str | Path = defaults.PROC) -> tuple[Mount, ...] | None:
    """The mount table of `proc_root` (this process's view); None when there is none to read
    (no proc mounted: nothing to judge by)."""
    try:
        with open(Path(proc_root) / MOUNTINFO, "rb") as f:
            raw = f.read(MAX_MOUNTINFO)
    except OSError:
        return None
    return parse_mountinfo(raw.decode("utf-8", "surrogateescape"))


def _at(mounts: tuple[Mount, ...], point: str) -> Mount | None:
    """The mount visible at `point`: the last one mounted there."""
    found = [m for m in mounts if m.point == point]
    return found[-1] if found else None


def _below(mounts: tuple[Mount, ...], point: str) -> dict[str, Mount]:
    """The cgroup mounts (v1 or v2) directly below `point`, by name, each the visible one."""
    out: dict[str, Mount] = {}
    for m in mounts:
        if m.fstype in ("cgroup", "cgroup2") and os.path.dirname(m.point) == point:
            out[os.path.basename(m.point)] = m
    return out


def _layout(where: str, top: Mount, below: dict[str, Mount]) -> str:
    """What is mounted at `where` (a tmpfs or other non-cgroup2 file system), for the
    message: cgroup v1 or the hybrid hierarchy, and their controllers' mounts."""
    v1 = sorted(name for name, m in below.items() if m.fstype == "cgroup")
    unified = [name for name, m in below.items() if m.fstype == "cgroup2"]
    found = f"{top.fstype} at {where}"
    if v1:
        found += f" with cgroup v1 hierarchies {', '.join(v1)}"
    if v1 and unified:
        return (f"the hybrid cgroup hierarchy ({found}; cgroup2 only at "
                f"{where}/{unified[0]}, without the controllers)")
    if v1:
        return f"cgroup v1 ({found}; no cgroup2)"
    return f"no cgroup2 file system ({found})"


def unified_mount(cgroup_root: str | Path, proc_root: str | Path = defaults.PROC, *,
                  refuse_empty: bool = True) -> Mount | None:
    """The cgroup2 mount at `cgroup_root`, as this host's mount table (in `proc_root`) has it;
    None when `cgroup_root` is no mount point (a fixture tree, a copy) or there is no mount
    table. Raises HierarchyError when the host runs cgroup v1 or the hybrid hierarchy there,
    and, with `refuse_empty`, when another file system holding no cgroup hierarchy is mounted
    there (the generator leaves that unjudged: what a sandbox shows it is no proof of v1)."""
    mounts = read_mounts(proc_root)
    if mounts is None:
        return None
    where = os.path.realpath(cgroup_root)
    top = _at(mounts, where)
    if top is None:
        return None
    name = shown(cgroup_root)
    if top.fstype == "cgroup":
        raise HierarchyError(f"{name} is not a cgroup2 mount: cgroup v1 is mounted there "
                             f"({','.join(sorted(top.options - {'rw', 'ro'}))})", UNIFIED_HINT)
    if top.fstype != "cgroup2":
        below = _below(mounts, where)
        if not refuse_empty and not below:
            return None
        raise HierarchyError(f"{name} is not a cgroup2 mount: this host runs "
                             f"{_layout(where, top, below)}", UNIFIED_HINT)
    # cgroup2 at the root asked for, but beside v1 controllers (the hybrid layout's
    # /sys/fs/cgroup/unified): systemd puts the controllers on the v1 hierarchies.
    parent = os.path.dirname(where)
    beside = _below(mounts, parent)
    holder = _at(mounts, parent)
    if holder is not None and any(m.fstype == "cgroup" for m in beside.values()):
        raise HierarchyError(f"{name} is the cgroup2 mount of a hybrid hierarchy: this host "
                             f"runs {_layout(parent, holder, beside)}", UNIFIED_HINT)
    return top
