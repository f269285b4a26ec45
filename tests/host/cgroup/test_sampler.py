"""The cgroupfs sampler against fixture and moving fake trees.

Why this module runs past 400 lines: the sampler is one module and its cases are many small
scenarios on moving trees (discovery, vanishing and recreated cgroups, the descriptor budget,
numa_stat, a second thread) that share its fixtures.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cgtree import Motion, MovingTree
from paths import TESTS

from slicectl.core.errors import SamplerError
from slicectl.demo.cgtree import write_files
from slicectl.host.cgroup.sampler import FILES_PER_CGROUP, Sampler
from slicectl.tui import tui_sampler

FIXTURE = TESTS / "fixtures" / "cgroup"
DB1 = "tenants.slice/tenants-db1.slice"


def open_fds() -> int:
    """Descriptors this process holds open right now."""
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def tree(tmp_path: Path) -> MovingTree:
    t = MovingTree(tmp_path / "cg")
    for path in ("init.scope", "system.slice", "tenants.slice", "user.slice"):
        t.add(path)
    t.add(DB1, Motion(cpu_cores=2.0), cpus="0-3")
    t.add("tenants.slice/tenants-web.slice", Motion(cpu_cores=0.5))
    return t


@pytest.fixture
def sampler(tree: MovingTree) -> Iterator[Sampler]:
    with Sampler(tree.root, rediscover_every=3600) as s:
        yield s


def test_discovers_slices_at_any_depth_and_init_scope() -> None:
    with Sampler(FIXTURE) as s:
        snap = s.sample()
    assert sorted(snap.cgroups) == [
        "init.scope",
        "system.slice",
        "tenants.slice",
        DB1,
        "tenants.slice/tenants-web.slice",
        "user.slice",
        "user.slice/user-1000.slice",
    ]  # cron.service is a service, not a slice
    assert snap.cgroups[DB1].unit == "tenants-db1.slice"
    assert snap.host_cpus == 16


def test_fixture_values_are_parsed() -> None:
    with Sampler(FIXTURE) as s:
        db1 = s.sample().cgroups[DB1]
    assert db1.cpus == frozenset({0, 1, 2, 3, 8, 9, 10, 11})
    assert db1.mems == frozenset({0})
    assert (db1.cpu_quota_usec, db1.cpu_period_usec, db1.cpu_weight) == (600000, 100000, 200)
    assert db1.usage_usec == 5555555555
    assert (db1.nr_periods, db1.nr_throttled, db1.throttled_usec) == (50000, 1200, 3456789)
    assert db1.memory_max == 24 << 30 and db1.memory_high == 22 << 30
    assert db1.memory_low == 16 << 30 and db1.memory_min == 0
    assert db1.swap_max == 0 and db1.swap_current == 0
    assert (db1.anon, db1.file, db1.active_file) == (16 << 30, 4 << 30, 3 << 30)
    assert db1.io_pressure is not None and db1.io_pressure.full is not None
    assert db1.io_pressure.some.avg10 == 3.0 and db1.io_pressure.some.total == 4000000
    assert db1.io_pressure.full.total == 2500000
    assert db1.events_oom_kill == 0 and db1.tasks == 212


def test_max_and_missing_files_are_none() -> None:
    with Sampler(FIXTURE) as s:
        snap = s.sample()
    web = snap.cgroups["tenants.slice/tenants-web.slice"]
    assert web.cpus is None and web.mems is None  # cpuset controller not enabled there
    assert web.memory_high is None and web.memory_max == 4 << 30
    assert snap.cgroups["init.scope"].cpu_quota_usec is None  # "max 100000"


def test_rereads_open_files_without_reopening(tree: MovingTree, sampler: Sampler) -> None:
    first = sampler.sample()
    fds = open_fds()
    tree.advance(1.0)
    second = sampler.sample()
    tree.advance(1.0)
    third = sampler.sample()
    assert open_fds() == fds
    usage = [s.cgroups[DB1].usage_usec or 0 for s in (first, second, third)]
    assert usage[1] - usage[0] == 2_000_000 and usage[2] - usage[1] == 2_000_000


def inotify_fds() -> int:
    """The process's inotify instances (one per sampler: its watches take no descriptor)."""
    return sum(os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
               for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}"))


