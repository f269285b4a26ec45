"""cpuset partitions (`cpuset_partition:`, systemd's CPUSetPartition=): the states the kernel
reports in `cpuset.cpus.partition`, why it refuses one, and the exclusive CPUs the parents of a
partition need (pure).

Kernel facts, from Documentation/admin-guide/cgroup-v2.rst ("cpuset.cpus.partition",
"cpuset.cpus.exclusive") and kernel/cgroup/cpuset.c (`perr_strings[]`):
- A partition whose parent cgroup is not itself a valid partition root is a *remote*
  partition (Linux 6.7, with `cpuset.cpus.exclusive`): "Writing the proper
  cpuset.cpus.exclusive values down the cgroup hierarchy before the target partition root is
  mandatory". A tenant slice sits below `tenants.slice`, a member, so every ancestor below
  the root needs the tenant's CPUs in its `cpuset.cpus.exclusive`. systemd (CPUSetPartition=,
  systemd#42013) writes only `cpuset.cpus.partition` and offers no setting for
  `cpuset.cpus.exclusive`, so slicectl writes those files itself (slicectl.apply.partitions).
- A refused or broken partition still reads as the value asked for, followed by
  ` invalid (<reason>)`; systemd only logs a warning. Since Linux 7.0 a sibling's conflicting
  `cpuset.cpus` strips CPUs from a partition instead of invalidating it, so a valid state is
  checked against `cpuset.cpus.effective` too.
- `isolated` CPUs leave the scheduler's load balancing and the unbound workqueues' mask.
"""

from __future__ import annotations

from collections.abc import Mapping

from slicectl.core.frozen import frozen

MEMBER = "member"
ROOT = "root"
ISOLATED = "isolated"
PARTITION_VALUES = (MEMBER, ROOT, ISOLATED)  # systemd's default first
# The kernel release whose cpuset.cpus.exclusive lets a partition sit below a member parent
# (remote partitions), which is where every tenant slice is.
REMOTE_PARTITION_KERNEL = (6, 7)

# Why the kernel refuses a partition: each reason `perr_strings[]` in kernel/cgroup/cpuset.c has
# had (older spellings too), with what a user can do about it.
KERNEL_REASONS: Mapping[str, str] = {
    "Invalid cpu list in cpuset.cpus.exclusive":
        "a parent's cpuset.cpus.exclusive does not hold the tenant's CPUs (slicectl writes "
        "them on apply, and slicectl-partitions.service at boot: see `systemctl status "
        "slicectl-partitions.service`, or run `slicectl apply` again)",
    "Invalid cpu list in cpuset.cpus":
        "the tenant's CPUs are not all available to its parent",
    "Parent is an invalid partition root":
        "the parent slice is a partition the kernel refused: fix that one first",
    "Parent is not a partition root":
        "this kernel cannot make a partition below a member parent (remote partitions need "
        "Linux 6.7): upgrade the kernel",
    "Cpu list in cpuset.cpus not exclusive":
        "another cgroup beside it claims some of these CPUs: give the tenant CPUs no other "
        "tenant, the pool or a hand-made cgroup uses",
    "Parent unable to distribute cpu downstream":
        "taking these CPUs would leave processes of the parent with no CPU: leave CPUs to the "
        "pool or to housekeeping",
    "No cpu available due to hotplug":
        "the tenant's CPUs are offline: bring them online, or give the tenant online CPUs",
    "cpuset.cpus is empty":
        "the tenant has no CPUs: give it cpus",
    "cpuset.cpus and cpuset.cpus.exclusive are empty":
        "the tenant has no CPUs: give it cpus",
    "partition config conflicts with housekeeping setup":
        "CPUs isolated at boot (isolcpus=, nohz_full=) can only go into an isolated "
        "partition, and one must keep housekeeping CPUs: use cpuset_partition: isolated, or "
        "other CPUs",
    "Enable partition not permitted":
        "the kernel does not let this cgroup become a partition (a delegated subtree or a "
        "cgroup namespace): apply as root on the host",
    "Have remote partition underneath":
        "a partition below this one holds some of its CPUs: remove that partition first",
}


