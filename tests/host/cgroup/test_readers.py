"""The readers of the pure rules' input: cgroupfs/procfs for `lint --live`, CSV for recommend."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from paths import ROOT

from slicectl.cli import main
from slicectl.core.advice.lint import RULES, root_tasks
from slicectl.core.advice.recommend import Sample
from slicectl.core.config.config import load_yaml, parse_config
from slicectl.core.config.tenants import Config
from slicectl.core.errors import RecommendError, SlicectlError
from slicectl.core.placement.placement import place
from slicectl.core.placement.topology import Cpu, Node, Topology
from slicectl.core.shares.contention import predict_shares
from slicectl.core.shares.shares import IDLE_WEIGHT, ShareKind, cgroup_weight, nice_weight
from slicectl.host.cgroup.readers import crowded_cgroups, read_competition, read_samples_csv

T0 = 1_717_200_000  # 2024-06-01T00:00:00Z
XEON = str(ROOT / "tests" / "fixtures" / "topologies" / "xeon-2s-smt.json")
# seed 004's tenants on the testbed's CPU 3 (docs/evidence/shares/case2.yaml)
SEED_004_HOST = ('housekeeping: {cpus: "0-2,4-7"}\n'
                 "tenants:\n  a: {cpu_weight: 100}\n  b: {cpu_weight: 100}\n"
                 "  c: {cpu_weight: 100}\n")


def _config(text: str) -> Config:
    return parse_config(load_yaml("version: 1\n" + text, "t.yaml"), "t.yaml")


def flat(n: int = 8) -> Topology:
    return Topology(nodes=(Node(0, frozenset(range(n)), 8 << 30),),
                    cpus=tuple(Cpu(i, True, 0) for i in range(n)), source="flat")


# --- cgroupfs and procfs: root-tasks (lint --live) -----------------------------------------------


def _proc(proc: Path, pid: int, cmdline: bytes, ppid: int, comm: str) -> None:
    d = proc / str(pid)
    d.mkdir(parents=True)
    (d / "cmdline").write_bytes(cmdline)
    (d / "status").write_text(f"Name:\t{comm}\nState:\tS (sleeping)\nPPid:\t{ppid}\n")
    (d / "comm").write_text(comm + "\n")


def _tree(tmp_path: Path, root_pids: list[int], slice_pids: list[int]) -> tuple[Path, Path]:
    cg, proc = tmp_path / "cgroup", tmp_path / "proc"
    for d in ("system.slice/sshd.service", "tenants.slice/tenants-db.slice",
              "tenants.slice/tenants-db.slice/db.service", "init.scope"):
        (cg / d).mkdir(parents=True)
    (cg / "cgroup.procs").write_text("".join(f"{p}\n" for p in root_pids))
    (cg / "tenants.slice" / "cgroup.procs").write_text("".join(f"{p}\n" for p in slice_pids))
    (cg / "tenants.slice/tenants-db.slice/db.service/cgroup.procs").write_text("700\n")
    (cg / "init.scope" / "cgroup.procs").write_text("1\n")
    _proc(proc, 1, b"/sbin/init\0", 0, "systemd")
    _proc(proc, 2, b"", 0, "kthreadd")
    _proc(proc, 3, b"", 2, "rcu_gp")
    _proc(proc, 4, b"weird\0", 2, "kworker")  # child of kthreadd: a kernel thread
    _proc(proc, 812, b"/usr/sbin/sshd\0-D\0", 1, "sshd")
    _proc(proc, 900, b"backup\0", 1, "backup")
    _proc(proc, 700, b"db\0", 1, "db")
    return cg, proc


def test_root_tasks_kernel_threads_ignored(tmp_path: Path) -> None:
    cg, proc = _tree(tmp_path, [2, 3, 4], [])
    assert crowded_cgroups(cg, proc) == []


def test_root_tasks_found(tmp_path: Path) -> None:
    cg, proc = _tree(tmp_path, [2, 3, 812], [900])
    findings = root_tasks(crowded_cgroups(cg, proc))
    assert [(f.rule, f.file, f.line) for f in findings] == [
        ("root-tasks", str(cg / "cgroup.procs"), 3),
        ("root-tasks", str(cg / "tenants.slice" / "cgroup.procs"), 1),
    ]
    assert "812 (sshd)" in findings[0].message
    assert "slice tenants.slice" in findings[1].message
    assert all(f.source == RULES["root-tasks"].source for f in findings)


def test_run_lint_live(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cg, proc = _tree(tmp_path, [812], [])
    sound = str(ROOT / "tests/cases/lint/sound.yaml")
    live = ["lint", sound, "--topology", XEON, "--live", "--cgroup-root", str(cg),
            "--proc-root", str(proc)]
    assert main(live) == 0
    assert "root-tasks" in capsys.readouterr().out
    assert main([*live, "--strict"]) == 1



# --- cgroupfs and procfs: competitors for CPU (plan, lint --live) -------------------------------


def _cgroup(d: Path, weight: int | None = 100, cpus: str = "0-7", threads: str = "",
            populated: bool = True, subtree: str = "", idle: bool = False) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (d / "cgroup.subtree_control").write_text(subtree + "\n")
    (d / "cgroup.threads").write_text(threads)
    (d / "cgroup.events").write_text(f"populated {int(populated)}\nfrozen 0\n")
    (d / "cpuset.cpus.effective").write_text(cpus + "\n")
    if weight is not None:
        (d / "cpu.weight").write_text(f"{weight}\n")
        (d / "cpu.idle").write_text(f"{int(idle)}\n")


def _task(proc: Path, pid: int, comm: str, cmdline: bytes, nice: int = 0, cpus: str = "0-7",
          ppid: int = 1) -> None:
    d = proc / str(pid)
    d.mkdir(parents=True)
    (d / "comm").write_text(comm + "\n")
    (d / "cmdline").write_bytes(cmdline)
    # the command name may hold spaces and parentheses: fields are counted after the last ")"
    (d / "stat").write_text(f"{pid} ({comm}) R {ppid} 1 1 0 -1 4194304 1 0 0 0 5 6 0 0 20 "
                            f"{nice} 1 0 100 0 0\n")
    (d / "status").write_text(f"Name:\t{comm}\nPPid:\t{ppid}\nCpus_allowed_list:\t{cpus}\n")


def host(tmp_path: Path) -> tuple[Path, Path]:
    cg, proc = tmp_path / "cgroup", tmp_path / "proc"
    _cgroup(cg, weight=None, threads="2\n3\n901\n902\n", subtree="cpuset cpu memory")
    _cgroup(cg / "system.slice", 100, "0-2,4-7")
    _cgroup(cg / "init.scope", 100, "0-2,4-7")
    _cgroup(cg / "machine.slice", 300, "0-7")
    _cgroup(cg / "_cpu.slice", 50, "0-7", idle=True)
    _cgroup(cg / "sys-kernel-debug.mount", 100, populated=False)  # empty, cannot fill up
    _cgroup(cg / "tenants.slice", 100, "3", subtree="cpuset cpu")
    for name in ("a", "b", "old"):
        _cgroup(cg / "tenants.slice" / f"tenants-{name}.slice", 100, "3")
    _cgroup(cg / "tenants.slice" / "loop.service", 200, "3", threads="903\n")
    _task(proc, 2, "kthreadd", b"", ppid=0)
    _task(proc, 3, "ksoftirqd/3", b"", ppid=2)
    _task(proc, 901, "loop (x)", b"sh\0-c\0loop\0", nice=0, cpus="3")
    _task(proc, 902, "batchy", b"batch\0", nice=5)
    _task(proc, 903, "loop", b"sh\0")
    return cg, proc


def test_read_competition(tmp_path: Path) -> None:
    cg, proc = host(tmp_path)
    c = _config(SEED_004_HOST)
    found = read_competition(c, cg, proc)
    root, parent = found.root, found.parent
    assert found.live and root.cpu_controller and parent.cpu_controller
    assert parent.weight == 1024 and root.weight is None
    assert {m.name: (m.kind, m.weight, m.cpus) for m in root.members} == {
        "cpu.slice": (ShareKind.UNIT, IDLE_WEIGHT, frozenset(range(8))),
        "init.scope": (ShareKind.UNIT, 1024, frozenset({0, 1, 2, 4, 5, 6, 7})),
        "machine.slice": (ShareKind.UNIT, cgroup_weight(300), frozenset(range(8))),
        "system.slice": (ShareKind.UNIT, 1024, frozenset({0, 1, 2, 4, 5, 6, 7})),
        "PID 901 (loop (x))": (ShareKind.PROCESS, 1024, frozenset({3})),
        "PID 902 (batchy)": (ShareKind.PROCESS, nice_weight(5), frozenset(range(8))),
    }
    assert {m.name for m in parent.members} == {"tenants-old.slice", "loop.service"}
    # what it does to the tenants: machine.slice (300 over 8 CPUs), the pinned loop (1024
    # on CPU 3), a removed tenant's slice and loop.service (weight 200) in the parent
    s = predict_shares(c, place(c, flat()), flat(), found)
    root_w = 1024 + 3072 / 8 + 3 / 8 + 1024  # tenants.slice, machine, cpu.slice, the loop
    expected = 1024 / root_w * 1024 / (4 * 1024 + 2048)
    assert {n: g.cores for n, g in s.tenants.items()} == pytest.approx(
        dict.fromkeys("abc", expected), abs=1e-4)
    assert "2 task(s)" in s.note


def test_read_competition_needs_cgroup2(tmp_path: Path) -> None:
    with pytest.raises(SlicectlError, match="not a cgroup v2 hierarchy"):
        read_competition(_config(SEED_004_HOST), tmp_path, tmp_path)


def test_lint_live_counts_the_hosts_competitors(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    cg, proc = host(tmp_path)
    path = tmp_path / "t.yaml"
    path.write_text("version: 1\n" + SEED_004_HOST)
    topo = tmp_path / "topo.json"
    topo.write_text(json.dumps(flat().to_json()))
    args = ["lint", str(path), "--topology", str(topo), "--cgroup-root", str(cg),
            "--proc-root", str(proc)]
    assert main(args) == 0
    assert "share-below-cpus" not in capsys.readouterr().out  # a third of CPU 3 each
    assert main([*args, "--live"]) == 0
    out = capsys.readouterr().out
    assert "t.yaml:4: share-below-cpus: tenant a is guaranteed" in out
    assert "competitors counted on this host" in out


# --- CSV samples (recommend --samples) --------------------------------------------------------


def test_naive_iso_is_utc(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text("time,unit,anon,active_file\n2024-06-01T00:00:00,a.slice,1,2\n")
    assert read_samples_csv(path) == {"a.slice": [Sample(T0, 1, 2)]}


@pytest.mark.parametrize(("text", "message"), [
    ("when,unit,anon\n", ":1: the header lacks time, active_file"),
    ("time,unit,anon,active_file\n1,a.slice,1,2\nyesterday,a.slice,1,2\n",
     ":3: time 'yesterday'"),
    ("time,unit,anon,active_file\n1,a.slice,4G,2\n", ":2: anon '4G' is not a whole number"),
    ("time,unit,anon,active_file\n1,a.slice,1\n", ":2: expected 4 fields"),
    ("time,unit,anon,active_file\n", "no samples"),
    ("time,unit,anon,active_file\n1,a.slice,1,2\n1.7e308,a.slice,1,2\n",
     ":3: time '1.7e308' is out of range (years 1 to 9999)"),
    ("time,unit,anon,active_file\n-1.7e308,a.slice,1,2\n",
     ":2: time '-1.7e308' is out of range (years 1 to 9999)"),
    ("time,unit,anon,active_file\nnan,a.slice,1,2\n", ":2: time 'nan' is neither epoch"),
])
def test_bad_csv(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(RecommendError, match=re.escape(message)) as e:
        read_samples_csv(path)
    assert e.value.hint


def test_csv_times_out_of_range_end_cleanly(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Times far apart no longer overflow the sizing: recommend's own error, with its line."""
    path = tmp_path / "far.csv"
    path.write_text("time,unit,anon,active_file\n-1.7e308,a.slice,1,2\n1.7e308,a.slice,1,2\n")
    assert main(["recommend", "--samples", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:2: time '-1.7e308' is out of range") and "hint:" in err


def test_oomd_running_looks_for_its_process(tmp_path: Path) -> None:
    from slicectl.host.cgroup.readers import oomd_running

    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "comm").write_text("systemd\n")
    (tmp_path / "self").mkdir()
    assert not oomd_running(tmp_path)
    (tmp_path / "412").mkdir()
    (tmp_path / "412" / "comm").write_text("systemd-oomd\n")
    assert oomd_running(tmp_path)
