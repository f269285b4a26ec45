"""Why a tenant got its CPUs (`slicectl plan --explain TENANT`), from the layout (pure).

Placement's rules in the order they decided: CPUs listed in tenants.yaml; kept from the last
apply (stability); moved by a re-pack; one node (`numa: local`), dealt over nodes (`spread`),
or spanning nodes (`any`, when no node had room); then the last-level cache groups inside the
node, and where the memory is bound.
"""

from __future__ import annotations

from slicectl.core.config.config import Config, Tenant
from slicectl.core.cpulist import format_cpulist
from slicectl.core.placement.layout import Layout, TenantPlacement
from slicectl.core.placement.topology import Topology
from slicectl.core.properties.properties import Numa


def explain(config: Config, topo: Topology, layout: Layout, tenant: str) -> list[str]:
    """One sentence per rule that decided `tenant`'s CPUs and memory, in the rules' order."""
    t = next(x for x in config.tenants if x.name == tenant)
    p = layout.of(tenant)
    lines = [_cpus(t, p, layout)]
    if p.exclusive and not p.pool and isinstance(t.cpus, int):
        lines.append(_nodes(t, p))
    if not p.pool:
        lines += _caches(topo, t, p, layout)
    lines.append(_memory(t, p))
    lines += [n for n in layout.notes if f"tenant {tenant} " in n]
    return lines


def _cpus(t: Tenant, p: TenantPlacement, layout: Layout) -> str:
    cpus = format_cpulist(p.cpus)
    before = dict(layout.before).get(t.name)
    move = next((m for m in layout.moves if m.tenant == t.name), None)
    if p.pool:
        return (f"runs on the shared pool (CPUs {cpus}): it asks for no `cpus`, and the pool is "
                "every online CPU that neither housekeeping nor an exclusive tenant holds")
    if isinstance(t.cpus, frozenset):
        return f"CPUs {cpus}: listed in tenants.yaml"
    if not p.exclusive:
        return (f"CPUs {cpus}: {t.cpus} of the shared pool's CPUs (exclusive: false), on as few "
                "nodes and cores as the pool allows")
    if move is not None:
        return f"CPUs {cpus}: moved by the re-pack ({move.describe()})"
    if before == p.cpus:
        return (f"CPUs {cpus}: kept where the last apply placed it (stability: a tenant keeps "
                "its CPUs while they still fit, so changing one tenant moves no other)")
    if before and before < p.cpus:
        return (f"CPUs {cpus}: kept its CPUs {format_cpulist(before)} from the last apply and "
                f"grew by {len(p.cpus - before)} beside them")
    if before and p.cpus < before:
        return (f"CPUs {cpus}: kept {len(p.cpus)} of its CPUs {format_cpulist(before)} from the "
                "last apply, whole cores on the node that held most of them")
    return f"CPUs {cpus}: placed afresh (no earlier placement of it was kept)"


def _nodes(t: Tenant, p: TenantPlacement) -> str:
    nodes = ", ".join(map(str, p.cpu_nodes))
    if t.numa is Numa.SPREAD:
        return (f"numa: spread: a whole core per node in turn, over node(s) {nodes}")
    if len(p.cpu_nodes) > 1:
        return (f"spans nodes {nodes}: no node had {t.cpus} CPUs free for it, and numa: any "
                "lets it span them")
    named = " (named in `nodes`)" if t.nodes is not None else ""
    return (f"on node {nodes}{named}, one node for its CPUs and memory (numa: {t.numa.value}): "
            "of the nodes with room, the one left with the least (best fit), unless keeping "
            "it elsewhere strands another local tenant")


def _caches(topo: Topology, t: Tenant, p: TenantPlacement, layout: Layout) -> list[str]:
    lines = []
    for node in p.cpu_nodes:
        groups = topo.cache_groups(node)
        if len(groups) == 1:
            lines.append(f"node {node}: one last-level cache group (its CPUs share one cache, "
                         "or the cache is unknown or wider than the node: the node stands in)")
            continue
        mine = [g for g in groups if g & p.cpus]
        where = " | ".join(format_cpulist(g) for g in mine)
        count = len(p.cpus & topo.node(node).cpus)
        if len(mine) == 1:
            lines.append(f"node {node}: inside one last-level cache group ({where})")
            continue
        biggest = max(len(g) for g in groups)
        if count > biggest:
            why = f"it has {count} CPUs there, more than a group's {biggest}"
        elif dict(layout.before).get(t.name) == p.cpus:
            why = ("kept where it was (stability wins over cache locality for a tenant that "
                   "already runs)")
        else:
            why = f"no group had {count} CPUs free when it was placed"
        lines.append(f"node {node}: on {len(mine)} last-level cache groups ({where}): {why}")
    return lines


def _memory(t: Tenant, p: TenantPlacement) -> str:
    if p.memory_nodes is None:
        return ("memory not bound (numa: any, or the shared pool without `nodes`): the kernel "
                "allocates it near the CPU that asks")
    nodes = ", ".join(map(str, p.memory_nodes))
    return f"memory bound to node(s) {nodes} (AllowedMemoryNodes): local to its CPUs"
