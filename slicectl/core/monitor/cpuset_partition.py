"""A slice's cpuset partition as the monitors show it (pure): made, refused with the kernel's
reason, or made with fewer CPUs than it asks for.

`status`, `top`, the TUI (`slicectl.views.monitor`, its detail screen) and the exporter
(`slicectl.exporter.families`) all read it from here, so they say the same. The kernel's states
and reasons are `slicectl.core.properties.partition`'s; apply's read-back of the same files
is `slicectl.apply.host_diff.partition_problem`.
"""

from __future__ import annotations

from dataclasses import dataclass

from slicectl.core.cpulist import format_cpulist
from slicectl.core.monitor.samples import CgroupSample
from slicectl.core.properties.partition import MEMBER, PartitionState


# Not frozen, as SliceMetrics, which holds it (slicectl.core.monitor.metrics).
@dataclass(slots=True, unsafe_hash=True)
class PartitionMetrics:
    """A slice that is a cpuset partition (`cpuset.cpus.partition` root or isolated): the
    state the kernel reports, and the CPUs it asks for (`cpuset.cpus`) that a valid one does
    not hold (`cpuset.cpus.effective`): since Linux 7.0 the kernel takes CPUs a sibling also
    claims away from a partition instead of invalidating it; offline CPUs go too."""

    state: PartitionState
    lost_cpus: frozenset[int]

    @classmethod
    def from_sample(cls, s: CgroupSample) -> PartitionMetrics | None:
        """The partition of one sample; None for a member (or no cpuset controller)."""
        p = s.partition
        if p is None or (p.valid and p.state == MEMBER):
            return None
        lost: frozenset[int] = frozenset()
        if p.valid and s.cpus_asked and s.cpus is not None:
            lost = s.cpus_asked - s.cpus
        return cls(p, lost)

    def problem(self) -> str | None:
        """What is wrong with it, for people (None: nothing): "invalid: <the kernel's
        reason>", or "lacks CPUs 3-4 of its cpuset.cpus"."""
        if not self.state.valid:
            return "invalid: " + (self.state.reason or "the kernel gives no reason")
        if self.lost_cpus:
            return (f"lacks CPUs {format_cpulist(self.lost_cpus)} of its cpuset.cpus (a "
                    "cgroup beside it claims them, or they are offline)")
        return None

    def describe(self) -> str:
        """For people: "isolated partition", "isolated partition invalid: <reason>"."""
        problem = self.problem()
        return f"{self.state.state} partition" + (f" {problem}" if problem else "")

    def hint(self) -> str:
        """What a user can do about the problem."""
        if not self.state.valid:
            return self.state.hint()
        return ("give the tenant CPUs no other tenant, the pool or a hand-made cgroup uses, "
                "then `slicectl apply`")
