"""The CPU share model (slicectl.core.shares.shares): seed 004's seven cases on one CPU, exactly,
and the multi-CPU rules (load-proportional group weights, cpusets, tasks, quotas, no controller)."""

from __future__ import annotations

import pytest

from slicectl.core.shares.shares import (
    IDLE_WEIGHT,
    Bound,
    Entity,
    Share,
    ShareKind,
    cgroup_weight,
    nice_weight,
    predict,
)

ONE = frozenset({3})
ALL = frozenset(range(8))


def loops(n: int, prefix: str) -> tuple[Entity, ...]:
    return tuple(Entity(f"{prefix}{i}", ShareKind.PROCESS) for i in range(n))


def seed004(root: int, test: int, a: int, b: int, c: int) -> Entity:
    """seed 004's tree: `test` with groups A, B, C; loops in each, in `test` and the root."""
    groups = tuple(Entity(name, children=loops(n, name.lower()))
                   for name, n in (("A", a), ("B", b), ("C", c)) if n)
    return Entity("root", children=(Entity("test", children=(*groups, *loops(test, "t"))),
                                     *loops(root, "r")))


# (root loops, test loops, A, B, C) and the %CPU of each loop by seed 004's arithmetic
# (its measurements: 99.8; 33.3 x3; 33.6/33.3/16.6/16.6; 24.9 x3, 12.6/12.3; ...).
SEED_004 = {
    1: ((0, 0, 1, 0, 0), {"a0": 100.0}),
    2: ((0, 0, 1, 1, 1), {"a0": 100 / 3, "b0": 100 / 3, "c0": 100 / 3}),
    3: ((0, 0, 1, 1, 2), {"a0": 100 / 3, "b0": 100 / 3, "c0": 100 / 6, "c1": 100 / 6}),
    4: ((0, 1, 1, 1, 2), {"t0": 25.0, "a0": 25.0, "b0": 25.0, "c0": 12.5, "c1": 12.5}),
    5: ((0, 2, 1, 1, 2), {"t0": 20.0, "t1": 20.0, "a0": 20.0, "b0": 20.0, "c0": 10.0,
                          "c1": 10.0}),
    6: ((1, 0, 1, 1, 2), {"r0": 50.0, "a0": 50 / 3, "b0": 50 / 3, "c0": 50 / 6, "c1": 50 / 6}),
    7: ((2, 0, 1, 1, 2), {"r0": 100 / 3, "r1": 100 / 3, "a0": 100 / 9, "b0": 100 / 9,
                          "c0": 100 / 18, "c1": 100 / 18}),
}


def by_name(shares: tuple[Share, ...]) -> dict[str, Share]:
    return {s.name: s for s in shares}


@pytest.mark.parametrize("case", sorted(SEED_004), ids=lambda c: f"case{c}")
def test_seed_004_cases_on_one_cpu(case: int) -> None:
    counts, expected = SEED_004[case]
    got = {s.name: 100 * s.cores for s in predict(seed004(*counts), ONE)}
    assert got == pytest.approx(expected, abs=1e-9)


def test_weights_in_the_kernels_unit() -> None:
    assert cgroup_weight(100) == 1024 == nice_weight(0)
    assert cgroup_weight(1) == 10 and cgroup_weight(10000) == 102400
    assert nice_weight(-20) == 88761 and nice_weight(19) == 15 and nice_weight(5) == 335


def test_weights_split_a_cpu() -> None:
    """cpu.shares 1024 vs 2048 (seed 004's first example): one third vs two thirds."""
    root = Entity("root", children=(Entity("A", weight=1024), Entity("B", weight=2048)))
    got = by_name(predict(root, ONE))
    assert got["A"].cores == pytest.approx(1 / 3) and got["B"].cores == pytest.approx(2 / 3)
    assert got["A"].bound is got["B"].bound is Bound.WEIGHT


def test_alone_on_its_cpus_gets_all_of_them() -> None:
    root = Entity("root", children=(
        Entity("system.slice", cpus=frozenset({0, 4})),
        Entity("tenants.slice", cpus=ALL - {0, 4}, children=(
            Entity("db", cpus=frozenset({1, 5}), weight=cgroup_weight(10)),
            Entity("web", cpus=frozenset({2, 3, 6, 7}))))))
    got = by_name(predict(root, ALL))
    assert got["db"].cores == 2 and got["db"].bound is Bound.CPUS
    assert got["web"].cores == 4 and got["system.slice"].cores == 2


