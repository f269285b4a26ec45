"""`slicectl demo` end to end, run as a user would: status, edit → plan → apply → roll back over
its private bus, with nothing written outside its temporary folder and nothing left running or
on disk afterwards; its refusals, which start nothing. Its modules have their own test files
(test_cli_demo, test_session, test_scenario, test_bus, ...)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parent.parent / "slicectl" / "demo"

# Installed in every Python process of the demo (sitecustomize): each path any of them writes,
# creates, renames or removes, one a line. dbus-daemon writes only its socket, in the folder.
AUDIT = """\
import os, sys, threading
_fd = os.open(os.environ["DEMO_WRITE_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# event -> (index of a path it changes, index of the dir_fd that path is relative to or None)
_CHANGE = {"os.mkdir": [(0, 2)], "os.remove": [(0, 1)], "os.rmdir": [(0, 1)],
           "os.rename": [(0, 2), (1, 3)], "os.link": [(1, 3)], "os.symlink": [(1, 2)],
           "os.chmod": [(0, 2)], "os.chown": [(0, 3)], "os.truncate": [(0, None)],
           "os.utime": [(0, 3)], "shutil.rmtree": [(0, 1)]}
_here = threading.local()
def _record(path, dir_fd=None):
    if isinstance(path, int) or path is None:
        return
    path = os.fsdecode(path)
    if dir_fd is not None and not os.path.isabs(path):
        path = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
    os.write(_fd, os.path.abspath(path).encode() + b"\\n")
def _hook(event, args):
    if event == "open" and not getattr(_here, "recorded", False):
        path, mode, flags = args
        if (isinstance(mode, str) and set(mode) & set("wax+")) or (flags or 0) & _WRITE:
            _record(path)
    elif event in _CHANGE:
        for path, fd in _CHANGE[event]:
            _record(args[path], None if fd is None or fd >= len(args) else args[fd])
_os_open = os.open
def _open(path, flags, mode=0o777, *, dir_fd=None):
    # The "open" event does not carry os.open's dir_fd: record the path here.
    if dir_fd is not None and flags & _WRITE:
        _record(path, dir_fd)
        _here.recorded = True
    try:
        return _os_open(path, flags, mode, dir_fd=dir_fd)
    finally:
        _here.recorded = False
os.open = _open
sys.addaudithook(_hook)
"""

PROBE = """\
import asyncio, os
from dbus_fast import Message
from dbus_fast.aio import MessageBus
async def main():
    bus = await MessageBus(bus_address=f"unix:path={os.environ['SLICECTL_DEMO_DIR']}/bus").connect()
    reply = await bus.call(Message(
        destination="org.freedesktop.systemd1",
        path="/org/freedesktop/systemd1/unit/tenants_2dcache_2eslice",
        interface="org.freedesktop.DBus.Properties", member="Get", signature="ss",
        body=["org.freedesktop.systemd1.Slice", "MemoryHigh"]))
    print(reply.body[0].value)
asyncio.run(main())
"""

SCRIPT = """\
set -e
echo "=== status"; slicectl status --json
echo "=== matches"; slicectl plan tenants.yaml --exit-code > /dev/null && echo 0
sed -i 's/memory_high: 1G/memory_high: 1792M/' tenants.yaml
echo "=== edited"; slicectl plan tenants.yaml --exit-code > /dev/null || echo $?
touch fail-next-apply; while [ -e fail-next-apply ]; do sleep 0.05; done  # armed
echo "=== refused"; slicectl apply tenants.yaml --yes > /dev/null 2> refused.txt || echo $?
"$PYTHON" "$PROBE"; cat cgroup/tenants.slice/tenants-cache.slice/memory.high
grep MemoryHigh units/tenants-cache.slice.d/50-slicectl.conf; grep -c "rolled back" refused.txt
slicectl apply tenants.yaml --yes > /dev/null 2>&1
echo "=== applied"; "$PYTHON" "$PROBE"; cat cgroup/tenants.slice/tenants-cache.slice/memory.high
cp tenants.yaml.orig tenants.yaml
slicectl apply tenants.yaml --yes > /dev/null 2>&1
echo "=== rolled back"; "$PYTHON" "$PROBE"; cat cgroup/tenants.slice/tenants-cache.slice/memory.high
echo "=== after"; slicectl plan tenants.yaml --exit-code > /dev/null && echo 0
"""


def _slicectl() -> str:
    found = shutil.which("slicectl", path=os.path.dirname(sys.executable))
    assert found is not None
    return found


def _environment(tmp_path: Path, scratch: Path) -> tuple[dict[str, str], Path]:
    """An environment whose temporary folder and HOME are in `scratch`, whose Python
    processes log every path they write (AUDIT) into the log it returns."""
    (scratch / "home").mkdir()
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(AUDIT)
    (tmp_path / "probe.py").write_text(PROBE)
    log = tmp_path / "writes.log"
    env = dict(os.environ, TMPDIR=str(scratch), HOME=str(scratch / "home"),
               PYTHONPATH=str(site), DEMO_WRITE_LOG=str(log), PYTHONDONTWRITEBYTECODE="1",
               PYTHON=sys.executable, PROBE=str(tmp_path / "probe.py"))
    env.pop("SLICECTL_DEMO_DIR", None)
    return env, log


def _sections(out: str) -> dict[str, str]:
    parts = re.split(r"^=== (.+)$", out, flags=re.M)
    return {name: text.strip() for name, text in zip(parts[1::2], parts[2::2], strict=True)}


def _processes_naming(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text in cmdline.read_bytes().decode(errors="replace"):
                found.append(cmdline.parent.name)
        except OSError:
            continue
    return found


@pytest.mark.long
def test_demo_shell_plan_apply_roll_back_touching_nothing_outside(tmp_path: Path,
                                                                  scratch: Path) -> None:
    env, log = _environment(tmp_path, scratch)
    done = subprocess.run([_slicectl(), "demo", "shell", "--", "sh", "-c", SCRIPT], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = _sections(done.stdout)
    # status --json: the cache is held at its memory_high, and the counters moved.
    slices = {s["unit"]: s for s in json.loads(out["status"])["slices"]}
    cache = slices["tenants-cache.slice"]
    assert cache["limits"]["memory_high"] == 1 << 30 == cache["memory"]["current"]
    assert cache["events"]["high"] > 0
    assert slices["tenants-db.slice"]["cpu"]["cores"] > 1
    assert slices["tenants-db.slice"]["limits"]["mems"] == "0"
    # The host matched tenants.yaml; after the edit it differed (3); apply changed the fake
    # systemd's property (read over the bus by another client) and the cgroup file; putting
    # the old file back and applying restored both, and the host matches again.
    assert (out["matches"], out["edited"], out["after"]) == ("0", "3", "0")
    # With fail-next-apply the fake refused the property: apply failed (1) and rolled back
    # the live value and the drop-in.
    assert out["refused"].split() == ["1", str(1 << 30), str(1 << 30), "MemoryHigh=1G", "1"]
    assert out["applied"].split() == [str(1792 << 20)] * 2
    assert out["rolled back"].split() == [str(1 << 30)] * 2
    # Nothing written outside the temporary folder (TMPDIR: the demo's folder and Python's
    # probe of TMPDIR), nothing left there, no process left running.
    written = log.read_text().split()
    assert [p for p in written if not Path(p).is_relative_to(scratch)] == []
    demo_dirs = {Path(p).relative_to(scratch).parts[0] for p in written
                 if Path(p).relative_to(scratch).parts[0].startswith("slicectl-demo-")}
    assert len(demo_dirs) == 1
    assert list(scratch.iterdir()) == [scratch / "home"]
    assert not _processes_naming(str(scratch / next(iter(demo_dirs))))


def test_demo_status_prints_one_snapshot_and_leaves_nothing(tmp_path: Path,
                                                            scratch: Path) -> None:
    # The README's first command: ends by itself, the cache shown at its memory_high.
    env, _ = _environment(tmp_path, scratch)
    env["COLUMNS"] = "160"  # piped: as wide as COLUMNS says, wide enough for the events column
    done = subprocess.run([_slicectl(), "demo", "status"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    cache = next(line for line in done.stdout.splitlines() if "tenants-cache.slice" in line)
    assert "1G / 1G / 2G" in cache and "high +" in cache, done.stdout
    assert list(scratch.iterdir()) == [scratch / "home"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_the_demo_and_removes_its_folder(signum: int, tmp_path: Path,
                                                        scratch: Path) -> None:
    # SIGHUP: the terminal it runs in was closed.
    env, _ = _environment(tmp_path, scratch)
    demo = subprocess.Popen([_slicectl(), "demo", "shell", "--", "sleep", "300"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(scratch.glob("slicectl-demo-*/.slicectl-demo")):  # running
            assert demo.poll() is None and time.monotonic() < deadline, demo.communicate()
            time.sleep(0.05)
        folder = next(scratch.glob("slicectl-demo-*"))
        demo.send_signal(signum)
        assert demo.wait(60) == 128 + signum
    finally:
        if demo.poll() is None:
            demo.kill()
        demo.communicate()
    assert not folder.exists()
    assert not _processes_naming(str(folder))  # dbus-daemon and sleep are gone too


@pytest.mark.parametrize(("argv", "message"), [
    (["demo", "run", "status"], "which demo?"),
    (["demo", "--dir", "/nonexistent-demo", "run", "status"], "no demo is running there"),
    (["demo", "tui"], "needs a terminal"),
    (["demo", "nope"], "invalid choice: 'nope'"),
    (["demo", "--dir", "", "status"], "must not be empty"),
    (["demo", "status", "--dir="], "must not be empty"),
])
def test_demo_usage_errors(argv: list[str], message: str, tmp_path: Path,
                           scratch: Path) -> None:
    env, _ = _environment(tmp_path, scratch)
    done = subprocess.run([_slicectl(), *argv], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert list(scratch.iterdir()) == [scratch / "home"]  # nothing started


def test_demo_in_a_folder_that_is_not_empty_is_refused(tmp_path: Path, scratch: Path) -> None:
    env, _ = _environment(tmp_path, scratch)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    done = subprocess.run([_slicectl(), "demo", "--dir", str(tmp_path / "full"), "status"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "not an empty directory" in done.stderr, done.stderr
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["keep.txt"]


def test_demo_without_dbus_daemon_says_what_to_install(tmp_path: Path,
                                                       scratch: Path) -> None:
    env, _ = _environment(tmp_path, scratch)
    env["PATH"] = str(tmp_path / "empty")  # no dbus-daemon to be found
    done = subprocess.run([_slicectl(), "demo", "status"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "dbus-daemon is not installed" in done.stderr and "apt install" in done.stderr
    assert "Traceback" not in done.stderr
    assert list(scratch.iterdir()) == [scratch / "home"]


def test_the_write_audit_sees_every_kind_of_write(tmp_path: Path, scratch: Path) -> None:
    # The audit above must see what it is meant to, or its empty list proves nothing.
    env, log = _environment(tmp_path, scratch)
    out = tmp_path / "out"
    code = f"""
import os, shutil
from pathlib import Path
out = Path({str(out)!r})
out.mkdir()
(out / "a").write_text("x")
fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
os.close(os.open("b", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
os.rename(out / "a", out / "c")
(out / "d").mkdir()
(out / "d" / "e").write_text("x")
Path({str(DEMO / "tenants.yaml")!r}).read_text()  # a read: not listed
shutil.rmtree(out / "d")
"""
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=scratch)
    assert set(log.read_text().split()) == {str(out), *(str(out / name) for name in
                                                          ("a", "b", "c", "d", "d/e"))}
