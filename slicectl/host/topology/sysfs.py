"""Where a topology comes from: a sysfs tree (`/sys` or a copy), or an export file (edge).

`load_topology` is the one place the CLI, lint and the TUI choose between `--topology FILE`
and `--sysfs ROOT`. `read_topology` reads what every kernel offers: `*list` files where they
exist, the older hex masks (`cpumap`, `thread_siblings`) where they do not, list files ending
in a NUL byte, empty per-CPU `online` files (`cpu/online` is the truth), and no
`devices/system/node` at all (a kernel built without NUMA: one node, whose memory comes from
`meminfo` in the proc root, by default the `proc` beside the sysfs root: `/proc` for `/sys`).
Each CPU's last-level cache group comes from `cpuN/cache`, where the kernel has it; where it
has not, or holds what the kernel never writes, the group is unknown (never an error).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from slicectl.core import defaults
from slicectl.core.cpulist import parse_cpulist, parse_cpumask
from slicectl.core.errors import TopologyError
from slicectl.core.placement.topology import (
    LOCAL_DISTANCE,
    Cpu,
    Node,
    Topology,
    build_topology,
    parse_topology_json,
)
from slicectl.host.topology.cpu_caches import LastLevelCaches

_NODE_DIR = re.compile(r"node(\d+)")
_CPU_DIR = re.compile(r"cpu(\d+)")
_NODE_MEMTOTAL = re.compile(r"^Node\s+\d+\s+MemTotal:\s*(\S+)\s*kB\s*$", re.MULTILINE)
_MEMTOTAL = re.compile(r"^MemTotal:\s*(\S+)\s*kB\s*$", re.MULTILINE)
MAX_EXPORT_BYTES = 64 << 20  # an export of 8,192 CPUs is about 1.5 MB
_CHOOSE = "pass --sysfs ROOT or --topology FILE"


def load_topology(topology_file: str | None, sysfs: str | None,
                  proc_root: str | None = None) -> Topology:
    """The topology a command runs against: the export `topology_file` if given, else the
    sysfs tree `sysfs` (default /sys), with `proc_root` for kernels without NUMA."""
    if topology_file:
        return load_topology_file(topology_file)
    return read_topology(sysfs or defaults.SYSFS, proc_root)


def load_topology_file(path: str) -> Topology:
    """Load a `slicectl topology --json` export, validated like tenants.yaml."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_EXPORT_BYTES + 1)
    except OSError as e:
        raise TopologyError(f"{path}: cannot read topology file: {e.strerror}",
                            "check the path given to --topology") from e
    if len(data) > MAX_EXPORT_BYTES:
        raise TopologyError(f"{path}: larger than {MAX_EXPORT_BYTES >> 20} MiB, not a "
                            "topology export", "check the path given to --topology")
    return parse_topology_json(data, path)


def read_topology(root: str | Path = defaults.SYSFS,
                  proc_root: str | Path | None = None) -> Topology:
    """Read nodes, CPUs, SMT siblings, last-level cache groups, memory and distances from the
    sysfs tree at `root`."""
    root = Path(root)
    cpu_dir = _cpu_dir(root)
    online, cpu_ids = _cpus(cpu_dir)
    node_dir = root / "devices" / "system" / "node"
    node_ids = _numbered_dirs(node_dir, _NODE_DIR) if node_dir.is_dir() else []
    proc = Path(proc_root) if proc_root is not None else root.parent / "proc"
    if node_ids:
        nodes = [_read_node(node_dir / f"node{nid}", nid, node_ids, online) for nid in node_ids]
    else:
        # Kernels built without CONFIG_NUMA have no devices/system/node: one node holds
        # every online CPU and all of the machine's memory.
        nodes = [Node(0, online, _machine_memory(proc / "meminfo", node_dir),
                      {0: LOCAL_DISTANCE})]
    node_of = {c: n.id for n in nodes for c in n.cpus}
    caches = LastLevelCaches()
    cpus = tuple(
        _read_cpu(os.path.join(cpu_dir, f"cpu{cid}"), cid, node_of.get(cid), caches)
        if cid in online
        else Cpu(id=cid, online=False, node=None)
        for cid in cpu_ids
    )
    return build_topology(nodes, cpus, str(root),
                          task_limit=task_limit(proc, root / "fs" / "cgroup"))


