"""What one read of the cgroup tree holds (slicectl.core.monitor.samples): values as the kernel
reports them, built by hand as every consumer's tests do."""

from __future__ import annotations

import dataclasses

import pytest

from slicectl.core.monitor.samples import CgroupSample, NodeMemory, Pressure, PsiLine, Snapshot

UNKNOWN = {f.name: None for f in dataclasses.fields(CgroupSample)
           if f.default is dataclasses.MISSING and f.name not in ("unit", "path", "inode")}


def sample(**values: object) -> CgroupSample:
    return CgroupSample(**{"unit": "tenants-db1.slice", "path": "tenants.slice/tenants-db1.slice",
                           "inode": 7, **UNKNOWN, **values})  # type: ignore[arg-type]


def test_node_memory_total_is_anon_plus_page_cache() -> None:
    assert NodeMemory(node=1, anon=3 << 20, file=1 << 20).total == 4 << 20


def test_a_sample_defaults_to_unknown_numa_and_io_and_nothing_unreadable() -> None:
    s = sample(usage_usec=5)
    assert (s.numa, s.io_read_bytes, s.io_write_bytes, s.unreadable) == (
        None, None, None, frozenset())


def test_samples_compare_and_hash_by_value() -> None:
    """Two reads of an unchanged cgroup are equal (and hash alike), whatever object holds
    them; a recreated cgroup (new inode) is not the same."""
    psi = Pressure(PsiLine(1.0, 0.5, 0.1, 1234), None)
    a, b = sample(cpu_pressure=psi), sample(cpu_pressure=psi)
    assert a == b and hash(a) == hash(b) and a is not b
    assert sample(inode=8) != a


def test_snapshot_is_immutable() -> None:
    snap = Snapshot(time=1.0, cgroups={}, host_cpus=8)
    assert snap.host_mems is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.time = 2.0  # type: ignore[misc]
