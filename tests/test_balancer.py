"""`slicectl balance` acting on the host: the fake systemd on a private dbus-daemon
(slicectl/demo/fakesystemd.py, which mirrors AllowedCPUs into cpuset files) and a moving cgroup
tree (slicectl/demo/cgtree.py) that gives the tenants their load.

What a user sees: the move on stdout, the slices' AllowedCPUs changed as runtime properties
and their cgroups' cpuset.cpus.effective following, the state file and the exporter's series,
`plan --exit-code` at 0 for a balanced tenant and at 3 for a foreign change, apply and a
SIGTERM returning the declared sizes, a fixed tenant and housekeeping never touched.

Why this module runs past 400 lines: each test is one scenario of the balancer acting, end to
end, on the one host set up here (the fake systemd on a private bus, the moving tree, the
tenants applied); the decision itself is tested in test_balance, the mover in
test_balancer_mover.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from cgtree import Motion, MovingTree

from slicectl.cli import main
from slicectl.core.cpulist import format_cpulist, from_bitmask, to_bitmask
from slicectl.demo.fakesystemd import FakeSystemd
from slicectl.host.files.lock import locked_dir

ROOT = Path(__file__).resolve().parent
XEON = str(ROOT / "fixtures" / "topologies" / "xeon-2s-smt.json")
# Placed on xeon-2s-smt: housekeeping 0,16; web 3,4,19,20 and batch 1,2,17,18 on node 0 (the
# core batch gives first is its highest, 2,18); db 8-9,24-25 on node 1.
YAML = """\
version: 1
housekeeping: {cpus: 2}
balance: {interval: 200ms, window: 600ms, cooldown: 1s}
tenants:
  web: {cpus: 4, cpus_min: 2, cpus_max: 8, nodes: [0]}
  batch: {cpus: 4, cpus_min: 2, nodes: [0]}
  db: {cpus: 4, nodes: [1]}
"""
DECLARED = {"web": "3,4,19,20", "batch": "1,2,17,18", "db": "8,9,24,25"}
MOVED = {"web": "2-4,18-20", "batch": "1,17"}
UNTOUCHED = ("tenants-db.slice", "system.slice", "user.slice", "tenants.slice")


@dataclass
class Host:
    """The host the balancer acts on: the fake systemd, its cgroup tree, the files."""

    tmp: Path
    bus: str
    fake: FakeSystemd
    tree: MovingTree

    @property
    def tenants(self) -> Path:
        return self.tmp / "tenants.yaml"

    @property
    def state(self) -> Path:
        return self.tmp / "run" / "balance.json"

    def args(self, verb: str, *extra: str) -> list[str]:
        """A verb's command line on this host (hidden roots included)."""
        where = ["--unit-dir", str(self.tmp / "units"), "--cgroup-root", str(self.tree.root),
                 "--bus", self.bus, "--balance-state", str(self.state)]
        control = [] if verb == "plan" else ["--control-dir", str(self.tmp / "control")]
        return [verb, str(self.tenants), *where, "--topology", XEON, *control, *extra]

    def allowed(self, tenant: str) -> str:
        """The slice's AllowedCPUs as systemd holds it."""
        return format_cpulist(from_bitmask(self.fake.units[f"tenants-{tenant}.slice"]
                                           .raw("AllowedCPUs")))

    def effective(self, tenant: str) -> str:
        path = self.tree.root / "tenants.slice" / f"tenants-{tenant}.slice"
        return (path / "cpuset.cpus.effective").read_text().strip()

    def state_json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.state.read_text())
        return data

    def load(self) -> Callable[[float], None]:
        """A sleep that runs the tenants' load meanwhile (web starved, batch idle): their
        counters move by the time that really passed, so rates hold on a busy machine."""
        last = time.monotonic()

        def sleep(seconds: float) -> None:
            nonlocal last
            time.sleep(seconds)
            now = time.monotonic()
            self.tree.advance(now - last)
            last = now

        return sleep

    async def run_load(self, done: Callable[[], bool], timeout: float = 60) -> None:
        """Run the tenants' load (as `load`) until done() or `timeout` seconds."""
        last, deadline = time.monotonic(), time.monotonic() + timeout
        while time.monotonic() < deadline and not done():
            await asyncio.sleep(0.05)
            now = time.monotonic()
            self.tree.advance(now - last)
            last = now

    def calls_since(self, mark: int) -> list[tuple[str, dict[str, Any]]]:
        """(unit, properties) of every SetUnitProperties since call number `mark`; each
        asserted to be a runtime call."""
        out = []
        for member, args in self.fake.calls[mark:]:
            if member == "SetUnitProperties":
                assert args[1] is True, f"{args[0]}: not a runtime property"
                out.append((args[0], {name: v.value for name, v in args[2]}))
        return out