def task_limit(proc_root: Path, cgroup_root: Path) -> int:
    """The kernel's task limit as systemd computes it (system_tasks_max in limits-util.c): the
    least of PROC/sys/kernel/threads-max, PROC/sys/kernel/pid_max - 1 (PIDs are kept below
    pid_max, and 0 is none) and the pids.max of systemd's root cgroup (absent at the real
    root, "max" for none); a source that cannot be read is left out, as systemd leaves it
    out. 0 when none can be read."""
    kernel = proc_root / "sys" / "kernel"
    found = [_number(kernel / "threads-max")]
    pid_max = _number(kernel / "pid_max")
    found.append(pid_max - 1 if pid_max is not None and pid_max > 0 else pid_max)
    found.append(_number(cgroup_root / "pids.max"))
    known = [n for n in found if n is not None]
    return min(known) if known else 0


def _number(path: Path) -> int | None:
    """A file holding one number; None if it is absent, unreadable, "max" or not a number."""
    try:
        text = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _cpu_dir(root: Path) -> Path:
    if not root.is_dir():
        raise TopologyError(f"{root}: sysfs root does not exist", _CHOOSE)
    cpu_dir = root / "devices" / "system" / "cpu"
    if not cpu_dir.is_dir():
        raise TopologyError(f"{cpu_dir}: not found, so {root} is not a sysfs root", _CHOOSE)
    return cpu_dir


def _cpus(cpu_dir: Path) -> tuple[frozenset[int], list[int]]:
    """Online CPUs, and every CPU id the kernel knows (present or with a cpuN directory)."""
    cpu_ids = set(_numbered_dirs(cpu_dir, _CPU_DIR))
    present = cpu_dir / "present"
    if present.is_file():
        cpu_ids |= _read_cpulist(present)
    online = _online_cpus(cpu_dir, sorted(cpu_ids))
    return online, sorted(cpu_ids | online)


def _read_node(d: Path, nid: int, node_ids: list[int], online: frozenset[int]) -> Node:
    # A node's cpulist is not guaranteed to drop offline CPUs; cpu/online decides.
    cpus = _read_set(d / "cpulist", d / "cpumap") & online
    return Node(nid, cpus, _read_memtotal(d / "meminfo"),
                _read_distances(d / "distance", node_ids))


def _numbered_dirs(parent: Path, pattern: re.Pattern[str]) -> list[int]:
    """Numeric suffixes of `parent`'s subdirectories matching `pattern`, sorted numerically."""
    try:
        names = [p.name for p in parent.iterdir() if p.is_dir()]
    except OSError as e:
        raise TopologyError(f"{parent}: cannot list directory: {e.strerror}",
                            "check that the sysfs root is readable") from e
    return sorted(int(m[1]) for name in names if (m := pattern.fullmatch(name)))


def _online_cpus(cpu_dir: Path, cpu_ids: list[int]) -> frozenset[int]:
    """Online CPUs: cpu/online when it exists (the truth), else each cpuN/online."""
    summary = cpu_dir / "online"
    if summary.is_file():
        return _read_cpulist(summary)
    return frozenset(cid for cid in cpu_ids if _cpu_online(cpu_dir / f"cpu{cid}"))


def _cpu_online(d: Path) -> bool:
    """One CPU's online flag. The boot CPU often has no file (it cannot be unplugged); some
    trees hold empty files: then a CPU with a topology directory is online (the kernel
    removes that directory when a CPU goes offline)."""
    flag = d / "online"
    if not flag.is_file():
        return True
    text = _read_text(flag).strip()
    if not text:
        return (d / "topology").is_dir()
    if text not in ("0", "1"):
        raise _malformed(flag, text, "0 or 1")
    return text == "1"


def _read_cpu(d: str, cid: int, node: int | None,
              caches: LastLevelCaches) -> Cpu:
    """One online CPU's package, die, core and SMT siblings from cpuN/topology, and its
    last-level cache group from cpuN/cache (paths as strings: this runs for every CPU, at
    every boot in the generator)."""
    t = os.path.join(d, "topology")
    # thread_siblings_list is deprecated for core_cpus_list (5.4); kernels before 2.6.25
    # have only the masks.
    siblings = _read_optional_set(*(os.path.join(t, name) for name in (
        "thread_siblings_list", "core_cpus_list", "thread_siblings", "core_cpus")))
    return Cpu(
        id=cid, online=True, node=node,
        package=_read_optional_int(os.path.join(t, "physical_package_id")),
        die=_read_optional_int(os.path.join(t, "die_id")),  # only since Linux 5.2
        core=_read_optional_int(os.path.join(t, "core_id")),
        siblings=siblings if siblings is not None else frozenset({cid}),
        cache=caches.of(d, cid),
    )


def _read_text(path: str | Path) -> str:
    text = _text(path, absent_ok=False)
    assert text is not None
    return text


def _read_optional_text(path: str | Path) -> str | None:
    """A file's text, None when there is no such file (one open, no stat first)."""
    return _text(path, absent_ok=True)


