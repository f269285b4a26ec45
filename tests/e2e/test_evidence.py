"""The headline numbers of docs/evidence/, on shortened runs of the same experiments.

Each test runs an experiment script of docs/evidence/ with quick=True and asserts what
docs/evidence/README.md claims, so the claims stay true. The full runs (`docs/evidence/run`)
are longer and make the committed CSVs and plots.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

EVIDENCE = Path(__file__).resolve().parents[2] / "docs" / "evidence"
sys.path.insert(0, str(EVIDENCE))

import a_shares  # noqa: E402
import b_realloc  # noqa: E402
import c_rogue  # noqa: E402
import d_pagecache  # noqa: E402
import e_quota  # noqa: E402
import f_numa  # noqa: E402
import g_balance  # noqa: E402
import h_isolated  # noqa: E402
import lab  # noqa: E402


def test_a_seed_004_cases_match_the_prediction_within_1pp() -> None:
    rows = a_shares.main(quick=True)
    assert {r.case for r in rows} == set(range(1, 8))
    assert len(rows) == 1 + 3 + 4 + 5 + 6 + 5 + 6  # every loop of every case
    off = [f"case {r.case} {r.loop}: predicted {r.predicted_pct:.2f}% measured "
           f"{r.measured_pct:.2f}%" for r in rows if abs(r.error_pp) > 1.0]
    assert not off, off
    # the prediction is seed 004's arithmetic: case 7's root loops a third, C's loops 1/18
    case7 = {r.loop: r.predicted_pct for r in rows if r.case == 7}
    assert abs(case7["root1"] - 100 / 3) < 0.01 and abs(case7["c2"] - 100 / 18) < 0.01


def test_b_throughput_follows_the_cpus_within_2s() -> None:
    result = b_realloc.main(quick=True)
    assert result.follow_s <= 2.0, result  # from the cpuset change, not the apply's start
    # alpha does more by day (2 CPUs vs 1) and less at night (1 vs 2): at least 1.6x either
    # way. More than 2x is what the testbed gives (the tenant on 1 vCPU time-shares 2
    # workers on it and loses some of it to switching), so no upper bound.
    assert result.day_ratio >= 1.6, result
    assert result.night_ratio <= 1 / 1.6, result


def test_c_a_rogue_tenants_pressure_stays_its_own() -> None:
    result = c_rogue.main(quick=True)
    assert result.rogue_peak_mib > 160, result  # the hog went over memory_high
    assert result.rogue_memory_pct > 10, result
    assert result.calm_memory_pct < 1, result  # means over the phase, as PSI's avg10 is
    assert result.rogue_cpu_pct > 50, result
    assert result.calm_cpu_pct < 1, result


def test_d_memory_low_keeps_the_page_cache() -> None:
    result = d_pagecache.main(quick=True)
    assert result.refaults_lost >= d_pagecache.PRESSURE, f"too little pressure: {result}"
    assert result.refaults_kept * 10 < result.refaults_lost, result
    assert result.cache_kept_mib >= 0.8 * result.working_set_mib, result


def test_e_quotas_without_pinning_leave_cpus_idle() -> None:
    # The 2-vCPU shape (docs/evidence/README.md: why not seed 003's 8 CPUs under TCG).
    result = e_quota.main(quick=True)
    # pinned: each tenant's quota is its CPU; it uses it, unthrottled, nothing idle
    assert result.idle_pinned_pct < 1, result
    assert result.throttled_pinned_pct < 1, result
    # unpinned: the same quotas throttle the tenants while their CPUs sit idle
    assert result.throttled_unpinned_pct > 1, result
    assert result.idle_unpinned_pct > result.idle_pinned_pct, result
    assert result.cores_pinned >= result.cores_unpinned, result


def test_f_allowed_memory_nodes_keeps_memory_local() -> None:
    result = f_numa.main(quick=True)
    assert result.locality_bound >= 0.99, result
    assert result.locality_unbound < 0.75, result


def test_g_the_core_follows_alternating_demand() -> None:
    result = g_balance.main(quick=True)
    # the busy tenant's cpuset grows after every switch: a window (3 s) of readings after the
    # switch, at most an interval (1 s) to the first one, the move, and slack for TCG
    switches = len(g_balance.PHASES) * g_balance.QUICK_ROUNDS.count("balancer")
    assert len(result.follow_s) == switches, result
    assert max(result.follow_s) <= 10.0, result
    assert result.moves == switches, result
    assert result.restored, result  # the balancer's stop gave the declared CPUs back
    # the second CPU is real work on this testbed (at most 2 vCPUs busy), and the balancer's
    # rounds do more than the static split's. Not more: the static split's and the balancer's
    # rounds run minutes apart on a host whose load moves ops/s by 20-40 % (README).
    assert result.gain_2cpu >= 1.2, result
    assert result.ratio >= 1.0, result


H_VERSIONS = h_isolated.versions() if os.environ.get("SLICECTL_TESTBED") else (0, (0, 0))


@pytest.mark.skipif(H_VERSIONS[0] < 261 or H_VERSIONS[1] < (6, 7),
                    reason="needs systemd 261 and Linux 6.7 (Debian forky in the release "
                    f"matrix): this guest runs systemd {H_VERSIONS[0]} and Linux "
                    f"{H_VERSIONS[1][0]}.{H_VERSIONS[1][1]}")
def test_h_an_isolated_tenant_leaves_load_balancing_and_the_unbound_workqueues() -> None:
    result = h_isolated.main(quick=True)
    member, isolated = result.member, result.isolated
    cpus = lab.parse_cpulist(isolated.cpus)
    assert member.partition == "member" and isolated.partition == "isolated", result
    # the kernel counts the tenant's CPUs as isolated, and no unbound workqueue runs there
    assert lab.parse_cpulist(isolated.kernel_isolated) == cpus, result
    assert not cpus & lab.parse_cpulist(isolated.workqueue_cpus), result
    assert cpus <= lab.parse_cpulist(member.workqueue_cpus), result
    assert member.samples > 0 and isolated.samples > 0, result
