"""A slice's cpuset partition as the monitors show it (slicectl.core.monitor.cpuset_partition):
none for a member, the kernel's reason for one it refused, the CPUs a valid one lacks, and
the `partition` trouble flag for either. What status, the TUI and the exporter print of it:
test_monitor.py, test_tui_detail.py, test_exporter.py."""

from __future__ import annotations

import pytest
from core.monitor.test_metrics import sample

from slicectl.core.monitor.metrics import SliceMetrics, Trouble
from slicectl.core.properties.partition import PartitionState


@pytest.mark.parametrize(("partition", "asked", "problem"), [
    (None, None, None),  # no cpuset controller
    (PartitionState("member"), frozenset(range(4)), None),
    (PartitionState("isolated"), frozenset(range(4)), ""),
    (PartitionState("isolated"), None, ""),  # cpuset.cpus empty: nothing asked, none lost
    (PartitionState("root", valid=False, reason="cpuset.cpus is empty"), frozenset(range(4)),
     "invalid: cpuset.cpus is empty"),
    (PartitionState("root", valid=False), None, "invalid: the kernel gives no reason"),
    (PartitionState("isolated"), frozenset(range(6)),
     "lacks CPUs 4,5 of its cpuset.cpus (a cgroup beside it claims them, or they are offline)"),
])
def test_a_partition_is_trouble_when_refused_or_short_of_cpus(
        partition: PartitionState | None, asked: frozenset[int] | None,
        problem: str | None) -> None:
    """"" for a partition that is fine, None for no partition at all."""
    m = SliceMetrics.from_samples(None, sample(partition=partition, cpus_asked=asked), 1.0)
    if problem is None:
        assert m.partition is None and Trouble.PARTITION not in m.trouble
        return
    assert m.partition is not None
    assert (m.partition.problem() or "") == problem
    assert (Trouble.PARTITION in m.trouble) == bool(problem)