@pytest_asyncio.fixture
async def host(tmp_path: Path, dbus_daemon: str) -> AsyncIterator[Host]:
    """The tenants applied (declared sizes live), then given their load: web busy on all 4
    CPUs and under CPU pressure, batch idle, db (fixed) busy."""
    tree = MovingTree(tmp_path / "cgroup", cpus="0-31", mems="0-1")
    fake = FakeSystemd(tree.root, cpus=range(32), nodes=range(2))
    fake.control_dir = tmp_path / "control"
    await fake.start(dbus_daemon)
    h = Host(tmp_path, dbus_daemon, fake, tree)
    h.tenants.write_text(YAML)
    try:
        assert await asyncio.to_thread(main, h.args("apply", "--yes")) == 0
        # Only the load's files: cpuset.*, cpu.weight and memory.* are the fake systemd's.
        for name, motion in (("web", Motion(cpu_cores=4.0, psi_some={"cpu": 30.0})),
                             ("batch", Motion(cpu_cores=0.2)), ("db", Motion(cpu_cores=4.0))):
            tree.add(f"tenants.slice/tenants-{name}.slice", motion, controllers="")
        yield h
    finally:
        await fake.stop()


async def balance_once(h: Host, capsys: pytest.CaptureFixture[str], *extra: str
                       ) -> tuple[int, str, str]:
    """`slicectl balance TENANTS --once` (acting), the load running while it samples; run
    again while it says "no move": a decision needs samples every interval over the window,
    which a busy test machine sometimes misses (the window is then not covered)."""
    from slicectl.cli.balance import cmd_balance
    from slicectl.cli.parser import build_parser

    args = build_parser().parse_args(h.args("balance", "--once", *extra))
    for _ in range(10):
        code = await asyncio.to_thread(cmd_balance, args, sleep=h.load())
        out, err = capsys.readouterr()
        if not out.startswith("no move:"):
            break
    return code, out, err