def test_keeps_files_open_per_cgroup(tree: MovingTree) -> None:
    before, held = open_fds(), inotify_fds()  # (another test's sampler may still be open)
    with Sampler(tree.root) as s:
        assert inotify_fds() - held == 1
        assert open_fds() - before == len(s.paths) * FILES_PER_CGROUP + 1
    assert open_fds() == before


def test_removed_slice_is_dropped(tree: MovingTree, sampler: Sampler) -> None:
    sampler.sample()
    tree.remove("tenants.slice/tenants-web.slice")
    snap = sampler.sample()
    assert "tenants.slice/tenants-web.slice" not in snap.cgroups
    assert DB1 in snap.cgroups


def test_slice_vanishing_mid_read_is_dropped(
    tree: MovingTree, sampler: Sampler, monkeypatch: pytest.MonkeyPatch
) -> None:
    web = "tenants.slice/tenants-web.slice"
    doomed = set(sampler._cgroups[web].fds)
    real_pread = os.pread

    def pread(fd: int, n: int, off: int) -> bytes:
        if fd in doomed:  # kernfs answers ENODEV once the cgroup is gone
            raise OSError(errno.ENODEV, "No such device")
        return real_pread(fd, n, off)

    monkeypatch.setattr(os, "pread", pread)
    # Gone from the disk after discovery, without the parent looking changed yet.
    monkeypatch.setattr(sampler, "_check_watched", lambda: None)
    tree.remove(web)
    snap = sampler.sample()
    assert web not in snap.cgroups and DB1 in snap.cgroups


