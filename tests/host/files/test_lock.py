"""One writer per directory: the lock file of a directory, in a folder no other user can
write, and two real `slicectl generate` processes into one directory."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from paths import ROOT

from slicectl.core.errors import LockTimeout, OutputError
from slicectl.host.files import lock
from slicectl.host.files.lock import escaped_path, holder_of, lock_file, locked_dir
from slicectl.host.files.unitdir import MANIFEST_NAME

XEON = str(ROOT / "tests" / "fixtures" / "topologies" / "xeon-2s-smt.json")


def listing(root: Path) -> dict[str, tuple[int, bytes | str | None]]:
    """Every entry under root (links not followed): mode and contents or link target."""
    result: dict[str, tuple[int, bytes | str | None]] = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        data = (os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else None)
        result[str(p.relative_to(root))] = (st.st_mode, data)
    return result


def test_lock_makes_the_folder_and_its_parents_and_removes_them_if_left_empty(
        tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "c"
    with locked_dir(out):
        assert out.is_dir()
    assert list(tmp_path.iterdir()) == []  # no lock file, no folder


def test_lock_keeps_a_folder_that_was_written_and_leaves_no_lock_file(tmp_path: Path) -> None:
    out = tmp_path / "a" / "out"
    with locked_dir(out):
        (out / "x.slice").write_text("x\n")
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "a", "a/out", "a/out/x.slice"]


def test_lock_on_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(NotADirectoryError), locked_dir(tmp_path / "f" / "out"):
        pass
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


@contextmanager
def holder(folder: Path) -> Iterator[subprocess.Popen[str]]:
    """util-linux `flock` on FOLDER's lock file, holding it until we close its stdin (through
    a link of a short name beside FOLDER, so that its command line stays short, whatever the
    temporary folder's path)."""
    path = lock_file(folder)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    (folder.parent / "held").symlink_to(path)
    proc = subprocess.Popen(["flock", "held", "sh", "-c", "echo locked; read _"],
                            cwd=folder.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "locked\n"
        yield proc
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=60)
        (folder.parent / "held").unlink()


def test_holder_is_named_from_proc_locks(tmp_path: Path) -> None:
    """util-linux flock writes nothing into the file: /proc/locks names it."""
    with holder(tmp_path / "out") as proc:
        fd = os.open(lock_file(tmp_path / "out"), os.O_RDONLY)
        try:
            assert holder_of(fd) == f"pid {proc.pid} (flock held sh -c echo locked; read _)"
        finally:
            os.close(fd)
        with pytest.raises(LockTimeout) as e, locked_dir(tmp_path / "out", timeout=0.2):
            pass
        assert e.value.holder.startswith(f"pid {proc.pid} (flock ")