async def test_a_starved_tenant_grows_by_a_core_of_its_idle_neighbour_at_runtime(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    assert {t: host.allowed(t) for t in DECLARED} == DECLARED
    mark = len(host.fake.calls)
    code, out, err = await balance_once(host, capsys)
    assert code == 0, err
    (line,) = out.splitlines()
    assert line.startswith("move core 2,18 (node 0) from batch to web: web starved for 0.6s")
    assert "batch idle for 0.6s" in line
    # The donor shrinks first, then the receiver grows; AllowedCPUs only, at runtime only.
    assert host.calls_since(mark) == [
        ("tenants-batch.slice", {"AllowedCPUs": to_bitmask({1, 17})}),
        ("tenants-web.slice", {"AllowedCPUs": to_bitmask({2, 3, 4, 18, 19, 20})})]
    assert {t: host.allowed(t) for t in MOVED} == MOVED
    assert {t: host.effective(t) for t in MOVED} == MOVED
    assert host.allowed("db") == DECLARED["db"]
    # Runtime only: the control drop-ins systemd wrote for the moves are gone again, so a
    # daemon-reload or a reboot returns the declared CPUs.
    assert not [p for p in (host.tmp / "control").rglob("*") if p.is_file()]
    state = host.state_json()["tenants"]
    assert set(state) == {"web", "batch"}  # elastic tenants only
    web, batch = state["web"], state["batch"]
    assert (web["declared"], web["cpus"], web["cpu_count"], web["moves"]) == (
        DECLARED["web"], MOVED["web"], 6, {"grow": 1, "shrink": 0})
    assert (batch["cpus"], batch["declared_count"], batch["moves"]) == (
        MOVED["batch"], 4, {"grow": 0, "shrink": 1})
    assert web["last_reason"].startswith("web starved") and web["last_move"] > 0


async def test_a_balanced_tenant_is_not_drift_but_a_foreign_change_is(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    from slicectl.host.systemd.systemd import Systemd

    assert (await balance_once(host, capsys))[0] == 0
    assert await asyncio.to_thread(main, host.args("plan", "--exit-code")) == 0
    out = capsys.readouterr().out
    assert "This host matches the plan." in out
    assert ("tenants-web.slice: balanced to 6 CPUs (2-4,18-20) by slicectl balance; declared 4 "
            "(3,4,19,20)") in out
    assert await asyncio.to_thread(main, host.args("plan", "--exit-code", "--json")) == 0
    changes = json.loads(capsys.readouterr().out)["changes"]
    assert changes["changed"] is False and changes["properties"] == []
    assert {c["unit"]: (c["live"], c["declared"]) for c in changes["balanced"]} == {
        "tenants-web.slice": ("2-4,18-20", "3,4,19,20"),
        "tenants-batch.slice": ("1,17", "1,2,17,18")}
    # Someone else changes web (`systemctl set-property --runtime`): that is drift.
    async with await Systemd.connect(host.bus) as sd:
        await sd.set_unit_properties("tenants-web.slice", {"AllowedCPUs": frozenset({3, 19})},
                                     runtime=True)
    assert await asyncio.to_thread(main, host.args("plan", "--exit-code")) == 3
    out = capsys.readouterr().out
    assert "set    tenants-web.slice: AllowedCPUs 3,19 -> 3,4,19,20" in out
    assert "tenants-batch.slice: balanced to 2 CPUs" in out  # still the balancer's


async def test_a_move_systemd_refuses_halfway_is_put_back(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    host.fake.fail_on("SetUnitProperties", "tenants-web.slice",
                      error="org.freedesktop.DBus.Error.AccessDenied", nth=1)
    code, out, err = await balance_once(host, capsys)
    assert code == 1 and out == ""
    assert "not moved: core 2,18 (node 0) from batch to web: web starved" in err
    assert "): setting AllowedCPUs on tenants-web.slice failed: permission denied" in err
    assert err.rstrip().endswith("; put back")
    assert {t: host.allowed(t) for t in DECLARED} == DECLARED  # batch has its core again
    assert host.state_json()["tenants"]["batch"]["moves"] == {"grow": 0, "shrink": 0}


async def test_the_exporters_drift_is_0_for_a_balanced_tenant_and_1_for_a_foreign_change(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    from slicectl.apply.applier import ApplyOptions
    from slicectl.exporter.drift import DriftWatch
    from slicectl.host.systemd.systemd import Systemd
    from slicectl.host.topology.sysfs import load_topology

    assert (await balance_once(host, capsys))[0] == 0
    options = ApplyOptions(unit_dir=host.tmp / "units", cgroup_root=host.tree.root,
                           bus_address=host.bus, balance_state=host.state)
    watch = await asyncio.to_thread(DriftWatch, host.tenants, load_topology(XEON, None),
                                    options)
    try:
        rows = dict(await asyncio.to_thread(watch.rows))
        assert rows[("tenants-web.slice", "AllowedCPUs")] == 0.0
        assert rows[("tenants-batch.slice", "AllowedCPUs")] == 0.0
        assert sum(rows.values()) == 0.0
        async with await Systemd.connect(host.bus) as sd:
            await sd.set_unit_properties("tenants-web.slice",
                                         {"AllowedCPUs": frozenset({3, 19})}, runtime=True)
        rows = dict(await asyncio.to_thread(watch.rows))
        assert rows[("tenants-web.slice", "AllowedCPUs")] == 1.0
        assert rows[("tenants-batch.slice", "AllowedCPUs")] == 0.0
    finally:
        await asyncio.to_thread(watch.close)


async def test_apply_returns_the_declared_sizes_and_resets_the_state(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    assert (await balance_once(host, capsys))[0] == 0
    assert await asyncio.to_thread(main, host.args("apply", "--yes")) == 0
    out = capsys.readouterr().out
    assert "return tenants-web.slice: balanced to 6 CPUs" in out
    assert {t: host.allowed(t) for t in MOVED} == {t: DECLARED[t] for t in MOVED}
    assert {t: host.effective(t) for t in MOVED} == {t: DECLARED[t] for t in MOVED}
    state = host.state_json()["tenants"]
    assert {t: s["cpus"] for t, s in state.items()} == {t: DECLARED[t] for t in MOVED}
    assert state["web"]["moves"] == {"grow": 1, "shrink": 0}  # the counters are kept
    assert await asyncio.to_thread(main, host.args("plan", "--exit-code")) == 0


async def test_the_balancer_never_moves_while_another_run_holds_the_unit_directory(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    """apply holds the unit directory's lock from reading to verifying: a move due then
    waits for it, and is skipped (said on stderr) if it waits longer than --lock-timeout."""
    mark = len(host.fake.calls)
    with locked_dir(host.tmp / "units"):
        code, out, err = await balance_once(host, capsys, "--lock-timeout", "0.2")
    assert code == 1 and out == ""
    assert f"waiting for pid {os.getpid()}" in err
    assert "not moved: core 2,18 (node 0) from batch to web: " in err
    assert "gave up after waiting 0.2 s" in err
    assert host.calls_since(mark) == []
    assert {t: host.allowed(t) for t in DECLARED} == DECLARED


async def test_a_move_waits_for_the_lock_and_is_made_once_it_is_free(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    from slicectl.cli.balance import cmd_balance
    from slicectl.cli.parser import build_parser

    mark = len(host.fake.calls)
    args = build_parser().parse_args(host.args("balance", "--once"))
    said = ""
    with locked_dir(host.tmp / "units"):
        for _ in range(10):  # again after a run whose window was not covered (balance_once)
            task = asyncio.ensure_future(asyncio.to_thread(cmd_balance, args,
                                                           sleep=host.load()))
            printed = ""  # (each look takes what was printed on both streams)
            while "to move core 2,18" not in said and not task.done():
                await asyncio.sleep(0.02)
                out, err = capsys.readouterr()
                said, printed = said + err, printed + out
            if "to move core 2,18" in said:
                break
            assert await task == 0
            printed += capsys.readouterr().out
            assert printed.startswith("no move:"), printed
        assert f"waiting for pid {os.getpid()}" in said
        assert "to move core 2,18 (node 0) from batch to web" in said
        assert host.calls_since(mark) == []  # nothing while the lock is held
    assert await task == 0
    assert {t: host.allowed(t) for t in MOVED} == MOVED


@contextlib.asynccontextmanager
async def balancer(host: Host, env: dict[str, str] | None = None
                   ) -> AsyncIterator[asyncio.subprocess.Process]:
    """`slicectl balance TENANTS` running as under systemd: a process of its own, killed
    if the test ends before it stopped."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"} if env is None else env
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "slicectl", *host.args("balance"), env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def stop(proc: asyncio.subprocess.Process) -> tuple[str, str]:
    """SIGTERM, as `systemctl stop` sends it: its stdout and stderr once it exited."""
    proc.send_signal(signal.SIGTERM)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return out.decode(), err.decode()


def moved(host: Host) -> bool:
    """Web has batch's core, live and in the state file."""
    return (host.allowed("web") == MOVED["web"] and host.state.exists()
            and host.state_json()["tenants"]["web"]["cpus"] == MOVED["web"])


async def test_sigterm_restores_the_declared_sizes_before_exit(host: Host) -> None:
    """Run as systemd runs the shipped unit (Type=notify): systemd hears it ready after its
    first sample, its moves as a status, and its stop."""
    notified = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notified.bind(str(host.tmp / "notify"))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NOTIFY_SOCKET": str(host.tmp / "notify")}
    async with balancer(host, env) as proc:
        await host.run_load(lambda: moved(host))
        assert host.allowed("web") == MOVED["web"]
        out, err = await stop(proc)
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("move core 2,18 (node 0) from batch to web: ")
    assert lines[1:] == [  # web shrinks first: no CPU is in both at any time
        "restored web to its declared 4 CPUs (3,4,19,20; it held 6: 2-4,18-20)",
        "restored batch to its declared 4 CPUs (1,2,17,18; it held 2: 1,17)"]
    assert {t: host.allowed(t) for t in DECLARED} == DECLARED
    assert {t: host.effective(t) for t in MOVED} == {t: DECLARED[t] for t in MOVED}
    state = host.state_json()["tenants"]
    assert {t: s["cpus"] for t, s in state.items()} == {t: DECLARED[t] for t in MOVED}
    notified.setblocking(False)
    messages = []
    with contextlib.suppress(BlockingIOError):
        while True:
            messages.append(notified.recv(4096).decode())
    notified.close()
    ready = "READY=1\nSTATUS=2 elastic tenants, a sample every 0.2s"
    assert messages == [
        ready, "STATUS=2 elastic tenants, a sample every 0.2s; moves made: 1, the last: core "
        "2,18 from batch to web",
        "STOPPING=1\nSTATUS=returning the moved tenants to their declared CPUs"]


async def test_an_empty_donor_stays_balanced_in_the_rounds_after_a_move(host: Host) -> None:
    """batch has no task (an empty cgroup, which the sampler reads in full only every
    IDLE_FULL_EVERY refreshes): the rounds after the move read its CPUs afresh, so its stale
    sample never looks like a reload that put it back, and its real CPUs never like someone
    else's change (`plan --exit-code` 3)."""
    from slicectl.host.cgroup.sampler import IDLE_FULL_EVERY

    batch = host.tree.cgroups["tenants.slice/tenants-batch.slice"]
    batch.tasks, batch.populated = 0, False
    async with balancer(host) as proc:
        await host.run_load(lambda: moved(host))
        assert moved(host)
        # Every empty cgroup has had its full read by then (0.2 s an interval).
        after = time.monotonic() + (IDLE_FULL_EVERY + 3) * 0.2
        await host.run_load(lambda: time.monotonic() >= after)
        state = host.state_json()["tenants"]
        assert {t: s["cpus"] for t, s in state.items()} == MOVED
        assert await asyncio.to_thread(main, host.args("plan", "--exit-code")) == 0
        _, err = await stop(proc)
    assert "back at their declared CPUs" not in err
    assert "left alone" not in err


async def test_the_exporter_serves_the_balancers_moves_and_sizes(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    from prometheus_client.exposition import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from slicectl.exporter.server import SliceCollector, registry_of
    from slicectl.host.cgroup.sampler import Sampler

    def scrape() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        with Sampler(host.tree.root) as sampler:
            text = generate_latest(registry_of(SliceCollector(
                sampler, balance_state=host.state))).decode()
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for f in text_string_to_metric_families(text) for s in f.samples}

    assert (await balance_once(host, capsys))[0] == 0
    got = scrape()
    assert {k: v for k, v in got.items() if k[0].startswith("slicectl_balance")} == {
        ("slicectl_balance_moves_total", (("direction", "grow"), ("tenant", "batch"))): 0.0,
        ("slicectl_balance_moves_total", (("direction", "shrink"), ("tenant", "batch"))): 1.0,
        ("slicectl_balance_moves_total", (("direction", "grow"), ("tenant", "web"))): 1.0,
        ("slicectl_balance_moves_total", (("direction", "shrink"), ("tenant", "web"))): 0.0,
        ("slicectl_balance_cpus", (("tenant", "batch"),)): 2.0,
        ("slicectl_balance_cpus", (("tenant", "web"),)): 6.0,
        ("slicectl_balance_declared_cpus", (("tenant", "batch"),)): 4.0,
        ("slicectl_balance_declared_cpus", (("tenant", "web"),)): 4.0}
    slices = {k for k in got if k[0] == "slicectl_cpu_usage_seconds_total"}
    # A state file that is garbage: its series go, an error is counted, the rest stays.
    host.state.write_text('{"format": "slicectl-balance-state/1", "tenants": {"web": 3}}')
    broken = scrape()
    assert not [k for k in broken if k[0].startswith("slicectl_balance")]
    assert broken[("slicectl_exporter_errors_total", (("source", "balance-state"),))] == 1.0
    assert {k for k in broken if k[0] == "slicectl_cpu_usage_seconds_total"} == slices


async def test_a_garbage_state_file_is_a_located_error_not_a_traceback(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    from slicectl.host.files.balance_state_file import read_state

    host.state.parent.mkdir(parents=True, exist_ok=True)
    host.state.write_text('{"format": "slicectl-balance-state/1", "tenants": '
                          '{"web": {"declared": "0-3", "cpus": "x", "moves": {}}}}')
    with pytest.raises(Exception) as e:
        read_state(host.state)
    assert str(e.value) == f"{host.state}: tenants.web.cpus: not a cpulist such as \"0-3,8\" " \
                           "(bad number 'x' in cpulist 'x')"
    # The balancer starts afresh from the declared sizes (and moves as usual).
    code, out, err = await balance_once(host, capsys)
    assert code == 0, err
    assert host.state_json()["tenants"]["web"]["cpus"] == MOVED["web"]


def refuse_to_write(path: Path, state: Any) -> None:
    raise OSError(errno.EROFS, "Read-only file system", str(path))


async def test_a_move_the_state_file_cannot_record_first_is_not_made(
        host: Host, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Write-ahead: a move the state file does not know of could not be undone by a stop."""
    from slicectl.balancer import mover

    monkeypatch.setattr(mover, "write_state", refuse_to_write)
    mark = len(host.fake.calls)
    code, out, err = await balance_once(host, capsys)
    assert code == 1 and out == ""
    assert "not moved: core 2,18 (node 0) from batch to web: web starved" in err
    assert err.rstrip().endswith(
        f": cannot record it in the state file first ({host.state}: Read-only file system), "
        "so it was not made")
    assert host.calls_since(mark) == []
    assert {t: host.allowed(t) for t in DECLARED} == DECLARED


async def test_a_move_made_whose_record_after_fails_is_still_undone_by_a_stop(
        host: Host, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The state file takes the move as under way, then refuses its outcome: the move stands
    and is said to, `plan` counts it as the balancer's, and a stop returns it."""
    from slicectl.apply.applier import ApplyOptions
    from slicectl.balancer import mover
    from slicectl.balancer.mover import Mover
    from slicectl.host.files.balance_state_file import write_state
    from slicectl.host.planning import load_tenants, plan_for_host
    from slicectl.host.topology.sysfs import load_topology

    def refuse_a_move_made(path: Path, state: Any) -> None:
        if any(t.cpus != t.declared for t in state.tenants.values()):
            refuse_to_write(path, state)
        write_state(path, state)

    monkeypatch.setattr(mover, "write_state", refuse_a_move_made)
    code, out, err = await balance_once(host, capsys)
    assert code == 0, err
    assert out.startswith("move core 2,18 (node 0) from batch to web: ")
    assert (f"note: core 2,18 from batch to web: the state file could not be updated "
            f"({host.state}: Read-only file system): it still records the move as under way, "
            "which a stop undoes") in err
    assert {t: host.allowed(t) for t in MOVED} == MOVED
    state = host.state_json()["tenants"]
    assert {t: (s["cpus"], s["pending"]) for t, s in state.items()} == {
        t: (DECLARED[t], MOVED[t]) for t in MOVED}
    assert await asyncio.to_thread(main, host.args("plan", "--exit-code")) == 0
    capsys.readouterr()

    monkeypatch.undo()  # the stop, as a SIGTERM runs it, with a writable state file
    config = load_tenants(str(host.tenants))
    options = ApplyOptions(unit_dir=host.tmp / "units", cgroup_root=host.tree.root,
                           bus_address=host.bus, control_dir=host.tmp / "control",
                           balance_state=host.state)
    stop = Mover(config, plan_for_host(config, load_topology(XEON, None), options.unit_dir),
                 options)
    assert await asyncio.to_thread(stop.restore) == [
        "restored web to its declared 4 CPUs (3,4,19,20; it held 6: 2-4,18-20)",
        "restored batch to its declared 4 CPUs (1,2,17,18; it held 2: 1,17)"]
    assert {t: host.allowed(t) for t in DECLARED} == DECLARED
    assert "pending" not in host.state_json()["tenants"]["web"]


async def test_a_running_balancer_plans_again_when_tenants_yaml_changes(host: Host) -> None:
    """An apply resizes web while the balancer runs: its next rounds balance web at its new
    declared size (not "left alone" as someone else's change), and a stop returns that."""
    from cgtree import Motion

    from slicectl.core.cpulist import parse_cpulist

    web = "tenants.slice/tenants-web.slice"
    host.tree.motion[web] = Motion(cpu_cores=0.1)  # nothing to move until it is resized
    async with balancer(host) as proc:
        assert proc.stderr is not None
        said = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert said.startswith("balancing: sampling every 0.2s"), said
        host.tenants.write_text(YAML.replace("web: {cpus: 4,", "web: {cpus: 6,"))
        assert await asyncio.to_thread(main, host.args("apply", "--yes")) == 0
        resized = host.allowed("web")
        assert len(parse_cpulist(resized)) == 6
        host.tree.motion[web] = Motion(cpu_cores=6.0, psi_some={"cpu": 30.0})
        grown = format_cpulist(parse_cpulist(resized) | {2, 18})
        await host.run_load(lambda: host.allowed("web") == grown, timeout=30)
        assert host.allowed("web") == grown  # a core more than its new declared size
        out, err = await stop(proc)
    assert "left alone" not in err
    assert (f"{host.tenants} changed: planned again; elastic tenants and their declared CPUs: "
            "web 6, batch 4\n") in err
    moves = [line for line in out.splitlines() if line.startswith("move ")]
    assert len(moves) == 1 and moves[0].startswith("move core 2,18 (node 0) from batch to "
                                                   "web: web starved")
    assert f"restored web to its declared 6 CPUs ({resized};" in out
    assert host.allowed("web") == resized