def test_slice_recreated_mid_read_is_picked_up(
    tree: MovingTree, sampler: Sampler, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = sampler.sample().cgroups[DB1]
    doomed = set(sampler._cgroups[DB1].fds)
    real_pread = os.pread

    def pread(fd: int, n: int, off: int) -> bytes:
        if fd in doomed:
            doomed.clear()  # the successor's files may reuse the same descriptor numbers
            raise OSError(errno.ENODEV, "No such device")
        return real_pread(fd, n, off)

    monkeypatch.setattr(os, "pread", pread)
    monkeypatch.setattr(sampler, "_check_watched", lambda: None)
    tree.recreate(DB1)
    new = sampler.sample().cgroups[DB1]
    assert new.inode != old.inode and new.usage_usec == old.usage_usec


def test_new_slice_is_found_before_periodic_rediscovery(tree: MovingTree, sampler: Sampler) -> None:
    sampler.sample()
    tree.add("tenants.slice/tenants-new.slice")
    tree.add("machine.slice")
    snap = sampler.sample()
    assert "tenants.slice/tenants-new.slice" in snap.cgroups and "machine.slice" in snap.cgroups


def test_recreated_slice_gets_new_inode(tree: MovingTree, sampler: Sampler) -> None:
    before = sampler.sample().cgroups[DB1].inode
    tree.recreate(DB1)
    assert sampler.sample().cgroups[DB1].inode != before


def test_missing_root_raises_with_hint(tmp_path: Path) -> None:
    with pytest.raises(SamplerError) as err:
        Sampler(tmp_path / "nope")
    assert "does not exist" in err.value.message and "--cgroup-root" in err.value.hint


def test_cgroup_v1_root_raises(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    with pytest.raises(SamplerError, match="not a cgroup v2 root") as err:
        Sampler(tmp_path)
    assert "cgroup v2" in err.value.hint


def test_raises_nofile_soft_limit(tmp_path: Path) -> None:
    tree = MovingTree(tmp_path / "cg")
    tree.add("tenants.slice")
    for i in range(30):
        tree.add(f"tenants.slice/tenants-t{i}.slice")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = open_fds() + 64
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
    try:
        with Sampler(tree.root) as s:
            assert len(s.sample().cgroups) == 31
            assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= 31 * FILES_PER_CGROUP
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_samples_everything_when_descriptors_run_short(
    tree: MovingTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = 256 + 2 * FILES_PER_CGROUP  # room for two pinned cgroups only
    monkeypatch.setattr(resource, "getrlimit", lambda _: (budget, budget))

    def refuse(*_: object) -> None:
        raise ValueError("not permitted")

    monkeypatch.setattr(resource, "setrlimit", refuse)
    with Sampler(tree.root, rediscover_every=3600) as s:
        s.sample()
        fds = open_fds()
        tree.advance(1.0)
        snap = s.sample()
        assert open_fds() == fds
    assert len(snap.cgroups) == 6
    assert snap.cgroups[DB1].usage_usec == 2_000_000


def test_idle_slice_then_limit_change(tree: MovingTree, sampler: Sampler) -> None:
    first = sampler.sample().cgroups[DB1]
    assert sampler.sample().cgroups[DB1] == first  # nothing moved
    tree.cgroups[DB1].memory_high = str(1 << 30)
    tree.cgroups[DB1].psi["io"] = [4.0, 1000.0, 1.0, 500.0]
    tree.advance(0.0)
    second = sampler.sample().cgroups[DB1]
    assert second.memory_high == 1 << 30 and first.memory_high is None
    assert second.io_pressure is not None and second.io_pressure.some.total == 1000
    assert second.memory_pressure == first.memory_pressure


def test_empty_cgroup_is_reread_only_every_nth_refresh_or_after_invalidate(
        tree: MovingTree, sampler: Sampler) -> None:
    from slicectl.host.cgroup.sampler import IDLE_FULL_EVERY

    web = "tenants.slice/tenants-web.slice"
    tree.cgroups[web].tasks = 0  # no task in it: pids.current 0 ...
    tree.advance(0)
    (tree.root / web / "cgroup.events").write_text("populated 0\nfrozen 0\n")  # ... not populated
    first = sampler.sample().cgroups[web]
    tree.cgroups[web].memory_current = 123 << 20  # e.g. its page cache was reclaimed
    tree.advance(1.0)
    (tree.root / web / "cgroup.events").write_text("populated 0\nfrozen 0\n")
    seen = [sampler.sample().cgroups[web] for _ in range(IDLE_FULL_EVERY)]
    # Until its staggered turn comes, an empty cgroup is handed back as it was...
    assert seen[0] is first
    # ... but within IDLE_FULL_EVERY refreshes it is read in full again.
    assert any(s.memory_current == 123 << 20 for s in seen)
    # A populated cgroup is read every time: db1's CPU time moves with each advance.
    before = sampler.sample().cgroups[DB1].usage_usec
    tree.advance(1.0)
    (tree.root / web / "cgroup.events").write_text("populated 0\nfrozen 0\n")
    after = sampler.sample().cgroups[DB1].usage_usec
    assert before is not None and after is not None and after > before
    # One that had tasks at its last read is read in full without asking cgroup.events
    # (whatever that says, e.g. a zombie's pids.current outlives "populated 0").
    for k in range(IDLE_FULL_EVERY):
        tree.cgroups[DB1].memory_current = (70 + k) << 20
        tree.advance(0)
        (tree.root / DB1 / "cgroup.events").write_text("populated 0\nfrozen 0\n")
        assert sampler.sample().cgroups[DB1].memory_current == (70 + k) << 20
    # invalidate(): the next sample reads everything (limits may have changed after apply).
    tree.cgroups[web].memory_max = "1073741824"
    tree.advance(0)
    (tree.root / web / "cgroup.events").write_text("populated 0\nfrozen 0\n")
    sampler.invalidate()
    assert sampler.sample().cgroups[web].memory_max == 1 << 30


def _empty(tree: MovingTree, path: str) -> None:
    """No task in `path`: pids.current 0 and "populated 0", written in place as the kernel
    writes them."""
    tree.cgroups[path].tasks = 0
    tree.advance(0)
    (tree.root / path / "cgroup.events").write_text("populated 0\nfrozen 0\n")


def _reads_of(monkeypatch: pytest.MonkeyPatch, path: str) -> list[str]:
    """The names of `path`'s files the sampler reads from now on (its preads)."""
    reads: list[str] = []
    pread = os.pread

    def counting(fd: int, size: int, offset: int) -> bytes:
        name = os.readlink(f"/proc/self/fd/{fd}")
        if f"/{path}/" in name:
            reads.append(name.rpartition("/")[2])
        return pread(fd, size, offset)

    monkeypatch.setattr(os, "pread", counting)  # the sampler calls os.pread
    return reads


def test_an_empty_cgroup_whose_events_file_is_not_written_is_not_read(
        tree: MovingTree, sampler: Sampler, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel writes cgroup.events when a task comes or goes (inotify tells): until
    then an empty cgroup is not read at all, not even that file, but at its turn for a full
    read (IDLE_FULL_EVERY)."""
    from slicectl.host.cgroup.sampler import IDLE_FULL_EVERY

    web = "tenants.slice/tenants-web.slice"
    _empty(tree, web)
    sampler.sample()
    sampler.sample()  # the write above, seen and answered "populated 0"
    reads = _reads_of(monkeypatch, web)
    for _ in range(IDLE_FULL_EVERY):
        sampler.sample()
    assert "cgroup.events" not in reads
    assert reads.count("cpu.stat") == 1  # its one full read in IDLE_FULL_EVERY refreshes


def test_a_task_entering_an_empty_cgroup_is_seen_at_the_next_sample(
        tree: MovingTree, sampler: Sampler) -> None:
    from slicectl.host.cgroup.sampler import IDLE_FULL_EVERY

    web = "tenants.slice/tenants-web.slice"
    _empty(tree, web)
    for _ in range(3):
        assert sampler.sample().cgroups[web].tasks == 0
    for k in range(IDLE_FULL_EVERY):  # whichever refresh it comes at
        tree.cgroups[web].tasks = 2
        tree.advance(0)
        (tree.root / web / "cgroup.events").write_text("populated 1\nfrozen 0\n")
        assert sampler.sample().cgroups[web].tasks == 2, k
        _empty(tree, web)
        assert sampler.sample().cgroups[web].tasks == 0, k


def test_a_populated_cgroup_without_a_task_count_is_read_every_time(
        tree: MovingTree, sampler: Sampler) -> None:
    """Where the pids controller is off, pids.current says nothing (0) of a cgroup with
    tasks: "populated 1" in its cgroup.events keeps it read in full at every sample, whether
    that file is written again or not."""
    from slicectl.host.cgroup.sampler import IDLE_FULL_EVERY

    web = "tenants.slice/tenants-web.slice"
    tree.cgroups[web].tasks = 0
    tree.cgroups[web].populated = True
    tree.advance(0)
    sampler.sample()
    sampler.sample()
    for k in range(IDLE_FULL_EVERY + 2):
        write_files(tree.root / web, {"memory.current": f"{(200 + k) << 20}\n"})  # that alone
        assert sampler.sample().cgroups[web].memory_current == (200 + k) << 20, k


def _asks_its_events_file(tree: MovingTree, monkeypatch: pytest.MonkeyPatch,
                          inotify: int) -> None:
    """An empty cgroup with no watch on its cgroup.events reads that file (or, at its turn,
    everything) at every sample, and a task entering it is seen at the next one. `inotify`:
    the inotify instances the process holds while the sampler is open."""
    web = "tenants.slice/tenants-web.slice"
    held = inotify_fds()  # (another test's sampler may still be open)
    with Sampler(tree.root, rediscover_every=3600) as sampler:
        assert inotify_fds() - held == inotify
        _empty(tree, web)
        sampler.sample()
        reads = _reads_of(monkeypatch, web)
        sampler.sample()
        assert reads.count("cgroup.events") + reads.count("cpu.stat") == 1
        tree.cgroups[web].tasks = 2
        tree.advance(0)
        (tree.root / web / "cgroup.events").write_text("populated 1\nfrozen 0\n")
        assert sampler.sample().cgroups[web].tasks == 2


def test_without_inotify_an_empty_cgroup_asks_its_events_file(
        tree: MovingTree, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where inotify cannot be had, cgroup.events is read at every sample instead, and a task
    entering is seen as soon."""
    import slicectl.host.cgroup.sampler as module
    from slicectl.core.errors import InotifyUnavailable

    def unavailable() -> None:
        raise InotifyUnavailable("no inotify here: test")

    monkeypatch.setattr(module, "Modified", unavailable)
    _asks_its_events_file(tree, monkeypatch, inotify=0)


def test_past_its_share_of_inotify_watches_a_cgroup_asks_its_events_file(
        tree: MovingTree, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A sampler watches at most a sixteenth of the user's inotify watches (root shares them
    with systemd); the cgroups past that ask cgroup.events at every refresh, and a task
    entering one is seen as soon."""
    import slicectl.host.cgroup.sampler as module

    proc_sys = tmp_path / "inotify"
    proc_sys.mkdir()
    (proc_sys / "max_user_watches").write_text("8192\n")
    assert module.watch_budget(proc_sys) == 512
    assert module.watch_budget(tmp_path / "none") == 512
    monkeypatch.setattr(module, "watch_budget", lambda: 0)
    _asks_its_events_file(tree, monkeypatch, inotify=1)


def test_lost_events_make_every_empty_cgroup_ask(
        tree: MovingTree, sampler: Sampler, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the kernel's event queue overflowed, any cgroup.events may have changed: each
    empty cgroup reads its own at the next sample."""
    web = "tenants.slice/tenants-web.slice"
    _empty(tree, web)
    sampler.sample()
    sampler.sample()
    reads = _reads_of(monkeypatch, web)
    monkeypatch.setattr(sampler._events, "changed", lambda: None)
    sampler.sample()
    assert reads == ["cgroup.events"] or "cpu.stat" in reads  # asked, or its full read


# -- the file table --------------------------------------------------------------------


def test_effective_cpus_fall_back_to_configured_cpus(tree: MovingTree) -> None:
    (tree.root / DB1 / "cpuset.cpus.effective").unlink()  # kernels before 5.x: no effective list
    (tree.root / DB1 / "cpuset.cpus").write_text("0-2\n")
    with Sampler(tree.root) as s:
        assert s.sample().cgroups[DB1].cpus == frozenset({0, 1, 2})


# -- memory.numa_stat --------------------------------------------------------------------


@pytest.mark.parametrize("nodes", [1, 2, 4])
def test_numa_stat_is_read_only_on_hosts_with_several_nodes(tmp_path: Path, nodes: int) -> None:
    from cgtree import NUMA_HOSTS, build_numa_fixture

    from slicectl.host.topology.sysfs import read_topology

    topo = read_topology(FIXTURE.parent / "sysfs" / NUMA_HOSTS[nodes])
    tree = build_numa_fixture(tmp_path / "cg", {n.id: n.cpus for n in topo.nodes})
    before = open_fds()
    with Sampler(tree.root) as s:
        assert s.numa == (nodes > 1) and s.host_mems == frozenset(range(nodes))
        # One descriptor fewer per cgroup where memory.numa_stat cannot matter.
        assert open_fds() - before == len(s.paths) * (FILES_PER_CGROUP - (nodes == 1)) + 1
        snap = s.sample()
        assert snap.host_mems == frozenset(range(nodes))
        local = snap.cgroups["tenants.slice/tenants-local.slice"]
        if nodes == 1:
            assert all(cg.numa is None for cg in snap.cgroups.values())
            return
        assert local.numa is not None
        assert [(n.node, n.anon, n.file) for n in local.numa] == [
            (0, 200 << 20, 56 << 20), *((n, 0, 0) for n in range(1, nodes))]
        assert local.numa[0].total == 256 << 20
        empty = snap.cgroups["tenants.slice/tenants-empty.slice"].numa
        assert empty is not None and sum(n.total for n in empty) == 0
        # Re-read through the descriptors kept open, and only re-parsed when it changed.
        fds = open_fds()
        tree.cgroups["tenants.slice/tenants-local.slice"].numa = {0: (100 << 20, 0),
                                                                  1: (50 << 20, 0)}
        tree.advance(1.0)
        again = s.sample()
        assert open_fds() == fds
        moved = again.cgroups["tenants.slice/tenants-local.slice"].numa
        assert moved is not None and [n.anon for n in moved[:2]] == [100 << 20, 50 << 20]
        assert again.cgroups["system.slice"].numa is snap.cgroups["system.slice"].numa


def test_numa_can_be_asked_for_or_turned_off(tree: MovingTree) -> None:
    with Sampler(tree.root, numa=False) as s:
        assert all(cg.numa is None for cg in s.sample().cgroups.values())
    (tree.root / "cpuset.mems.effective").write_text("0\n")  # a one-node host ...
    with Sampler(tree.root, numa=True) as s:  # ... but the caller knows better
        assert s.sample().cgroups[DB1].numa is not None


@pytest.mark.long
def test_close_while_another_thread_samples(tmp_path: Path) -> None:
    """The TUI samples in a worker thread and closes the sampler on exit: close() waits for
    the sample in flight, and sampling afterwards is a SamplerError, never a read of closed
    (or reused) descriptors."""
    import threading

    tree = MovingTree(tmp_path / "cg")
    for i in range(200):
        tree.add(f"s{i:03d}.slice")
    for _ in range(5):
        sampler = Sampler(tree.root)
        errors: list[BaseException] = []
        started = threading.Event()

        def loop(s: Sampler = sampler, errs: list[BaseException] = errors,
                 go: threading.Event = started) -> None:
            while True:
                try:
                    s.sample()
                except SamplerError as e:
                    assert "closed" in e.message
                    return
                except BaseException as e:  # noqa: BLE001 - what the test looks for
                    errs.append(e)
                    return
                go.set()

        thread = threading.Thread(target=loop)
        thread.start()
        started.wait(10)
        sampler.close()
        thread.join(10)
        assert not thread.is_alive() and errors == []
        assert sampler.paths == []


def test_skip_leaves_those_files_unread_and_the_rest_as_read(tree: MovingTree) -> None:
    tree.motion[DB1].io_read_bps = 4096
    tree.advance(1.0)
    with Sampler(tree.root) as full, Sampler(tree.root, skip=frozenset({"io.stat"})) as some:
        every, fewer = full.sample().cgroups[DB1], some.sample().cgroups[DB1]
    assert every.io_read_bytes == 4096 and fewer.io_read_bytes is None
    assert fewer == dataclasses.replace(every, io_read_bytes=None, io_write_bytes=None)


def test_the_tuis_sampler_reads_the_tree_without_io_stat(tmp_path: Path) -> None:
    tree = MovingTree(tmp_path / "cg")
    tree.add("system.slice/cron.service", Motion(io_write_bps=512))
    tree.advance(1.0)
    with tui_sampler(tree.root) as sampler:
        got = sampler.sample().cgroups
    assert sorted(got) == ["system.slice", "system.slice/cron.service"]
    assert got["system.slice/cron.service"].io_write_bytes is None


def test_only_slices_and_the_top_init_scope_are_cgroups_to_sample(tmp_path: Path) -> None:
    tree = MovingTree(tmp_path / "cg")
    for path in ("init.scope", "other-init.scope", "a.slice/init.scope", "a.slice/b.slice"):
        tree.add(path)
    (tree.root / "a.slice" / "c.slice").write_text("")  # a file, not a cgroup
    with Sampler(tree.root) as s:
        assert s.paths == ["a.slice", "a.slice/b.slice", "init.scope"]


def test_units_adds_the_services_and_scopes_inside_slices(tmp_path: Path) -> None:
    tree = MovingTree(tmp_path / "cg")
    tree.add("system.slice")
    tree.add("system.slice/cron.service")
    tree.add("user.slice/user-1000.slice/session-1.scope")
    tree.add("stray.service")  # at the top: not a unit of any slice
    with Sampler(tree.root) as plain, Sampler(tree.root, units=True) as with_units:
        assert plain.paths == ["system.slice", "user.slice", "user.slice/user-1000.slice"]
        assert with_units.paths == [
            "system.slice", "system.slice/cron.service", "user.slice",
            "user.slice/user-1000.slice", "user.slice/user-1000.slice/session-1.scope"]
        tree.add("system.slice/ssh.service")  # started later: found on the next sample
        assert "system.slice/ssh.service" in with_units.sample().cgroups


def _deep_tree(root: Path, levels: int, name: str) -> list[str]:
    """root as a cgroup root with `levels` slices nested one in the other, each made relative
    to its parent's descriptor (no path could name the deepest ones); their paths."""
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu memory\n")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    return ["/".join([name] * n) for n in range(1, levels + 1)]


def test_a_tree_deeper_than_path_max_is_cut_with_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """status samples every cgroup the kernel can open by path and says, once, where it
    stopped; never an internal error (ENAMETOOLONG)."""
    from slicectl.cli import main
    from slicectl.host.cgroup.sampler import PATH_MAX

    name = "a" * 200 + ".slice"
    root = tmp_path / "cg"
    paths = _deep_tree(root, 30, name)
    prefix = len(os.fsencode(str(root))) + 1
    shown = [p for p in paths if prefix + len(p) <= PATH_MAX - 64]
    cut = paths[len(shown)]
    with Sampler(root) as s:
        assert sorted(s.sample().cgroups) == sorted(shown)
        assert s.too_deep == {cut: prefix + len(cut)}
    assert main(["status", "--cgroup-root", str(root), "--json", "--interval", "0"]) == 0
    out, err = capsys.readouterr()
    assert out.count('"cgroup"') == len(shown)
    assert err == (
        f"warning: {root}/{name}/...: a cgroup {len(shown) + 1} levels down has a path of "
        f"{prefix + len(cut)} bytes, which leaves its files no room within the kernel's path "
        "limit (PATH_MAX 4096): it and everything below it are not shown\n"
        f"  hint: look at what keeps nesting cgroups below {root}/{name} (`systemd-cgls` "
        "shows the tree); the rest of the tree is sampled as usual\n")


def test_only_the_slices_asked_for_are_sampled_and_walked_to(
        tree: MovingTree, monkeypatch: pytest.MonkeyPatch) -> None:
    """The balancer's sampler: its tenants' slices only (web-2 nested in web, as systemd
    nests `tenants-web-2.slice`), found again when created; no other directory listed."""
    tree.add("tenants.slice/tenants-web.slice/tenants-web-2.slice")
    listed: list[str] = []
    listdir = os.listdir

    def spy(path: str) -> list[str]:
        listed.append(os.path.relpath(path, tree.root))
        return listdir(path)

    monkeypatch.setattr(os, "listdir", spy)
    wanted = frozenset({"tenants-web.slice", "tenants-web-2.slice", "tenants-later.slice"})
    with Sampler(tree.root, rediscover_every=3600, slices=wanted) as s:
        assert sorted(s.sample().cgroups) == [
            "tenants.slice/tenants-web.slice",
            "tenants.slice/tenants-web.slice/tenants-web-2.slice"]
        assert sorted(listed) == [".", "tenants.slice", "tenants.slice/tenants-web.slice"]
        tree.add("tenants.slice/tenants-later.slice")
        tree.add("tenants.slice/tenants-other.slice")
        assert "tenants.slice/tenants-later.slice" in s.sample().cgroups
        assert "tenants.slice/tenants-other.slice" not in s.sample().cgroups


def test_the_periodic_walk_waits_while_the_root_counts_as_many_cgroups(
        tree: MovingTree, monkeypatch: pytest.MonkeyPatch) -> None:
    """A walk is due every sample here (every millisecond; a walk despite a quiet tree only
    after 1,000 s): while the root's cgroup.stat
    counts what it counted at the last walk, none is made; a slice created in a leaf slice
    (no watched directory shows it) changes the count, and the next sample walks and finds
    it. Where cgroup.stat cannot be read, every due walk is made."""
    from slicectl.host.cgroup import sampler as module

    stat = tree.root / "cgroup.stat"
    stat.write_text("nr_descendants 6\nnr_dying_descendants 0\n")
    walks = []
    walk = module.Sampler._discover

    def counted(self: Sampler) -> None:
        walks.append(1)
        walk(self)

    monkeypatch.setattr(module.Sampler, "_discover", counted)
    monkeypatch.setattr(module, "QUIET_WALK_EVERY", 10**6)
    with Sampler(tree.root, rediscover_every=0.001) as s:
        for _ in range(3):
            time.sleep(0.002)
            s.sample()
        assert len(walks) == 1  # the first, at the start
        tree.add("tenants.slice/tenants-web.slice/tenants-web-x.slice")
        stat.write_text("nr_descendants 7\nnr_dying_descendants 0\n")
        time.sleep(0.002)
        assert "tenants.slice/tenants-web.slice/tenants-web-x.slice" in s.sample().cgroups
        assert len(walks) == 2
        time.sleep(0.002)
        s.sample()
        assert len(walks) == 2
        stat.unlink()
    with Sampler(tree.root, rediscover_every=0.001) as s:
        for _ in range(3):
            time.sleep(0.002)
            s.sample()
    assert len(walks) == 2 + 1 + 3


def test_an_unpinned_cgroup_keeps_its_sample_across_a_walk(
        tree: MovingTree, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the descriptor budget a cgroup is read with open/read/close; a walk of the tree
    must not make every such cgroup new (the exporter would write all its text again)."""
    monkeypatch.setattr("slicectl.host.cgroup.sampler._FD_RESERVE", 1 << 40)  # nothing pinned
    with Sampler(tree.root, rediscover_every=0) as sampler:  # a walk at every sample
        first, second = sampler.sample(), sampler.sample()
    assert first.cgroups and first.cgroups.keys() == second.cgroups.keys()
    assert all(first.cgroups[p] is second.cgroups[p] for p in first.cgroups)
