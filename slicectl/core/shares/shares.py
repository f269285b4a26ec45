"""CPU shares under contention: what each entity of a cgroup tree gets when all are busy (pure).

The kernel's fair scheduler (CFS) shares each CPU level by level: the runnable entities of one
cgroup (its child cgroups and the tasks directly in it) split the cgroup's time on that CPU in
proportion to their weights (the cpu.shares experiments: every process directly in a group
competes as one sibling with that group's sub-groups; one root task + the `test` group got
50/50). The facts the model rests on, all from kernel/sched/fair.c and core.c:

- Weights are in the kernel's unit: a nice-0 task weighs 1024, and so does a cgroup with
  cpu.weight 100 (`sched_weight_from_cgroup`: weight * 1024 / 100, rounded); cpu.idle = 3.
- A cgroup's weight is spread over the CPUs it runs on in proportion to its load there
  (`calc_group_shares`: shares * load on this CPU / load on all CPUs); a busy cgroup's load
  on a CPU is the sum of its children's weights there.
- Only what may run on a CPU competes on it (cpusets, task affinity).
- Without the cpu controller in a cgroup's `cgroup.subtree_control`, its children are not
  scheduled as groups: every thread below it competes on its own, so what each child gets
  depends on how many threads it runs and none is guaranteed anything.

"Busy" means: a unit (a cgroup) has runnable threads on every CPU it may use, evenly; a
process is one task that always runs, on one CPU. A process pinned to one CPU stays there;
others are put on the CPU of their affinity holding the fewest tasks (ties: the lowest CPU),
as the load balancer spreads tasks. A quota caps what its unit gets; what it leaves is not
handed to the others, so every result is a lower bound (a guarantee) rather than a forecast.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from slicectl.core.frozen import frozen

NICE_0_WEIGHT = 1024  # a nice-0 task; a cgroup with cpu.weight 100
IDLE_WEIGHT = 3  # cpu.idle = 1 (WEIGHT_IDLEPRIO)
DEFAULT_CPU_WEIGHT = 100
# kernel/sched/core.c sched_prio_to_weight: nice -20 .. 19
PRIO_TO_WEIGHT = (
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
    9548, 7620, 6100, 4904, 3906, 3121, 2501, 1991, 1586, 1277,
    1024, 820, 655, 526, 423, 335, 272, 215, 172, 137,
    110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
)
EPSILON = 1e-9


def cgroup_weight(cpu_weight: int) -> int:
    """A cgroup's cpu.weight (1..10000) in the kernel's unit: 100 -> 1024."""
    return (cpu_weight * NICE_0_WEIGHT + DEFAULT_CPU_WEIGHT // 2) // DEFAULT_CPU_WEIGHT


def nice_weight(nice: int) -> int:
    """A task's weight from its nice value (-20..19): 0 -> 1024."""
    return PRIO_TO_WEIGHT[max(-20, min(19, nice)) + 20]


def as_cpu_weight(weight: int) -> float:
    """A kernel weight on cpu.weight's scale (1024 -> 100), for people."""
    return weight * DEFAULT_CPU_WEIGHT / NICE_0_WEIGHT


class ShareKind(StrEnum):
    """A cgroup (busy on every CPU it may use) or a single task (busy on one CPU)."""

    UNIT = "unit"
    PROCESS = "process"


class Bound(StrEnum):
    """What decides an entity's share."""

    CPUS = "cpus"  # nothing else runs on its CPUs: it gets all of them
    WEIGHT = "weight"  # it shares its CPUs with others in proportion to the weights
    QUOTA = "quota"  # its quota is below what its weight would give
    THREADS = "threads"  # no cpu controller at its level: threads compete, nothing guaranteed


@frozen
class Entity:
    """A node of the tree: a cgroup with its children, a busy leaf cgroup, or a task."""

    name: str
    kind: ShareKind = ShareKind.UNIT
    weight: int = NICE_0_WEIGHT  # kernel unit
    cpus: frozenset[int] | None = None  # AllowedCPUs or affinity; None: all of the parent's
    quota: float | None = None  # in cores
    children: tuple[Entity, ...] = ()
    cpu_groups: bool = True  # cpu in its cgroup.subtree_control: children scheduled as groups


@frozen
class Share:
    """What one leaf of the tree is guaranteed when everything is busy."""

    path: tuple[str, ...]  # names from below the root down to the leaf
    kind: ShareKind
    weight: int
    cpus: frozenset[int]  # the CPUs it may run on (effective)
    cores: float
    bound: Bound

    @property
    def name(self) -> str:
        return self.path[-1]


@dataclass(eq=False)
class _Node:
    entity: Entity
    path: tuple[str, ...]
    cpus: frozenset[int]
    children: list[_Node] = field(default_factory=list)
    cpu: int | None = None  # a task's CPU
    load: dict[int, float] = field(default_factory=dict)  # a group's runqueue load per CPU
    weight_at: dict[int, float] = field(default_factory=dict)  # a group's weight per CPU

    @property
    def leaf(self) -> bool:
        return not self.entity.children

    def leaves(self) -> Iterator[_Node]:
        if self.leaf:
            yield self
        for child in self.children:
            yield from child.leaves()