def _text(path: str | Path, absent_ok: bool) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            text = f.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as e:
        if absent_ok:
            return None
        raise _unreadable(path, e) from e
    except (OSError, UnicodeDecodeError) as e:
        raise _unreadable(path, e) from e
    # One kernel ended its list files with a NUL byte: it is not part of the value.
    return text.rstrip("\0 \t\n")


def _unreadable(path: str | Path, e: OSError | UnicodeDecodeError) -> TopologyError:
    why = e.strerror if isinstance(e, OSError) else "not ASCII text"
    return TopologyError(f"{path}: cannot read: {why}",
                         "check the sysfs root given with --sysfs, or use --topology FILE")


def _malformed(path: str | Path, text: str, expected: str, why: str = "") -> TopologyError:
    shown = repr(text.strip()[:60]) if text.strip() else "nothing (the file is empty)"
    return TopologyError(
        f"{path}: holds {shown}, but the kernel writes {expected} there"
        + (f" ({why})" if why else ""),
        "if this tree is a copy, copy the file again from the host (as root, with its "
        "content, not its size: sysfs files report 4096 bytes); or run `slicectl topology "
        "--json` on the host and pass the export with --topology FILE")


_LIST = (parse_cpulist, "a CPU list such as '0-3,8'")
_MASK = (parse_cpumask, "a hex CPU mask such as '00000000,000000ff'")
# The hex-mask files older kernels offer in place of the `*list` ones.
_MASK_FILES = frozenset({"cpumap", "thread_siblings", "core_cpus", "core_siblings"})


def _read_set(path: Path, *alternatives: Path) -> frozenset[int]:
    """A CPU list file, or the first alternative that exists (a `*list` or a hex mask)."""
    found = _read_optional_set(path, *alternatives)
    if found is None:
        names = "".join(f" (and so is {p.name} beside it)" for p in alternatives)
        raise TopologyError(f"{path}: missing{names}",
                            "copy the whole devices/system tree from the host, or use "
                            "--topology FILE")
    return found


def _read_optional_set(*paths: str | Path) -> frozenset[int] | None:
    for path in paths:
        text = _read_optional_text(path)
        if text is not None:
            parse, expected = _MASK if os.path.basename(path) in _MASK_FILES else _LIST
            try:
                return parse(text)
            except ValueError as e:
                raise _malformed(path, text, expected, str(e)) from e
    return None


def _read_cpulist(path: Path) -> frozenset[int]:
    return _read_set(path)


def _parse_int(path: str | Path, text: str) -> int:
    try:
        return int(text.strip())  # may be -1: physical_package_id on some platforms
    except ValueError as e:
        raise _malformed(path, text, "an integer") from e


def _read_optional_int(path: str | Path) -> int | None:
    text = _read_optional_text(path)
    return None if text is None else _parse_int(path, text)


def _read_memtotal(path: Path) -> int:
    """MemTotal of a node's meminfo in bytes; 0 when the file is absent (memoryless node)."""
    if not path.is_file():
        return 0
    return _memtotal(path, _NODE_MEMTOTAL, "a line like 'Node 0 MemTotal:  32649 kB'")


def _machine_memory(meminfo: Path, node_dir: Path) -> int:
    """The whole machine's MemTotal from /proc/meminfo (a kernel without NUMA)."""
    if not meminfo.is_file():
        raise TopologyError(
            f"{meminfo}: cannot read the machine's memory: this kernel has no {node_dir} "
            "(it was built without NUMA), so its memory comes from /proc/meminfo",
            "pass --proc-root DIR (the proc tree beside the sysfs copy), or use "
            "--topology FILE")
    return _memtotal(meminfo, _MEMTOTAL, "a line like 'MemTotal:  32649 kB'")


def host_memory(proc_root: Path) -> int:
    """The machine's MemTotal from PROC/meminfo in bytes; 0 when it cannot be read."""
    try:
        return _memtotal(proc_root / "meminfo", _MEMTOTAL, "MemTotal")
    except TopologyError:
        return 0


def _memtotal(path: Path, pattern: re.Pattern[str], expected: str) -> int:
    text = _read_text(path)
    m = pattern.search(text)
    if m is None or not m[1].isdigit():
        raise _malformed(path, text, expected)
    return int(m[1]) * 1024


def _read_distances(path: Path, node_ids: list[int]) -> dict[int, int]:
    """A node's distance row; the kernel prints one entry per online node in id order."""
    if not path.is_file():
        return {}
    text = _read_text(path)
    fields = text.split()
    if len(fields) != len(node_ids) or not all(f.isdigit() for f in fields):
        raise _malformed(path, text, f"{len(node_ids)} integers, one per node "
                                     f"{', '.join(map(str, node_ids))}")
    return dict(zip(node_ids, map(int, fields), strict=True))
