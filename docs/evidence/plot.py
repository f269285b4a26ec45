#!/usr/bin/env python3
"""Draw each experiment's PNG from its CSV (on the host; needs the `docs` extra: matplotlib).

    docs/evidence/plot.py [NAME...]      (default: every CSV in docs/evidence/data/)

NAME is a CSV's stem (a_shares, b_realloc, …); the PNG goes next to this script.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
COLORS = {"alpha": "tab:blue", "beta": "tab:orange", "rogue": "tab:red", "calm1": "tab:green",
          "calm2": "tab:olive", "kept": "tab:green", "lost": "tab:red", "web": "tab:blue",
          "batch": "tab:orange"}
NOTE = "testbed: 8 vCPUs, 4 NUMA nodes, systemd 252, cgroup v2, qemu TCG"


def rows(name: str) -> list[dict[str, str]]:
    with (DATA / f"{name}.csv").open() as f:
        return list(csv.DictReader(f))


def save(fig: Figure, name: str, title: str, note: str = NOTE) -> Path:
    fig.suptitle(title, fontsize=12)
    fig.text(0.99, 0.005, note, ha="right", va="bottom", fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.02, 1, 0.97))
    path = HERE / f"{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def a_shares() -> Path:
    data = rows("a_shares")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6))
    cases = sorted({int(r["case"]) for r in data})
    cmap = plt.get_cmap("tab10")
    for case in cases:
        mine = [r for r in data if int(r["case"]) == case]
        left.scatter([float(r["predicted_pct"]) for r in mine],
                     [float(r["measured_pct"]) for r in mine], color=cmap(case - 1),
                     label=f"case {case}", zorder=3)
    left.plot([0, 100], [0, 100], color="grey", lw=0.8)
    left.fill_between([0, 100], [-1, 99], [1, 101], color="grey", alpha=0.2, label="±1 pp")
    left.set(xlabel="slicectl plan: predicted share of CPU 3 (%)",
             ylabel="measured share (%)", xlim=(0, 102), ylim=(0, 102))
    left.legend(fontsize=8)
    labels = [f"{r['case']}:{r['loop']}" for r in data]
    errors = [float(r["error_pp"]) for r in data]
    right.bar(range(len(data)), errors, color=[cmap(int(r["case"]) - 1) for r in data])
    right.axhspan(-1, 1, color="grey", alpha=0.2)
    right.axhline(0, color="grey", lw=0.8)
    right.set_xticks(range(len(data)), labels, rotation=90, fontsize=7)
    right.set(ylabel="measured − predicted (percentage points)", ylim=(-2, 2))
    worst = max(abs(e) for e in errors)
    return save(fig, "a_shares", "(a) the cpu.shares experiments' seven cases on one CPU: "
                f"measured vs predicted (worst {worst:.2f} pp)")


def b_realloc() -> Path:
    sys.path.insert(0, str(HERE))
    import b_realloc as experiment  # its alpha_share, the measure of "follows"

    data = rows("b_realloc")
    events = {r["event"]: float(r["t"]) for r in rows("b_realloc_events")}
    fig, (ax, bottom) = plt.subplots(2, 1, figsize=(10, 6.4), sharex=True,
                                     gridspec_kw={"height_ratios": [3, 2]})
    for tenant in ("alpha", "beta"):
        mine = [r for r in data if r["tenant"] == tenant]
        ax.plot([float(r["t"]) for r in mine], [float(r["ops_per_s"]) for r in mine],
                color=COLORS[tenant], lw=0.9,
                label=f"{tenant}: CPUs {mine[0]['cpus']} → {mine[-1]['cpus']}")
    share = experiment.alpha_share([experiment.Sample(float(r["t"]), r["tenant"],
                                                      float(r["ops_per_s"]), r["cpus"])
                                    for r in data])
    bottom.plot([t for t, _ in share], [v for _, v in share], color=COLORS["alpha"])
    for level, text in ((2 / 3, "2 CPUs of 3"), (1 / 3, "1 CPU of 3")):
        bottom.axhline(level, color="grey", ls=":", lw=1)
        bottom.text(0.5, level, text, fontsize=7, color="grey", va="bottom")
    for axis in (ax, bottom):
        axis.axvspan(events["apply_start"], events["apply_end"], color="grey", alpha=0.15,
                     label="slicectl apply --profile night")
        axis.axvline(min(events["moved_alpha"], events["moved_beta"]), color="black", ls="--",
                     lw=1, label="cpusets changed")
    ax.set(ylabel="operations per second (0.25 s)", ylim=(0, None))
    ax.legend(fontsize=8, loc="upper left")
    bottom.set(xlabel="time (s)", ylabel="alpha's share of the ops (1 s)", ylim=(0, 1))
    return save(fig, "b_realloc", "(b) live reallocation: throughput follows the CPUs "
                "(2 ↔ 1 CPUs, no restart)")


def _phases(ax: Any, data: list[dict[str, str]]) -> None:
    spans: dict[str, list[float]] = defaultdict(list)
    for r in data:
        spans[r["phase"]].append(float(r["t"]))
    for phase, ts in spans.items():
        if "hog" in phase:
            ax.axvspan(min(ts), max(ts), color="grey", alpha=0.12)
            ax.text((min(ts) + max(ts)) / 2, 1.0, phase, transform=ax.get_xaxis_transform(),
                    ha="center", va="bottom", fontsize=8)


def _gaps(t: list[float], v: list[float], gap: float = 2.0) -> tuple[list[float], list[float]]:
    """Break the line where samples are more than `gap` seconds apart (no made-up slope)."""
    tt: list[float] = []
    vv: list[float] = []
    for i, (x, y) in enumerate(zip(t, v, strict=True)):
        if i and x - t[i - 1] > gap:
            tt.append(float("nan"))
            vv.append(float("nan"))
        tt.append(x)
        vv.append(y)
    return tt, vv


def c_rogue() -> Path:
    data = rows("c_rogue")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
    for ax, key, what in ((axes[0], "memory_pressure_pct", "memory"),
                          (axes[1], "cpu_pressure_pct", "CPU")):
        for tenant in ("rogue", "calm1", "calm2"):
            mine = [r for r in data if r["tenant"] == tenant]
            t, v = _gaps([float(r["t"]) for r in mine], [float(r[key]) for r in mine])
            ax.plot(t, v, color=COLORS[tenant], label=tenant)
        _phases(ax, data)
        ax.axhline(1, color="grey", ls=":", lw=1)
        ax.set(xlabel="time (s)", ylabel=f"{what} pressure, some (% of time stalled)",
               ylim=(0, 100))
        ax.legend(fontsize=8)
    return save(fig, "c_rogue", "(c) a rogue tenant: its pressure rises, its neighbours' stays "
                "under 1%")


def d_pagecache() -> Path:
    data = rows("d_pagecache")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
    for tenant, label in (("kept", "kept (memory_low)"), ("lost", "lost (no protection)")):
        mine = [r for r in data if r["tenant"] == tenant]
        t = [float(r["t"]) for r in mine]
        left.plot(t, [float(r["page_cache_mib"]) for r in mine], color=COLORS[tenant],
                  label=label)
        right.plot(t, [int(r["refaults"]) if r["phase"] != "warm" else 0 for r in mine],
                   color=COLORS[tenant], label=label)
    for ax in (left, right):
        _phases(ax, data)
        ax.legend(fontsize=8)
    left.set(xlabel="time (s)", ylabel="page cache (MiB)", ylim=(0, None))
    right.set(xlabel="time (s)", ylabel="pages evicted and read again (refaults)")
    return save(fig, "d_pagecache", "(d) memory_low keeps a tenant's page cache while a "
                "housekeeping job streams 2× RAM")


def e_quota() -> Path:
    data = [r for r in rows("e_quota") if r["tenant"] == "all"]
    shapes = [s for s in ("2cpu", "8cpu") if any(r["shape"] == s for r in data)]
    titles = {"2cpu": "2 tenants × cpu_quota 100% on 2 vCPUs\n(the measurement)",
              "8cpu": "4 tenants × cpu_quota 200% on 8 vCPUs\n(Babulal's shape; distorted "
                      "by TCG)"}
    fig, axes = plt.subplots(1, len(shapes), figsize=(5.5 * len(shapes), 4.6), squeeze=False)
    width = 0.38
    for ax, shape in zip(axes[0], shapes, strict=True):
        mine = {r["setup"]: r for r in data if r["shape"] == shape}
        setups = [s for s in ("unpinned", "pinned") if s in mine]
        for i, (key, label, color) in enumerate((
                ("idle_pct", "idle time of the tenants' CPUs", "tab:grey"),
                ("throttled_pct", "time the tenants were throttled (mean)", "tab:red"))):
            bars = ax.bar([x + (i - 0.5) * width for x in range(len(setups))],
                          [float(mine[s][key]) for s in setups], width, label=label,
                          color=color)
            ax.bar_label(bars, fmt="%.1f%%", fontsize=8)
        ax.set_xticks(range(len(setups)), [
            f"{s}\n{float(mine[s]['ops_per_s']):.0f} ops/s, "
            f"{float(mine[s]['cpu_cores']):.2f} cores used" for s in setups])
        ax.set(title=titles[shape], ylabel="% of the time",
               ylim=(0, max([5.0] + [float(mine[s][k]) for s in setups
                                     for k in ("idle_pct", "throttled_pct")]) * 1.25))
        ax.title.set_fontsize(9)
        ax.legend(fontsize=8, loc="upper right")
    return save(fig, "e_quota", "(e) the same CPU quotas without and with AllowedCPUs")


def f_numa() -> Path:
    data = rows("f_numa")
    setups = ["bound", "unbound"]
    nodes = sorted({int(r["node"]) for r in data})
    runs = {s: len({r["run"] for r in data if r["setup"] == s}) for s in setups}
    fig, ax = plt.subplots(figsize=(8, 4.2))
    bottom = [0.0, 0.0]
    cmap = plt.get_cmap("tab10")
    for node in nodes:
        values = [sum(float(r["anon_mib"]) for r in data if r["setup"] == s
                      and int(r["node"]) == node) / runs[s] for s in setups]
        local = any(int(r["local"]) for r in data if int(r["node"]) == node)
        ax.bar(setups, values, bottom=bottom, color=cmap(node),
               label=f"node {node}" + (" (the tenant's CPUs)" if local else ""),
               hatch="//" if local else None)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    for i, s in enumerate(setups):
        mine = [r for r in data if r["setup"] == s]
        local_share = (sum(float(r["anon_mib"]) for r in mine if int(r["local"]))
                       / sum(float(r["anon_mib"]) for r in mine))
        ax.text(i, bottom[i], f"{100 * local_share:.0f}% local", ha="center", va="bottom")
    ax.set_xticks([0, 1], ["bound\n(numa: local, AllowedMemoryNodes)",
                           "unbound\n(numa: any, CPUs only)"])
    ax.set(ylabel="tenant's memory per node (MiB, memory.numa_stat)",
           ylim=(0, max(bottom) * 1.2))
    ax.legend(fontsize=8)
    return save(fig, "f_numa", "(f) where a tenant's memory lands when its node is full of "
                "page cache")


def g_balance() -> Path:
    sys.path.insert(0, str(HERE))
    import lab

    data = rows("g_balance")
    events = rows("g_balance_events")
    rounds = sorted({(int(r["round"]), r["setup"]) for r in data})
    fig, axes = plt.subplots(len(rounds), 1, figsize=(10, 2.9 * len(rounds)), sharex=True,
                             squeeze=False)
    work = {"static": 0.0, "balancer": 0.0}
    top = max(float(r["ops_per_s"]) for r in data)  # one scale for every round
    for ax, (n, setup) in zip(axes[:, 0], rounds, strict=True):
        mine = [r for r in data if int(r["round"]) == n]
        cpus = ax.twinx()
        for tenant in ("web", "batch"):
            points = [r for r in mine if r["tenant"] == tenant]
            t = [float(r["t"]) for r in points]
            ops = [float(r["ops_per_s"]) for r in points]
            work[setup] += sum(v * (b - a) for a, b, v in zip([0.0, *t], t, ops, strict=False))
            ax.plot(t, ops, color=COLORS[tenant], lw=0.9, label=f"{tenant}: operations/s")
            cpus.step(t, [len(lab.parse_cpulist(r["cpus"])) for r in points], where="post",
                      color=COLORS[tenant], ls="--", lw=1.2, alpha=0.7,
                      label=f"{tenant}: CPUs held")
        for e in events:
            if int(e["round"]) != n:
                continue
            if e["event"] == "switch":
                ax.axvline(float(e["t"]), color="grey", lw=0.8)
                ax.text(float(e["t"]) + 0.3, 0.97, f"{e['tenant']} busy", fontsize=7,
                        transform=ax.get_xaxis_transform(), va="top")
            elif e["event"] == "grew":
                ax.axvline(float(e["t"]), color=COLORS[e["tenant"]], ls=":", lw=1)
        cpus.set(ylim=(0, 2.9), yticks=[0, 1, 2], ylabel="CPUs held (dashed)")
        ax.set(ylabel="operations per second", ylim=(0, top * 1.45),
               title=f"round {n + 1}: " + ("static split (web 1 CPU, batch 2)"
                                           if setup == "static" else
                                           "with slicectl balance (interval 1 s, window 3 s)"))
        ax.title.set_fontsize(9)
        lines = ax.get_legend_handles_labels()
        more = cpus.get_legend_handles_labels()
        ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="upper right",
                  ncol=2)
    axes[-1, 0].set(xlabel="time in the round (s)")
    return save(fig, "g_balance", "(g) alternating demand: the core follows the busy tenant "
                f"({work['balancer'] / work['static']:.2f}× the operations of the static "
                "split)")


def h_isolated() -> Path:
    data = {r["mode"]: r for r in rows("h_isolated")}
    hist = rows("h_isolated_hist")
    fig, (left, mid, right) = plt.subplots(1, 3, figsize=(12, 4.4),
                                           gridspec_kw={"width_ratios": [2.2, 1, 1]})
    colors = {"member": "tab:orange", "isolated": "tab:blue"}
    for mode, row in data.items():
        mine = sorted((int(r["latency_us"]), int(r["count"])) for r in hist
                      if r["mode"] == mode)
        total = sum(n for _, n in mine)
        later, xs, ys = total, [], []
        for us, n in mine:
            xs.append(us)
            ys.append(later / total)  # share of wake-ups at least this late
            later -= n
        left.step(xs, ys, where="post", color=colors[mode],
                  label=f"{mode}: p99 {float(row['p99_us']):.0f} µs, "
                        f"max {float(row['max_us']):.0f} µs")
    left.set(xscale="log", yscale="log", xlabel="wake-up latency (µs)",
             ylabel="share of wake-ups at least this late")
    left.legend(fontsize=8)
    modes = list(data)
    mid.bar(modes, [float(data[m]["other_pct"]) for m in modes],
            color=[colors[m] for m in modes])
    mid.set(ylabel="% of the tenant's CPU time", title="time in anything but the tenant")
    right.bar(modes, [float(data[m]["irqs_per_s"]) for m in modes],
              color=[colors[m] for m in modes])
    right.set(ylabel="interrupts per second", title="interrupts on the tenant's CPUs")
    for ax in (mid, right):
        ax.title.set_fontsize(9)
    return save(fig, "h_isolated", "(h) a latency tenant as a member and as an isolated "
                "partition, beside a noisy neighbour (cyclictest, one boot)",
                note=NOTE.replace("systemd 252", "systemd 262, Linux 7.2"))


PLOTS: dict[str, Callable[[], Path]] = {f.__name__: f for f in (
    a_shares, b_realloc, c_rogue, d_pagecache, e_quota, f_numa, g_balance, h_isolated)}


def main(names: list[str]) -> int:
    for name in names or [n for n in PLOTS if (DATA / f"{n}.csv").exists()]:
        print(PLOTS[name]())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
