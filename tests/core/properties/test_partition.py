"""cpuset partitions in the core: the states and reasons the kernel reports, the exclusive
CPUs a partition's parents need and the order the kernel takes them in, what the cgroup files
must say, and the config and version checks of `cpuset_partition:`."""

from __future__ import annotations

import pytest

from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.errors import ConfigError
from slicectl.core.plan import FileKind, Section, UnitPlan
from slicectl.core.properties.kinds import PlanValue
from slicectl.core.properties.live_values import cgroup_expectations, desired
from slicectl.core.properties.partition import (
    KERNEL_REASONS,
    PartitionState,
    ancestors,
    exclusive_cpus,
    exclusive_steps,
)
from slicectl.core.properties.versions import check_version, kernel_problems

# Every string perr_strings[] in kernel/cgroup/cpuset.c has held (its PERR_CPUSEMPTY and
# PERR_INVCPUS changed wording over the releases; PERR_ACCESS/PERR_PMT and PERR_REMOTE came
# later): each gets a hint of its own.
KERNEL_STRINGS = [
    "Invalid cpu list in cpuset.cpus.exclusive", "Invalid cpu list in cpuset.cpus",
    "Parent is an invalid partition root", "Parent is not a partition root",
    "Cpu list in cpuset.cpus not exclusive", "Parent unable to distribute cpu downstream",
    "No cpu available due to hotplug", "cpuset.cpus is empty",
    "cpuset.cpus and cpuset.cpus.exclusive are empty",
    "partition config conflicts with housekeeping setup", "Enable partition not permitted",
    "Have remote partition underneath",
]


@pytest.mark.parametrize("reason", KERNEL_STRINGS)
@pytest.mark.parametrize("state", ["root", "isolated"])
def test_every_documented_reason_is_read_with_a_hint(state: str, reason: str) -> None:
    got = PartitionState.parse(f"{state} invalid ({reason})\n")
    assert (got.state, got.valid, got.reason) == (state, False, reason)
    assert got.hint() == KERNEL_REASONS[reason]
    assert got.describe() == f"{state} invalid: {reason}"


def test_states_without_a_reason() -> None:
    assert PartitionState.parse("isolated\n") == PartitionState("isolated")
    assert PartitionState.parse("member") == PartitionState("member")
    old = PartitionState.parse("root invalid\n")  # kernels before the reasons (< 6.1)
    assert (old.valid, old.reason) == (False, "")
    assert "cgroup-v2.rst" in PartitionState.parse("root invalid (something new)").hint()
    assert set(KERNEL_REASONS) == set(KERNEL_STRINGS)


def test_every_ancestor_below_the_root_holds_the_cpus_of_the_partitions_below_it() -> None:
    assert ancestors("/tenants.slice/tenants-a.slice") == [
        "/tenants.slice", "/tenants.slice/tenants-a.slice"]
    assert exclusive_cpus({"/t.slice/t-a.slice": frozenset({2, 3}),
                           "/t.slice/t-b.slice": frozenset({6})}) == {
        "/t.slice": frozenset({2, 3, 6}), "/t.slice/t-a.slice": frozenset({2, 3}),
        "/t.slice/t-b.slice": frozenset({6})}


def test_exclusive_cpus_are_taken_children_first_and_given_parents_first() -> None:
    parent, a, b = "/t.slice", "/t.slice/t-a.slice", "/t.slice/t-b.slice"
    current = {parent: frozenset({1, 2}), a: frozenset({1, 2}), b: frozenset()}
    want = {parent: frozenset({2, 3}), a: frozenset({2}), b: frozenset({3})}
    assert exclusive_steps(current, want) == [
        (a, frozenset({2})), (parent, frozenset({2})),  # CPU 1 leaves, the child first
        (parent, frozenset({2, 3})), (b, frozenset({3}))]  # CPU 3 comes, the parent first
    assert exclusive_steps(want, want) == []
    assert exclusive_steps({parent: frozenset({1})}, {}) == [(parent, frozenset())]


def slice_plan(**props: PlanValue) -> UnitPlan:
    return UnitPlan(unit="tenants-a.slice", path="tenants-a.slice", kind=FileKind.UNIT,
                    section=Section.SLICE, properties=props)


