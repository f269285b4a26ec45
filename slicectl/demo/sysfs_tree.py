"""The demo host's sysfs tree, written from its topology (`host.json`): the files
slicectl.host.topology.sysfs reads, so `--sysfs` works on the demo as on a real host."""

from __future__ import annotations

from pathlib import Path

from slicectl.core.cpulist import format_cpulist
from slicectl.core.placement.topology import Topology


def write_sysfs(topology: Topology, root: Path) -> None:
    """Write devices/system/{node,cpu} under `root` as the kernel shows them for `topology`."""
    system = root / "devices" / "system"
    node_ids = [n.id for n in topology.nodes]
    files = {
        "node/online": format_cpulist(node_ids), "node/possible": format_cpulist(node_ids),
        "cpu/online": format_cpulist(c.id for c in topology.cpus if c.online),
        "cpu/present": format_cpulist(c.id for c in topology.cpus),
        "cpu/possible": format_cpulist(c.id for c in topology.cpus),
    }
    for node in topology.nodes:
        files[f"node/node{node.id}/cpulist"] = format_cpulist(node.cpus)
        files[f"node/node{node.id}/distance"] = " ".join(
            str(node.distances.get(other, 0)) for other in node_ids)
        files[f"node/node{node.id}/meminfo"] = (
            f"Node {node.id} MemTotal:       {node.memory_bytes // 1024} kB")
    for cpu in topology.cpus:
        files[f"cpu/cpu{cpu.id}/online"] = "1" if cpu.online else "0"
        if not cpu.online:
            continue
        facts = {"thread_siblings_list": format_cpulist(cpu.siblings or {cpu.id}),
                 "core_id": cpu.core, "physical_package_id": cpu.package, "die_id": cpu.die}
        for name, value in facts.items():
            if value is not None:
                files[f"cpu/cpu{cpu.id}/topology/{name}"] = str(value)
    for rel, text in files.items():
        path = system / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="ascii")
