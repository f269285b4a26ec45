"""Which cgroup hierarchy a host runs, from its mount table (slicectl.host.cgroup.mounts): a host
with cgroup v1 or the hybrid hierarchy is refused by every verb that touches it, with what
was found and how to boot the unified hierarchy; offline verbs keep working there."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import pytest
from paths import ROOT
from test_generator import files_of, record, run_generator, tenants_file

from slicectl.cli import main
from slicectl.core.errors import HierarchyError
from slicectl.host.cgroup.mounts import parse_mountinfo, unified_mount

SYSFS = ROOT / "tests" / "fixtures" / "sysfs"
WEB_BATCH = ROOT / "examples" / "web-batch.yaml"
V1_CONTROLLERS = ("blkio", "cpu,cpuacct", "cpuset", "devices", "freezer", "hugetlb", "memory",
                  "net_cls,net_prio", "perf_event", "pids")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def v1_host(cg: str) -> str:
    """RHEL 7: a tmpfs at the cgroup root, a `cgroup` mount per controller (and systemd's
    named hierarchy) below it."""
    lines = [f"25 18 0:21 / {cg} ro,nosuid,nodev,noexec shared:7 - tmpfs tmpfs ro,mode=755",
             f"26 25 0:22 / {cg}/systemd rw,nosuid,nodev,noexec,relatime shared:8 - cgroup "
             "cgroup rw,xattr,release_agent=/usr/lib/systemd/systemd-cgroups-agent,name=systemd"]
    lines += [f"{30 + i} 25 0:{30 + i} / {cg}/{c} rw,nosuid,nodev,noexec,relatime shared:{9 + i}"
              f" - cgroup cgroup rw,{c}" for i, c in enumerate(V1_CONTROLLERS)]
    return "\n".join(lines) + "\n"


def hybrid_host(cg: str) -> str:
    """RHEL 8 (systemd 239's default): RHEL 7's layout and a cgroup2 at CG/unified."""
    return v1_host(cg) + (f"27 25 0:23 / {cg}/unified rw,nosuid,nodev,noexec,relatime "
                          "shared:9 - cgroup2 cgroup2 rw,seclabel,nsdelegate\n")


def unified_host(cg: str, options: str = "rw,nsdelegate,memory_recursiveprot") -> str:
    return (f"22 18 0:35 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
            f"26 22 0:25 / {cg} rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
            f"{options}\n")


def fake_host(tmp: Path, table: str) -> tuple[Path, Path]:
    """A cgroup root (a plain folder) and a proc root whose mount table mounts `table` there."""
    cg = tmp / "cgroup"
    cg.mkdir(parents=True, exist_ok=True)
    (tmp / "proc" / "self").mkdir(parents=True, exist_ok=True)
    (tmp / "proc" / "self" / "mountinfo").write_text(table.replace("CG", str(cg)))
    return cg, tmp / "proc"


HYBRID_MESSAGE = (
    "{cg} is not a cgroup2 mount: this host runs the hybrid cgroup hierarchy (tmpfs at {cg} "
    "with cgroup v1 hierarchies blkio, cpu,cpuacct, cpuset, devices, freezer, hugetlb, memory, "
    "net_cls,net_prio, perf_event, pids, systemd; cgroup2 only at {cg}/unified, without the "
    "controllers)")
HINT = ("slicectl needs the unified cgroup hierarchy (cgroup v2): boot with "
        "systemd.unified_cgroup_hierarchy=1 on the kernel command line (on RHEL 8: "
        "grubby --update-kernel=ALL --args=systemd.unified_cgroup_hierarchy=1), then reboot")


def test_a_hybrid_host_is_refused_naming_what_is_mounted(tmp_path: Path) -> None:
    cg, proc = fake_host(tmp_path, hybrid_host("CG"))
    with pytest.raises(HierarchyError) as e:
        unified_mount(cg, proc)
    assert e.value.message == HYBRID_MESSAGE.format(cg=cg)
    assert e.value.hint == HINT


def test_a_cgroup_v1_host_is_refused(tmp_path: Path) -> None:
    cg, proc = fake_host(tmp_path, v1_host("CG"))
    with pytest.raises(HierarchyError) as e:
        unified_mount(cg, proc)
    assert e.value.message == (
        f"{cg} is not a cgroup2 mount: this host runs cgroup v1 (tmpfs at {cg} with cgroup v1 "
        "hierarchies blkio, cpu,cpuacct, cpuset, devices, freezer, hugetlb, memory, "
        "net_cls,net_prio, perf_event, pids, systemd; no cgroup2)")


def test_the_unified_mount_of_a_hybrid_host_is_refused_too(tmp_path: Path) -> None:
    """--cgroup-root /sys/fs/cgroup/unified: a cgroup2, but the controllers are on v1."""
    cg, proc = fake_host(tmp_path, hybrid_host("CG"))
    with pytest.raises(HierarchyError) as e:
        unified_mount(cg / "unified", proc)
    assert e.value.message.startswith(f"{cg}/unified is the cgroup2 mount of a hybrid "
                                      "hierarchy: this host runs the hybrid cgroup hierarchy")


def test_a_single_v1_hierarchy_at_the_root_is_refused(tmp_path: Path) -> None:
    cg, proc = fake_host(tmp_path, v1_host("CG"))
    with pytest.raises(HierarchyError, match=r"cgroup v1 is mounted there \(memory\)"):
        unified_mount(cg / "memory", proc)


def test_a_tmpfs_without_cgroups_is_refused_except_at_boot(tmp_path: Path) -> None:
    """No cgroup hierarchy at all: nothing for the CLI to read; the generator does not take
    it for cgroup v1 (a sandbox may show it so), and writes as usual."""
    cg, proc = fake_host(tmp_path, "25 18 0:21 / CG rw - tmpfs tmpfs rw\n")
    with pytest.raises(HierarchyError, match=r"no cgroup2 file system \(tmpfs at "):
        unified_mount(cg, proc)
    assert unified_mount(cg, proc, refuse_empty=False) is None


def test_a_unified_host_gives_its_cgroup2_mount(tmp_path: Path) -> None:
    cg, proc = fake_host(tmp_path, unified_host("CG"))
    mount = unified_mount(cg, proc)
    assert mount is not None and mount.fstype == "cgroup2"
    assert "memory_recursiveprot" in mount.options


def test_a_later_mount_hides_an_earlier_one(tmp_path: Path) -> None:
    """systemd 239's tmpfs, then a cgroup2 mounted over it: the cgroup2 is what is seen."""
    cg, proc = fake_host(tmp_path, hybrid_host("CG") + "90 18 0:90 / CG rw - cgroup2 cgroup2 rw\n")
    mount = unified_mount(cg, proc)
    assert mount is not None and mount.fstype == "cgroup2"


def test_a_root_that_is_no_mount_point_is_not_judged(tmp_path: Path) -> None:
    """A fixture tree or a copy of another host's: the readers' own checks apply."""
    _, proc = fake_host(tmp_path, hybrid_host("CG"))
    assert unified_mount(tmp_path / "copy", proc) is None
    assert unified_mount(tmp_path / "copy", tmp_path / "no-proc") is None


def test_mount_points_are_unescaped_and_odd_lines_skipped() -> None:
    mounts = parse_mountinfo("26 22 0:25 / /a\\040b rw shared:4 - cgroup2 cgroup2 rw\n"
                             "garbage\n27 22 0:26 / /c\\999 rw - tmpfs\n"
                             "28 22 0:27 / /d\\134x rw - tmpfs tmpfs rw,size=1k\n")
    assert [(m.point, m.fstype) for m in mounts] == [("/a b", "cgroup2"), ("/d\\x", "tmpfs")]


ELASTIC = "version: 1\ntenants:\n  web: {cpus: 2, cpus_min: 1, cpus_max: 4}\n"

# Every verb that touches the live host, as a user runs it (the host's options added below).
LIVE_VERBS = {
    "apply": ["apply", str(WEB_BATCH), "--yes"],
    "plan": ["plan", str(WEB_BATCH)],
    "status": ["status"],
    "top": ["top", "-n", "1"],
    "tui": ["tui"],
    "record": ["record", "--once", "--db", "DB"],
    "exporter": ["exporter", "--textfile", "TEXTFILE"],
    "balance": ["balance", "ELASTIC", "--once"],
    "lint --live": ["lint", str(WEB_BATCH), "--live"],
    "topology --live": ["topology", "--live"],
    "generator enable": ["generator", "enable", str(WEB_BATCH)],
    "generator disable": ["generator", "disable"],
}


@pytest.mark.parametrize("verb", sorted(LIVE_VERBS))
def test_every_verb_on_the_live_host_refuses_a_hybrid_host(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        verb: str) -> None:
    cg, proc = fake_host(tmp_path, hybrid_host("CG"))
    if verb == "tui":  # on a terminal (without one the TUI refuses to start at all)
        monkeypatch.setattr(sys, "stdin", Terminal())
        monkeypatch.setattr(sys, "stdout", Terminal())
    (tmp_path / "elastic.yaml").write_text(ELASTIC)
    args = [{"DB": str(tmp_path / "r.db"), "TEXTFILE": str(tmp_path / "m.prom"),
             "ELASTIC": str(tmp_path / "elastic.yaml")}.get(a, a) for a in LIVE_VERBS[verb]]
    code = main([*args, "--cgroup-root", str(cg), "--proc-root", str(proc),
                 "--unit-dir", str(tmp_path / "units"), "--bus", "unix:path=/nonexistent"]
                if verb not in ("status", "top", "record", "lint --live", "topology --live")
                else [*args, "--cgroup-root", str(cg), "--proc-root", str(proc)])
    err = capsys.readouterr().err
    assert (code, err) == (1, f"error: {HYBRID_MESSAGE.format(cg=cg)}\n  hint: {HINT}\n")
    assert not (tmp_path / "units").exists()


@pytest.mark.parametrize("args", [
    ["validate", "WEB", "--sysfs", "SYSFS"],
    ["generate", "WEB", "--sysfs", "SYSFS", "--out", "OUT"],
    ["plan", "WEB", "--sysfs", "SYSFS", "--cgroup-root", "CG"],
    # another host's files (a config repo's CI): compared without asking this host
    ["plan", "WEB", "--sysfs", "SYSFS", "--unit-dir", "OUT", "--cgroup-root", "CG"],
    ["lint", "WEB", "--sysfs", "SYSFS", "--cgroup-root", "CG"]])
def test_offline_verbs_keep_working_on_a_hybrid_host(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    cg, proc = fake_host(tmp_path, hybrid_host("CG"))
    named = {"WEB": str(WEB_BATCH), "SYSFS": str(SYSFS / "xeon-2s-smt"),
             "OUT": str(tmp_path / "out"), "CG": str(cg)}
    code = main([named.get(a, a) for a in args] + ["--proc-root", str(proc)])
    assert "hybrid" not in capsys.readouterr().err
    assert code == 0


def generator_host(tmp: Path, table: str) -> Path:
    """A host tree for the generator: HOST/sys (a fixture's sysfs, with fs/cgroup) and
    HOST/proc/self/mountinfo mounting `table` at HOST/sys/fs/cgroup."""
    sysfs = tmp / "host" / "sys"
    shutil.copytree(SYSFS / "xeon-2s-smt", sysfs)
    cg = sysfs / "fs" / "cgroup"
    cg.mkdir(parents=True, exist_ok=True)
    (tmp / "host" / "proc" / "self").mkdir(parents=True)
    (tmp / "host" / "proc" / "self" / "mountinfo").write_text(table.replace("CG", str(cg)))
    return sysfs


def test_the_generator_logs_a_hybrid_host_and_exits_0(tmp_path: Path) -> None:
    """At boot: never a failed boot; the refusal in the kernel log and the error file, and
    no tenant units on a first boot."""
    sysfs = generator_host(tmp_path, hybrid_host("CG"))
    tenants = tenants_file(tmp_path)
    out, logged = run_generator(tmp_path / "boot", tenants, sysfs)  # asserts exit 0
    cg = sysfs / "fs" / "cgroup"
    said = (f"{HYBRID_MESSAGE.format(cg=cg)} ({HINT}); no placement recorded: no tenant "
            "units written")
    assert logged.split("]: ", 1)[1] == said + "\n"
    assert files_of(out) == {".slicectl-generator-error": f"{said}\n".encode()}


def test_the_generator_keeps_the_last_placement_on_a_hybrid_host(tmp_path: Path) -> None:
    sysfs = generator_host(tmp_path, unified_host("CG"))
    tenants = tenants_file(tmp_path)
    good, logged = run_generator(tmp_path / "first", tenants, sysfs)
    assert logged == ""
    record(tenants, good, sysfs)
    (sysfs.parent / "proc" / "self" / "mountinfo").write_text(
        hybrid_host(str(sysfs / "fs" / "cgroup")))
    out, logged = run_generator(tmp_path / "second", tenants, sysfs)
    assert "the hybrid cgroup hierarchy" in logged
    assert logged.rstrip().endswith("wrote the last good placement instead")
    written = files_of(out)
    written.pop(".slicectl-generator-error")
    assert written == files_of(good)