def _build(entity: Entity, parent_cpus: frozenset[int], path: tuple[str, ...]) -> _Node:
    # cpuset semantics: effective = allowed ∩ parent's; nothing in common -> the parent's.
    cpus = parent_cpus if entity.cpus is None else (entity.cpus & parent_cpus or parent_cpus)
    node = _Node(entity, path, cpus)
    node.children = [_build(c, cpus, (*path, c.name)) for c in entity.children]
    return node


def _place_tasks(root: _Node) -> None:
    """Each task on one CPU: its only one, else the one with the fewest tasks so far."""
    tasks = [n for n in root.leaves() if n.entity.kind is ShareKind.PROCESS]
    count: dict[int, int] = defaultdict(int)
    for task in sorted(tasks, key=lambda n: len(n.cpus) > 1):  # stable: pinned ones first
        task.cpu = min(task.cpus, key=lambda c: (count[c], c))
        count[task.cpu] += 1


def _spread(into: dict[int, float], by_set: dict[frozenset[int], float]) -> None:
    for cpus, value in by_set.items():
        for c in cpus:
            into[c] += value


def _weigh(node: _Node) -> None:
    """Bottom-up: each group's runqueue load per CPU, and its weight there as its parent's
    child (calc_group_shares). A busy leaf cgroup spreads its weight evenly."""
    load: dict[int, float] = defaultdict(float)
    uniform: dict[frozenset[int], float] = defaultdict(float)
    if node.entity.cpu_groups:
        for child in node.children:
            if child.entity.kind is ShareKind.PROCESS:
                assert child.cpu is not None
                load[child.cpu] += child.entity.weight
            elif child.leaf:
                uniform[child.cpus] += child.entity.weight / len(child.cpus)
            else:
                _weigh(child)
                for c, w in child.weight_at.items():
                    load[c] += w
    else:  # every thread on its own: count one nice-0 thread per CPU a busy unit may use
        for leaf in node.leaves():
            if leaf.entity.kind is ShareKind.PROCESS:
                assert leaf.cpu is not None
                load[leaf.cpu] += leaf.entity.weight
            else:
                uniform[leaf.cpus] += NICE_0_WEIGHT
    _spread(load, uniform)
    node.load = dict(load)
    total = sum(load.values())
    node.weight_at = ({c: node.entity.weight * w / total for c, w in load.items()}
                      if total > 0 else {})


def _share_groups(node: _Node, share_at: dict[int, float], out: list[Share]) -> None:
    """Top-down: split the group's share of each CPU among the children present there."""
    if not node.entity.cpu_groups:
        _share_threads(node, share_at, out)
        return
    per_set: dict[frozenset[int], float] = {}
    for child in node.children:
        e = child.entity
        if e.kind is ShareKind.PROCESS:
            assert child.cpu is not None
            cores = share_at.get(child.cpu, 0.0) * e.weight / node.load[child.cpu]
            out.append(_leaf_share(child, cores, threads=False))
        elif child.leaf:
            if child.cpus not in per_set:  # Σ over its CPUs of (group's share / load there)
                per_set[child.cpus] = sum(share_at.get(c, 0.0) / node.load[c]
                                          for c in child.cpus)
            cores = e.weight / len(child.cpus) * per_set[child.cpus]
            out.append(_leaf_share(child, cores, threads=False))
        else:
            _share_groups(child, {c: share_at.get(c, 0.0) * w / node.load[c]
                                  for c, w in child.weight_at.items()}, out)


def _share_threads(node: _Node, share_at: dict[int, float], out: list[Share]) -> None:
    """No cpu controller here: a CPU is guaranteed to a leaf only when nothing else below
    this group may run on it (otherwise it goes by thread counts, which nobody knows)."""
    leaves = list(node.leaves())
    present: dict[int, int] = defaultdict(int)
    for leaf in leaves:
        for c in _cpus_used(leaf):
            present[c] += 1
    for leaf in leaves:
        cpus = _cpus_used(leaf)
        cores = sum(share_at.get(c, 0.0) for c in cpus if present[c] == 1)
        out.append(_leaf_share(leaf, cores, threads=any(present[c] > 1 for c in cpus)))


def _cpus_used(leaf: _Node) -> frozenset[int]:
    return frozenset((leaf.cpu,)) if leaf.cpu is not None else leaf.cpus


def _leaf_share(leaf: _Node, cores: float, threads: bool) -> Share:
    e = leaf.entity
    capacity = 1 if e.kind is ShareKind.PROCESS else len(leaf.cpus)
    if threads:
        bound = Bound.THREADS
    elif e.quota is not None and e.quota < cores - EPSILON:
        cores, bound = e.quota, Bound.QUOTA
    elif cores >= capacity - EPSILON:
        bound = Bound.CPUS
    else:
        bound = Bound.WEIGHT
    return Share(leaf.path, e.kind, e.weight, _cpus_used(leaf) if e.kind is ShareKind.PROCESS
                 else leaf.cpus, max(0.0, min(cores, float(capacity))), bound)


def predict(root: Entity, online: frozenset[int]) -> tuple[Share, ...]:
    """The guaranteed share of every leaf below `root` (the root cgroup) on `online` CPUs."""
    tree = _build(root, online, ())
    _place_tasks(tree)
    _weigh(tree)
    out: list[Share] = []
    _share_groups(tree, dict.fromkeys(online, 1.0), out)
    return tuple(out)
