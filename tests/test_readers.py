"""The readers of the pure rules' input: cgroupfs/procfs for `lint --live`, CSV for recommend."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from slicectl.cli import main
from slicectl.lint import root_tasks
from slicectl.readers import crowded_cgroups, read_samples_csv
from slicectl.recommend import RecommendError, Sample

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_717_200_000  # 2024-06-01T00:00:00Z
XEON = str(ROOT / "tests" / "fixtures" / "topologies" / "xeon-2s-smt.json")


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
    assert all(f.source == "004_14bee5724a59716c.txt" for f in findings)


def test_run_lint_live(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cg, proc = _tree(tmp_path, [812], [])
    sound = str(ROOT / "tests/cases/lint/sound.yaml")
    live = ["lint", sound, "--topology", XEON, "--live", "--cgroup-root", str(cg),
            "--proc-root", str(proc)]
    assert main(live) == 0
    assert "root-tasks" in capsys.readouterr().out
    assert main([*live, "--strict"]) == 1



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
    from slicectl.readers import oomd_running

    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "comm").write_text("systemd\n")
    (tmp_path / "self").mkdir()
    assert not oomd_running(tmp_path)
    (tmp_path / "412").mkdir()
    (tmp_path / "412" / "comm").write_text("systemd-oomd\n")
    assert oomd_running(tmp_path)