def test_a_groups_weight_follows_its_load() -> None:
    """calc_group_shares: tenants.slice busy on 2 of 8 CPUs weighs 1024/2 on each of them,
    against system.slice's 1024/8 per CPU, so it keeps 4/5 of those CPUs."""
    root = Entity("root", children=(
        Entity("system.slice"),
        Entity("tenants.slice", children=(Entity("db", cpus=frozenset({1, 5})),))))
    got = by_name(predict(root, ALL))
    assert got["db"].cores == pytest.approx(2 * 512 / (512 + 128))
    assert got["system.slice"].cores == pytest.approx(6 + 2 * 128 / 640)
    assert sum(s.cores for s in got.values()) == pytest.approx(8)


def test_shared_pool_by_weight() -> None:
    pool = frozenset({4, 5, 6, 7})
    root = Entity("root", children=(Entity("tenants.slice", children=(
        Entity("web", cpus=pool, weight=cgroup_weight(100)),
        Entity("batch", cpus=pool, weight=cgroup_weight(400)))),))
    got = by_name(predict(root, ALL))
    assert got["web"].cores == pytest.approx(0.8) and got["batch"].cores == pytest.approx(3.2)


def test_a_root_task_against_a_spread_group() -> None:
    """A nice-0 task on CPU 0 weighs 1024 there; a group busy on 8 CPUs only 128 per CPU."""
    root = Entity("root", children=(
        Entity("loop", ShareKind.PROCESS, cpus=frozenset({0})),
        Entity("tenants.slice", children=(Entity("t"),))))
    got = by_name(predict(root, ALL))
    assert got["loop"].cores == pytest.approx(1024 / 1152)
    assert got["t"].cores == pytest.approx(8 - 1024 / 1152)


def test_unpinned_tasks_spread_one_per_cpu() -> None:
    root = Entity("root", children=(*loops(3, "r"), Entity("r9", ShareKind.PROCESS,
                                                            cpus=frozenset({0}))))
    got = by_name(predict(root, frozenset({0, 1})))
    # r9 pinned to CPU 0 first; r0 -> CPU 1, r1 -> CPU 0 (1 task each, lowest), r2 -> CPU 1
    assert {n: s.cpus for n, s in got.items()} == {
        "r9": {0}, "r0": {1}, "r1": {0}, "r2": {1}}
    assert all(s.cores == pytest.approx(0.5) for s in got.values())


def test_nice_and_idle_weights() -> None:
    root = Entity("root", children=(
        Entity("nice5", ShareKind.PROCESS, weight=nice_weight(5)),
        Entity("idle", weight=IDLE_WEIGHT), Entity("normal")))
    got = by_name(predict(root, ONE))
    assert got["normal"].cores == pytest.approx(1024 / (1024 + 335 + 3))
    assert got["idle"].cores < 0.003


def test_quota_caps_without_handing_on() -> None:
    """A quota below the weight share caps it; the rest is not counted for the others (the
    results are lower bounds)."""
    root = Entity("root", children=(Entity("a", quota=0.25), Entity("b")))
    got = by_name(predict(root, frozenset({0, 1})))
    assert got["a"].cores == 0.25 and got["a"].bound is Bound.QUOTA
    assert got["b"].cores == pytest.approx(1.0) and got["b"].bound is Bound.WEIGHT


def test_without_cpu_controller_threads_compete() -> None:
    """No cpu controller in tenants.slice: tenants sharing a CPU are guaranteed nothing
    there; one alone on its CPUs still gets them."""
    root = Entity("root", children=(Entity("tenants.slice", cpu_groups=False, children=(
        Entity("a", cpus=frozenset({0, 1})), Entity("b", cpus=frozenset({1})),
        Entity("c", cpus=frozenset({2, 3})))),))
    got = by_name(predict(root, frozenset({0, 1, 2, 3})))
    assert got["a"].cores == 1 and got["a"].bound is Bound.THREADS
    assert got["b"].cores == 0 and got["b"].bound is Bound.THREADS
    assert got["c"].cores == 2 and got["c"].bound is Bound.CPUS


def test_cpuset_outside_the_parent_falls_back_to_the_parents() -> None:
    root = Entity("root", children=(Entity("p", cpus=frozenset({0}), children=(
        Entity("x", cpus=frozenset({5})),)),))
    (x,) = predict(root, frozenset({0, 5}))
    assert x.cpus == {0} and x.cores == 1