def test_a_slicectl_holder_is_named_from_what_it_wrote_into_the_lock_file(
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = ("import sys; from pathlib import Path\n"
            "from slicectl.host.files.lock import locked_dir\n"
            "with locked_dir(Path(sys.argv[1])):\n print('locked', flush=True); input()")
    proc = subprocess.Popen([sys.executable, "-c", code, str(out), "apply"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "locked\n"
        assert lock_file(out).read_text().splitlines()[0] == str(proc.pid)
        with pytest.raises(LockTimeout) as e, locked_dir(out, timeout=0.2):
            pass
        command = f"{sys.executable} -c {code} {out} apply".replace("\n", "?")
        assert e.value.holder == f"pid {proc.pid} ({command[:100]}…)"
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)
    assert lock_file(out).read_text() == ""  # released: no holder named


def test_a_user_who_can_open_the_unit_directory_cannot_hold_it(tmp_path: Path) -> None:
    """A flock on the directory itself (anyone may open /etc/systemd/system) is not the lock:
    generate goes ahead at once."""
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen(["flock", str(out), "sh", "-c", "echo locked; read _"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "locked\n"
        gen = slicectl("generate", "examples/web-batch.yaml", "--topology", XEON,
                       "--out", str(out), "--lock-timeout", "0")
        _, stderr = gen.communicate(timeout=120)
        assert gen.returncode == 0, stderr
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)
    assert (out / MANIFEST_NAME).exists()


def slicectl(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "slicectl", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_generate_waits_for_the_holder_then_writes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with holder(out) as proc:
        gen = slicectl("generate", "examples/web-batch.yaml", "--topology", XEON,
                       "--out", str(out))
        assert gen.stderr is not None
        waiting = gen.stderr.readline()  # returns once generate reports that it waits
        assert waiting == (f"slicectl: {out} is in use by pid {proc.pid} (flock held sh -c "
                           "echo locked; read _); waiting for it\n")
        assert gen.poll() is None and list(out.iterdir()) == []  # still waiting, nothing written
    stdout, stderr = gen.communicate(timeout=120)
    assert gen.returncode == 0, stderr
    assert f"create  {out}/tenants-web.slice" in stdout
    assert (out / MANIFEST_NAME).exists()


def test_generate_gives_up_after_its_lock_timeout_naming_the_holder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "local.service").write_text("[Service]\n")
    before = listing(out)
    with holder(out) as proc:
        gen = slicectl("generate", "examples/web-batch.yaml", "--topology", XEON,
                       "--out", str(out), "--lock-timeout", "0.3")
        stdout, stderr = gen.communicate(timeout=120)
    assert gen.returncode == 1
    assert stderr.splitlines()[1:] == [
        f"error: {out} is in use by pid {proc.pid} (flock held sh -c echo locked; read _): "
        "gave up after waiting 0.3 s",
        "  hint: slicectl writes a directory one run at a time, so that its manifest matches "
        "its files: let that run finish, then run again"]
    assert listing(out) == before


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "soon"])
def test_lock_timeout_must_be_seconds(value: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from slicectl.cli import main

    with pytest.raises(SystemExit) as e:
        main(["generate", "x.yaml", "--out", str(tmp_path / "out"), "--lock-timeout", value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --lock-timeout: " in err and f"'{value}'" in err, err
    assert list(tmp_path.iterdir()) == []


def tenants(names: list[str]) -> str:
    return "version: 1\ntenants:\n" + "".join(
        f"  {n}: {{cpus: 1, memory_max: 1G, services: [{n}-app.service, {n}-db.service]}}\n"
        for n in names)


def expected_files(config: Path, tmp_path: Path) -> dict[str, bytes]:
    """What generating `config` alone into a fresh folder produces (manifest aside)."""
    alone = tmp_path / f"alone-{config.stem}"
    proc = subprocess.run([sys.executable, "-m", "slicectl", "generate", str(config),
                           "--topology", XEON, "--out", str(alone)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return {str(p.relative_to(alone)): p.read_bytes() for p in alone.rglob("*")
            if p.is_file() and p.name != MANIFEST_NAME}


@pytest.mark.long
def test_concurrent_generates_with_different_inputs_leave_one_runs_files(
        tmp_path: Path) -> None:
    """Two real processes at once, several times: the directory always holds exactly the
    files of the run that wrote last, all listed in its manifest with their hashes (without
    the lock, runs interleaved and left files no manifest listed)."""
    configs = [tmp_path / "a.yaml", tmp_path / "b.yaml"]
    configs[0].write_text(tenants([f"a{i}" for i in range(12)]))
    configs[1].write_text(tenants([f"b{i}" for i in range(12)]))
    outcomes = [expected_files(c, tmp_path) for c in configs]
    out = tmp_path / "out"
    for _ in range(4):
        procs = [slicectl("generate", str(c), "--topology", XEON, "--out", str(out))
                 for c in configs]
        for p in procs:
            _, stderr = p.communicate(timeout=120)
            assert p.returncode == 0, stderr
        files = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*")
                 if p.is_file() and p.name != MANIFEST_NAME}
        manifest = json.loads((out / MANIFEST_NAME).read_text())
        assert files in outcomes, sorted(set(files) ^ set(outcomes[0]))[:10]
        assert manifest["files"] == {rel: hashlib.sha256(data).hexdigest()
                                     for rel, data in files.items()}
        assert not [p for p in out.rglob("*") if p.is_dir() and not any(p.iterdir())]


def test_a_run_waiting_on_a_folder_that_the_holder_removes_makes_it_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first run made the folder and fails: it removes the folder before releasing the
    lock; the run that waited makes it once it holds the lock, and writes into it."""
    out = tmp_path / "a" / "out"
    waiting = threading.Event()
    result: list[str] = []
    made: list[list[Path]] = []
    real_make_dirs = lock.make_dirs

    def make_dirs(path: Path) -> list[Path]:
        made.append(real_make_dirs(path))
        return made[-1]

    monkeypatch.setattr(lock, "make_dirs", make_dirs)

    def second() -> None:
        with locked_dir(out, timeout=60, on_wait=lambda _holder: waiting.set()):
            (out / "x.slice").write_text("x\n")
            result.append("written")

    with locked_dir(out):
        thread = threading.Thread(target=second)
        thread.start()
        assert waiting.wait(timeout=60)
    # The first run's block ended with the folder empty: it was removed (parents too) before
    # the lock was released.
    thread.join(timeout=60)
    assert result == ["written"]
    # each run makes the folders once it holds the lock
    assert made == [[tmp_path / "a", out], [tmp_path / "a", out]]
    assert (out / "x.slice").read_text() == "x\n"


def test_the_lock_file_is_private_to_its_user(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "locks"
    monkeypatch.setenv(lock.LOCK_DIR_ENV, str(folder))
    old = os.umask(0)
    try:
        with locked_dir(tmp_path / "out"):
            pass
    finally:
        os.umask(old)
    assert folder.stat().st_mode & 0o7777 == 0o700
    assert lock_file(tmp_path / "out").stat().st_mode & 0o7777 == 0o600
    assert lock_file(tmp_path / "out").parent == folder


def refused(out: Path) -> str:
    with pytest.raises(OutputError) as e, locked_dir(out, timeout=0):
        pytest.fail("locked")
    assert "hint: " not in e.value.message and e.value.hint.startswith(
        "slicectl takes its lock only where no other user can: remove ")
    assert not out.exists()
    return e.value.message


def test_a_lock_folder_others_may_write_is_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "locks"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setenv(lock.LOCK_DIR_ENV, str(folder))
    assert refused(tmp_path / "out") == (
        f"refusing the lock folder {folder}: is writable by other users (mode 0777)")
    folder.chmod(0o700)
    folder.rmdir()
    folder.symlink_to(tmp_path)
    assert refused(tmp_path / "out") == (
        f"refusing the lock folder {folder}: is not a folder (a link, or a file)")


def test_a_lock_folder_or_file_of_another_user_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "locks"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv(lock.LOCK_DIR_ENV, str(folder))
    me = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: me + 4242)
    assert refused(tmp_path / "out") == (
        f"refusing the lock folder {folder}: is owned by uid {me}, not by this user "
        f"(uid {me + 4242})")


@pytest.mark.parametrize("mode", [0o644, 0o660, 0o606])
def test_a_lock_file_others_may_open_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               mode: int) -> None:
    """Anyone who can open the file, even to read, can flock it."""
    monkeypatch.setenv(lock.LOCK_DIR_ENV, str(tmp_path))
    path = lock_file(tmp_path / "out")
    path.write_text("")
    path.chmod(mode)
    assert refused(tmp_path / "out") == (
        f"refusing the lock file {path}: other users may open it (mode {mode:04o})")
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere")
    assert refused(tmp_path / "out") == f"refusing the lock file {path}: it is a symbolic link"
    assert not (tmp_path / "elsewhere").exists()


def test_where_the_lock_files_are(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(lock.LOCK_DIR_ENV)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert lock_file(Path("/etc/systemd/system")) == Path(
        "/run/slicectl/locks/etc-systemd-system.lock")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert lock.lock_folder() == Path("/run/user/1000/slicectl/locks")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setenv("TMPDIR", "/var/tmp")
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    assert lock.lock_folder() == Path("/var/tmp/slicectl-1000-locks")


@pytest.mark.parametrize("path", ["/etc/systemd/system", "/", "/srv/a-b/c d/.x/é", "/a//b/"])
def test_lock_names_are_systemd_escape_path(path: str) -> None:
    proc = subprocess.run(["systemd-escape", "--path", path], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert escaped_path(path.replace("//", "/")) == proc.stdout.strip()


def test_a_long_path_gets_a_name_that_fits(tmp_path: Path) -> None:
    long = "/" + "/".join(["d" * 60] * 10)
    name = escaped_path(long)
    assert len(name) <= 200 and name != escaped_path(long + "x")
