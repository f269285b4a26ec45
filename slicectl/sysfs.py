"""Read the host's NUMA topology from a sysfs tree (`/sys` or a fixture root) into a Topology."""

from __future__ import annotations

import re
from pathlib import Path

from slicectl.cpulist import parse_cpulist
from slicectl.errors import TopologyError
from slicectl.topology import Cpu, Node, Topology

_NODE_DIR = re.compile(r"node(\d+)")
_CPU_DIR = re.compile(r"cpu(\d+)")
_MEMTOTAL = re.compile(r"^Node\s+\d+\s+MemTotal:\s*(\S+)\s*kB\s*$", re.MULTILINE)


def read_topology(root: str | Path = "/sys") -> Topology:
    """Read nodes, CPUs, SMT siblings, memory and distances from the sysfs tree at `root`."""
    root = Path(root)
    system = root / "devices" / "system"
    if not root.is_dir():
        raise TopologyError(f"{root}: sysfs root does not exist",
                            "pass --sysfs ROOT or --topology FILE")
    if not (system / "cpu").is_dir():
        raise TopologyError(f"{system / 'cpu'}: not found, {root} is not a sysfs root",
                            "pass --sysfs ROOT or --topology FILE")

    cpu_dir = system / "cpu"
    cpu_ids = _numbered_dirs(cpu_dir, _CPU_DIR)
    present = cpu_dir / "present"
    if present.is_file():
        cpu_ids = sorted(set(cpu_ids) | _read_cpulist(present))
    online = _online_cpus(cpu_dir, cpu_ids)
    cpu_ids = sorted(set(cpu_ids) | online)

    node_dir = system / "node"
    node_ids = _numbered_dirs(node_dir, _NODE_DIR) if node_dir.is_dir() else []
    nodes: list[Node] = []
    if node_ids:
        for nid in node_ids:
            d = node_dir / f"node{nid}"
            # A node's cpulist is not guaranteed to drop offline CPUs; cpu/online decides.
            node_cpus = _read_cpulist(d / "cpulist") & online
            nodes.append(Node(nid, node_cpus, _read_memtotal(d / "meminfo"),
                              _read_distances(d / "distance", node_ids)))
    else:
        # Kernels built without CONFIG_NUMA have no devices/system/node: one node holds every
        # online CPU. Its memory is unknown from sysfs alone (/proc is not under this root),
        # so it is reported as 0 rather than guessed.
        nodes.append(Node(0, frozenset(online), 0, {0: 10}))

    node_of = {c: n.id for n in nodes for c in n.cpus}
    cpus = tuple(
        _read_cpu(cpu_dir / f"cpu{cid}", cid, node_of.get(cid)) if cid in online
        else Cpu(id=cid, online=False, node=None)
        for cid in cpu_ids
    )
    return Topology(nodes=tuple(nodes), cpus=cpus, source=str(root))


def _numbered_dirs(parent: Path, pattern: re.Pattern[str]) -> list[int]:
    """Numeric suffixes of `parent`'s subdirectories matching `pattern`, sorted numerically."""
    try:
        names = [p.name for p in parent.iterdir() if p.is_dir()]
    except OSError as e:
        raise TopologyError(f"{parent}: cannot list directory: {e.strerror}",
                            "check that the sysfs root is readable") from e
    return sorted(int(m[1]) for name in names if (m := pattern.fullmatch(name)))


def _online_cpus(cpu_dir: Path, cpu_ids: list[int]) -> frozenset[int]:
    """Online CPUs: cpu/online, else each cpuN/online (absent for the boot CPU = online)."""
    summary = cpu_dir / "online"
    if summary.is_file():
        return _read_cpulist(summary)
    result: set[int] = set()
    for cid in cpu_ids:
        flag = cpu_dir / f"cpu{cid}" / "online"
        if not flag.is_file() or _read_int(flag) != 0:
            result.add(cid)
    return frozenset(result)


def _read_cpu(d: Path, cid: int, node: int | None) -> Cpu:
    """One online CPU's package, die, core and SMT siblings from cpuN/topology."""
    t = d / "topology"
    siblings_file = t / "thread_siblings_list"
    if not siblings_file.is_file():
        siblings_file = t / "core_cpus_list"  # the newer name; the old one is deprecated
    siblings = _read_cpulist(siblings_file) if siblings_file.is_file() else frozenset({cid})
    return Cpu(
        id=cid, online=True, node=node,
        package=_read_optional_int(t / "physical_package_id"),
        die=_read_optional_int(t / "die_id"),  # only since Linux 5.2
        core=_read_optional_int(t / "core_id"),
        siblings=siblings,
    )


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not ASCII text"
        raise TopologyError(f"{path}: cannot read: {why}",
                            "check the sysfs root given with --sysfs, or use --topology FILE"
                            ) from e


def _malformed(path: Path, text: str, expected: str) -> TopologyError:
    return TopologyError(f"{path}: malformed content {text.strip()[:60]!r}, expected {expected}",
                         "is --sysfs pointing at a real sysfs tree? Otherwise use --topology FILE")


def _read_cpulist(path: Path) -> frozenset[int]:
    text = _read_text(path)
    try:
        return parse_cpulist(text)
    except ValueError as e:
        raise _malformed(path, text, f"a cpulist such as '0-3,8' ({e})") from e


def _read_int(path: Path) -> int:
    text = _read_text(path)
    try:
        return int(text.strip())  # may be -1: physical_package_id on some platforms
    except ValueError as e:
        raise _malformed(path, text, "an integer") from e


def _read_optional_int(path: Path) -> int | None:
    return _read_int(path) if path.is_file() else None


def _read_memtotal(path: Path) -> int:
    """MemTotal of a node's meminfo in bytes; 0 when the file is absent (memoryless node)."""
    if not path.is_file():
        return 0
    text = _read_text(path)
    m = _MEMTOTAL.search(text)
    if m is None or not m[1].isdigit():
        raise _malformed(path, text, "a line like 'Node 0 MemTotal:  32649 kB'")
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