@frozen
class PartitionState:
    """What `cpuset.cpus.partition` says: a state, and the kernel's reason when invalid."""

    state: str  # member, root, isolated (or whatever a later kernel writes)
    valid: bool = True
    reason: str = ""  # the kernel's reason, in its words, when invalid

    @classmethod
    def parse(cls, text: str) -> PartitionState:
        """ "isolated" -> valid isolated; "isolated invalid (reason)" -> invalid, with the
        reason; "root invalid" (kernels before the reasons) -> invalid, no reason."""
        word, _, rest = text.strip().partition(" ")
        if not rest:
            return cls(word)
        rest = rest.strip()
        if rest.startswith("invalid"):
            reason = rest.removeprefix("invalid").strip()
            if reason.startswith("(") and reason.endswith(")"):
                reason = reason[1:-1]
            return cls(word, valid=False, reason=reason)
        return cls(word, valid=False, reason=rest)

    def hint(self) -> str:
        """What a user can do about an invalid partition, from the kernel's reason."""
        return KERNEL_REASONS.get(self.reason, "see `cpuset.cpus.partition` in the kernel's "
                                               "Documentation/admin-guide/cgroup-v2.rst")

    def describe(self) -> str:
        """For people: "isolated", or "isolated invalid: <reason>"."""
        if self.valid:
            return self.state
        return f"{self.state} invalid" + (f": {self.reason}" if self.reason else "")


def is_partition(value: object) -> bool:
    """Whether a cpuset_partition value makes a partition (root or isolated)."""
    return value in (ROOT, ISOLATED)


def slice_cgroup(unit: str) -> str:
    """The cgroup systemd gives a slice, from its name (each "-" a level of the tree, as
    systemd.slice(5) says): "tenants-a.slice" -> "/tenants.slice/tenants-a.slice"."""
    name = unit.removesuffix(".slice")
    if name in ("", "-"):
        return "/"
    words = name.split("-")
    return "".join(f"/{'-'.join(words[:n])}.slice" for n in range(1, len(words) + 1))


def ancestors(control_group: str) -> list[str]:
    """Every cgroup from the top below the root down to `control_group` itself:
    "/tenants.slice/tenants-a.slice" -> ["/tenants.slice", "/tenants.slice/tenants-a.slice"]."""
    parts = [p for p in control_group.split("/") if p]
    return ["/" + "/".join(parts[:n]) for n in range(1, len(parts) + 1)]


def exclusive_cpus(partitions: Mapping[str, frozenset[int]]) -> dict[str, frozenset[int]]:
    """The `cpuset.cpus.exclusive` each cgroup needs, from partitions {ControlGroup: CPUs}:
    every ancestor below the root, and the partition itself, holds the CPUs of every
    partition at or below it."""
    need: dict[str, frozenset[int]] = {}
    for group, cpus in partitions.items():
        for g in ancestors(group):
            need[g] = need.get(g, frozenset()) | cpus
    return need


def exclusive_steps(current: Mapping[str, frozenset[int]], want: Mapping[str, frozenset[int]]
                    ) -> list[tuple[str, frozenset[int]]]:
    """The writes that take each cgroup's `cpuset.cpus.exclusive` from `current` to `want`
    (both keyed by ControlGroup; a cgroup missing from `want` wants none), in an order the
    kernel accepts: a child's exclusive CPUs must be among its parent's, so CPUs are first
    taken away children first, then added parents first."""
    groups = sorted(set(current) | set(want), key=lambda g: (g.count("/"), g))
    steps: list[tuple[str, frozenset[int]]] = []
    now = dict(current)
    for g in reversed(groups):  # deepest first: shrink
        kept = now.get(g, frozenset()) & want.get(g, frozenset())
        if kept != now.get(g, frozenset()):
            steps.append((g, kept))
            now[g] = kept
    for g in groups:  # top first: grow
        if want.get(g, frozenset()) != now.get(g, frozenset()):
            steps.append((g, want.get(g, frozenset())))
    return steps