def test_an_isolated_slice_must_read_isolated_with_every_planned_cpu() -> None:
    want = desired(slice_plan(AllowedCPUs=frozenset({2, 3}), CPUSetPartition="isolated"))
    got = {e.file: e for e in cgroup_expectations(want)}
    assert got["cpuset.cpus.partition"].matches("isolated\n")
    assert not got["cpuset.cpus.partition"].matches(
        "isolated invalid (Invalid cpu list in cpuset.cpus.exclusive)\n")
    assert not got["cpuset.cpus.partition"].matches(None)  # a kernel without partitions
    assert got["cpuset.cpus.effective"].matches("2-3\n")
    assert not got["cpuset.cpus.effective"].matches("2\n")  # Linux 7.0 strips a CPU
    member = {e.file: e for e in cgroup_expectations(desired(slice_plan()))}
    assert member["cpuset.cpus.partition"].matches(None)  # no cpuset controller: a member
    assert "cpuset.cpus.effective" not in member


def parse(text: str) -> object:
    return parse_config(load_yaml(text, "t.yaml"), "t.yaml")


@pytest.mark.parametrize(("tenant", "line", "message", "hint"), [
    ("{cpuset_partition: isolated}", 3,
     "cpuset_partition: isolated needs the tenant's own CPUs, but tenant db has no cpus",
     "give the tenant cpus"),
    ("{cpus: 2, exclusive: false, cpuset_partition: root}", 3,
     "tenant db has exclusive: false", "remove exclusive: false"),
    ("{cpus: 2, cpus_max: 4, cpuset_partition: isolated}", 3,
     "cpuset_partition: isolated cannot be elastic", "remove cpus_min and cpus_max"),
])
def test_a_partition_without_its_own_exclusive_cpus_is_a_located_error(
        tenant: str, line: int, message: str, hint: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse(f"version: 1\ntenants:\n  db: {tenant}\n")
    [problem] = e.value.problems
    assert (problem.line, problem.key) == (line, "tenants.db.cpuset_partition")
    assert message in problem.message and problem.hint.startswith(hint)


def test_a_profile_that_partitions_a_pool_tenant_is_located_there() -> None:
    with pytest.raises(ConfigError) as e:
        parse("version: 1\ntenants:\n  db: {}\nprofiles:\n  night:\n    db:\n"
              "      cpuset_partition: isolated\n")
    [problem] = e.value.problems
    assert (problem.line, problem.key) == (7, "profiles.night.db.cpuset_partition")
    parse("version: 1\ntenants:\n  db: {}\nprofiles:\n  night:\n    db:\n"
          "      cpuset_partition: member\n")


def test_root_and_isolated_need_linux_6_7_member_any_kernel() -> None:
    config = parse("version: 1\ntenants:\n  a: {cpus: 2, cpuset_partition: isolated}\n"
                   "  b: {cpus: 2, cpuset_partition: member}\n")
    [problem] = kernel_problems(config, "6.6.1", "this host")  # type: ignore[arg-type]
    assert problem.key == "tenants.a.cpuset_partition"
    assert problem.message == "needs Linux 6.7 or later, but the target runs Linux 6.6.1"
    assert kernel_problems(config, "6.7.0", "this host") == []  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as e:
        check_version(config, 260, "--systemd-version")  # type: ignore[arg-type]
    assert [p.key for p in e.value.problems] == ["tenants.a.cpuset_partition",
                                                 "tenants.b.cpuset_partition"]
    assert e.value.problems[0].message.startswith(
        "needs systemd 261 or later and Linux 6.7 or later")
    assert e.value.problems[1].message.startswith("needs systemd 261 or later, but")
    check_version(config, 261, "--systemd-version", "7.2.0")  # type: ignore[arg-type]


def test_systemd_reporting_no_partition_means_member() -> None:
    """Unset, systemd may report an empty word; that is the default, not a difference."""
    from slicectl.core.properties.properties import PROP_BY_NAME

    kind = PROP_BY_NAME["CPUSetPartition"].kind
    assert kind.from_wire("") == "member" and kind.from_wire("isolated") == "isolated"
