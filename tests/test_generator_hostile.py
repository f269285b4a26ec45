"""The generator (root, at every boot and daemon-reload) against a broken or hostile host: it
never crashes, never blocks, never acts on what another user could have written, never follows
a link it finds, and whatever happens while placing (a crash by a signal included) the last
good placement is written whole and the reason is in the kernel log."""

from __future__ import annotations

import faulthandler
import os
import signal
import threading
from pathlib import Path

import pytest
from test_generator import SYSFS, files_of, record, run_generator, tenants_file

from slicectl import generator
from slicectl.host.files import placement_record
from slicectl.host.files.owned import write_tree

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the trust checks apply to root")
FALLBACK = "wrote the last good placement instead"
HOST = SYSFS / "xeon-2s-smt"  # web-batch, the example host: 2 nodes of 16 CPUs


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A host in generator mode: tenants.yaml (root's, 0644 in a 0755 folder) and its
    recorded placement; returns tenants.yaml and the record's files."""
    tenants = tenants_file(tmp_path)
    for folder in (tenants.parent.parent, tenants.parent):
        folder.chmod(0o755)
    tenants.chmod(0o644)
    good, _ = run_generator(tmp_path / "first", tenants, HOST)
    record(tenants, good, HOST)
    return tenants, files_of(good)


def fell_back(tmp_path: Path, tenants: Path, expected: dict[str, bytes]) -> str:
    """Run the generator; assert it wrote the record whole; returns what it logged."""
    out, logged = run_generator(tmp_path / "again", tenants, HOST)
    written = files_of(out)
    error = written.pop(".slicectl-generator-error").decode()
    assert written == expected
    assert logged.rstrip().endswith(FALLBACK) and error.strip() in logged
    return logged


def test_block_nesting_tens_of_thousands_deep_falls_back(
        tmp_path: Path, recorded: tuple[Path, dict[str, bytes]]) -> None:
    """Crashed libyaml's composer (SIGSEGV): no units at all, nothing logged."""
    tenants, expected = recorded
    tenants.write_text("version: 1\ntenants:\n  a:\n    " + "- " * 40_000 + "x\n")
    logged = fell_back(tmp_path, tenants, expected)
    assert f"{tenants}:4: nested more than 200 levels deep" in logged


@pytest.mark.parametrize("text", ["[" * 100_000, "a:\n" + "".join(
    " " * i + "- \n" for i in range(0, 600, 2)), "version: 1\n" + "#" * (17 << 20)])
def test_validate_refuses_what_would_crash_or_exhaust_it(tmp_path: Path, text: str) -> None:
    """In a process of its own: a crash is a signal, not an exception."""
    from test_cli import slicectl_run

    path = tmp_path / "tenants.yaml"
    path.write_text(text)
    proc = slicectl_run("validate", str(path))
    assert proc.returncode == 1 and proc.stderr.startswith(f"error: {path}:"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_crash_while_placing_still_writes_the_record(
        tmp_path: Path, recorded: tuple[Path, dict[str, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Placing runs in a child process: a signal there (a C extension's bug, memory running
    out) leaves this process to write the fallback and log."""
    tenants, expected = recorded
    tenants.write_text(tenants.read_text().replace("cpu_weight: 400", "cpu_weight: 300"))
    def crash(*_: object) -> None:
        faulthandler.disable()  # pytest's, inherited: it would print the child's stack
        os.kill(os.getpid(), signal.SIGSEGV)

    monkeypatch.setattr(generator, "_placed", crash)
    kmsg = tmp_path / "kmsg"
    monkeypatch.setenv("SLICECTL_KMSG", str(kmsg))
    out = tmp_path / "out"
    assert generator.generate_into(str(out), str(tenants), str(HOST)) == "fallback"
    written = files_of(out)
    written.pop(".slicectl-generator-error")
    assert written == expected
    assert "internal error: placing the tenants died of SIGSEGV; " + FALLBACK in \
        kmsg.read_text()


def test_placing_that_takes_too_long_is_stopped(
        tmp_path: Path, recorded: tuple[Path, dict[str, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    tenants, expected = recorded
    tenants.write_text(tenants.read_text().replace("cpu_weight: 400", "cpu_weight: 300"))
    started = tmp_path / "started"
    def hang(*_: object) -> None:
        started.touch()
        threading.Event().wait()

    monkeypatch.setattr(generator, "_placed", hang)
    monkeypatch.setenv("SLICECTL_GENERATOR_TIMEOUT", "1")
    monkeypatch.setenv("SLICECTL_KMSG", str(tmp_path / "kmsg"))
    out = tmp_path / "out"
    assert generator.generate_into(str(out), str(tenants), str(HOST)) == "fallback"
    assert started.exists()  # the child ran, and was stopped
    assert "placing the tenants took longer than 1 s; stopped; " + FALLBACK in \
        (tmp_path / "kmsg").read_text()
    assert {k: v for k, v in files_of(out).items() if not k.startswith(".slicectl-gen")} == \
        expected


def test_a_fifo_as_tenants_yaml_does_not_block(
        tmp_path: Path, recorded: tuple[Path, dict[str, bytes]]) -> None:
    tenants, expected = recorded
    tenants.unlink()
    os.mkfifo(tenants)
    logged = fell_back(tmp_path, tenants, expected)  # run_generator's own bound: 120 s
    assert f"{tenants}: cannot read: it is a FIFO, not a regular file" in logged


def test_a_link_to_a_device_is_not_read(tmp_path: Path,
                                        recorded: tuple[Path, dict[str, bytes]]) -> None:
    tenants, expected = recorded
    tenants.unlink()
    tenants.symlink_to("/dev/zero")
    assert "cannot read: it is a device, not a regular file" in \
        fell_back(tmp_path, tenants, expected)


@ROOT_ONLY
@pytest.mark.parametrize("who", ["file", "owner"])
def test_a_tenants_yaml_another_user_could_write_is_not_used(
        tmp_path: Path, recorded: tuple[Path, dict[str, bytes]], who: str) -> None:
    tenants, expected = recorded
    tenants.write_text(tenants.read_text().replace("cpu_weight: 400", "cpu_weight: 1"))
    if who == "file":
        tenants.chmod(0o666)
    else:
        os.chown(tenants, 65534, 65534)
    logged = fell_back(tmp_path, tenants, expected)
    assert "not used: " in logged and "slicectl runs as root" in logged


@ROOT_ONLY
def test_etc_slicectl_writable_by_others_is_not_used_at_all(
        tmp_path: Path, recorded: tuple[Path, dict[str, bytes]]) -> None:
    """Anyone could have replaced tenants.yaml or the record under it: neither is used."""
    tenants, _ = recorded
    tenants.parent.chmod(0o777)
    out, logged = run_generator(tmp_path / "again", tenants, HOST)
    assert f"its folder {tenants.parent} is writable by every user (mode 0777)" in logged
    assert "no placement recorded: no tenant units written" in logged
    assert sorted(files_of(out)) == [".slicectl-generator-error"]


@ROOT_ONLY
def test_a_record_another_user_could_write_is_not_copied(
        tmp_path: Path, recorded: tuple[Path, dict[str, bytes]]) -> None:
    tenants, _ = recorded
    folder, _ = placement_record.recorded(str(tenants)) or ("", b"")
    os.chmod(folder, 0o777)
    out, logged = run_generator(tmp_path / "again", tenants, HOST)
    assert f"the recorded placement in {folder}: not used: {folder} is writable by every " \
           "user (mode 0777); planning without it" in logged
    assert "tenants-web.slice" in files_of(out)  # planned from tenants.yaml


@pytest.mark.parametrize("tamper", ["edit", "add", "remove", "link"])
def test_a_record_unlike_its_manifest_is_not_copied(
        tmp_path: Path, recorded: tuple[Path, dict[str, bytes]], tamper: str) -> None:
    """Any unit, any drop-in, the target of any link was copied byte for byte."""
    tenants, expected = recorded
    folder = Path((placement_record.recorded(str(tenants)) or ("", b""))[0])
    unit = folder / "tenants-web.slice.d" / "50-slicectl.conf"
    if tamper == "edit":
        unit.write_text("[Slice]\nAllowedCPUs=0-63\n")
    elif tamper == "add":
        (folder / "evil.service").write_text("[Service]\nExecStart=/bin/sh -c id\n")
    elif tamper == "remove":
        unit.unlink()
    else:
        unit.unlink()
        unit.symlink_to("/etc/shadow")
    tenants.write_text("version: 1\ntenants:\n  Bad-Name: {cpus: 2}\n")  # broken: fall back
    out, logged = run_generator(tmp_path / "again", tenants, HOST)
    assert f"the recorded placement in {folder}: not used: " in logged
    assert "no placement recorded: no tenant units written" in logged
    assert sorted(files_of(out)) == [".slicectl-generator-error"]


def test_a_record_whose_current_leads_elsewhere_is_not_used(
        tmp_path: Path, recorded: tuple[Path, dict[str, bytes]]) -> None:
    tenants, _ = recorded
    base = Path(placement_record.record_dir(str(tenants)))
    elsewhere = tmp_path / "elsewhere"
    os.rename((placement_record.recorded(str(tenants)) or ("", b""))[0], elsewhere)
    (base / "current").unlink()
    (base / "current").symlink_to(elsewhere)
    assert placement_record.recorded(str(tenants)) is None


def test_links_in_the_output_folder_are_replaced_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.slice").symlink_to(target / "a.slice")  # a link where a file goes
    (out / "b.service.d").symlink_to(target)  # a link where a folder goes
    (out / f"c.slice.tmp{os.getpid()}").symlink_to(target / "c")  # a temporary's name, taken
    write_tree(str(out), {"a.slice": b"[Slice]\n", "c.slice": b"[Slice]\n",
                                            "b.service.d/50-slicectl.conf": b"[Service]\n"},
                                 sync=False)
    assert list(target.iterdir()) == []
    assert not any(p.is_symlink() for p in out.rglob("*"))
    assert files_of(out) == {"a.slice": b"[Slice]\n", "c.slice": b"[Slice]\n",
                             "b.service.d/50-slicectl.conf": b"[Service]\n"}


def test_files_and_folders_have_their_modes_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        write_tree(str(tmp_path / "out"),
                                     {"x.service.d/50-slicectl.conf": b"[Service]\n"})
    finally:
        os.umask(old)
    assert (tmp_path / "out" / "x.service.d").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "out" / "x.service.d" / "50-slicectl.conf").stat().st_mode & 0o777 == \
        0o644


def test_keys_this_host_s_systemd_cannot_take_are_refused(
        tmp_path: Path, recorded: tuple[Path, dict[str, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """As plan and apply refuse them: the generator wrote MemoryZSwapMax= on systemd 252."""
    from slicectl.host.systemd import hostinfo

    tenants, expected = recorded
    tenants.write_text(tenants.read_text().replace("cpu_weight: 400",
                                                   "cpu_weight: 400\n    memory_zswap_max: 1G"))
    monkeypatch.setattr(hostinfo, "systemd_version", lambda *_: 252)
    monkeypatch.setenv("SLICECTL_KMSG", str(tmp_path / "kmsg"))
    out = tmp_path / "out"
    assert generator.generate_into(str(out), str(tenants), str(HOST)) == "fallback"
    logged = (tmp_path / "kmsg").read_text()
    assert "tenants.web.memory_zswap_max: needs systemd 253 or later" in logged
    assert "but the target runs systemd 252 (systemd on this host)" in logged
    assert b"MemoryZSwapMax" not in b"".join(files_of(out).values())
