"""What root reads to decide (slicectl.host.files.trust): only regular files, read without blocking
and within a bound, and, run as root, only those no other user could have written (sshd's
StrictModes). The suite runs as root in CI; the ownership cases chown to `nobody`."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from slicectl.core.errors import ConfigError
from slicectl.host.files.trust import check_trusted, read_bounded, untrusted

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the checks apply to root alone")
NOBODY = 65534


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder as root keeps its files: root's, mode 0755."""
    path = tmp_path / "etc"
    path.mkdir(mode=0o755)
    path.chmod(0o755)
    return path


def message(error: pytest.ExceptionInfo[ConfigError]) -> str:
    return str(error.value)


@ROOT_ONLY
def test_root_s_own_file_is_read(folder: Path) -> None:
    (folder / "tenants.yaml").write_text("version: 1\n")
    (folder / "tenants.yaml").chmod(0o644)
    assert read_bounded(str(folder / "tenants.yaml"), "tenants.yaml", 1 << 20) == b"version: 1\n"


@ROOT_ONLY
@pytest.mark.parametrize(("mode", "said"), [(0o666, "writable by every user (mode 0666)"),
                                            (0o602, "writable by every user (mode 0602)")])
def test_a_file_others_can_write_is_refused(folder: Path, mode: int, said: str) -> None:
    path = folder / "tenants.yaml"
    path.write_text("version: 1\n")
    path.chmod(mode)
    with pytest.raises(ConfigError) as e:
        read_bounded(str(path), "tenants.yaml", 1 << 20)
    assert f"{path}: not used: {path} is {said}, and slicectl runs as root" in message(e)
    assert "chmod go-w" in e.value.hint


@ROOT_ONLY
def test_a_file_another_user_owns_is_refused(folder: Path) -> None:
    path = folder / "tenants.yaml"
    path.write_text("version: 1\n")
    os.chown(path, NOBODY, NOBODY)
    with pytest.raises(ConfigError) as e:
        check_trusted(str(path), "tenants.yaml")
    assert f"is owned by uid {NOBODY}" in message(e) and "not by root" in message(e)


@ROOT_ONLY
def test_group_writable_is_refused_whatever_the_group(folder: Path) -> None:
    """As sshd's StrictModes: a group may hold users other than root."""
    path = folder / "tenants.yaml"
    path.write_text("version: 1\n")
    path.chmod(0o664)
    assert untrusted(str(path)) == f"{path} is writable by its group, gid 0 (mode 0664)"
    os.chown(path, 0, NOBODY)
    assert untrusted(str(path)) == f"{path} is writable by its group, gid {NOBODY} (mode 0664)"


@ROOT_ONLY
def test_a_folder_others_can_write_is_refused(folder: Path) -> None:
    path = folder / "tenants.yaml"
    path.write_text("version: 1\n")
    folder.chmod(0o777)  # anyone could replace tenants.yaml
    assert untrusted(str(path)) == f"its folder {folder} is writable by every user (mode 0777)"
    folder.chmod(0o1777)  # sticky, as /tmp: nobody replaces root's file
    assert untrusted(str(path)) is None
    os.chown(folder, NOBODY, 0)
    folder.chmod(0o755)
    assert untrusted(str(path)) == f"its folder {folder} is owned by uid {NOBODY} (nobody), " \
                                   "not by root"


@ROOT_ONLY
def test_a_link_is_judged_by_where_it_leads(folder: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    (elsewhere / "t.yaml").write_text("version: 1\n")
    os.chown(elsewhere, NOBODY, NOBODY)
    (folder / "tenants.yaml").symlink_to(elsewhere / "t.yaml")
    assert untrusted(str(folder / "tenants.yaml")) == (
        f"its folder {elsewhere} is owned by uid {NOBODY} (nobody), not by root")


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "tenants.yaml"
    os.mkfifo(fifo)
    result: list[BaseException] = []
    worker = threading.Thread(target=lambda: _catch(result, str(fifo)), daemon=True)
    worker.start()
    worker.join(60)  # never waits for a writer: done at once; a hang fails here, not forever
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert isinstance(result[0], ConfigError)
    assert str(result[0]) == f"{fifo}: cannot read: it is a FIFO, not a regular file"


def _catch(into: list[BaseException], path: str) -> None:
    try:
        read_bounded(path, "tenants.yaml", 1 << 20)
    except BaseException as e:  # noqa: BLE001 - handed to the test thread
        into.append(e)


def test_a_device_is_refused_unread(tmp_path: Path) -> None:
    """A link to /dev/zero would be read until memory runs out."""
    (tmp_path / "tenants.yaml").symlink_to("/dev/zero")
    with pytest.raises(ConfigError) as e:
        read_bounded(str(tmp_path / "tenants.yaml"), "tenants.yaml", 1 << 20)
    assert message(e) == f"{tmp_path}/tenants.yaml: cannot read: it is a device, not a " \
                         "regular file"


def test_a_file_past_the_bound_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_bytes(b"#" * ((1 << 20) + 1))
    with pytest.raises(ConfigError) as e:
        read_bounded(str(path), "tenants.yaml", 1 << 20)
    assert message(e) == f"{path}: is larger than 1 MiB; slicectl reads no more than that"
    path.write_bytes(b"#" * (1 << 20))  # the bound itself is read
    assert len(read_bounded(str(path), "tenants.yaml", 1 << 20)) == 1 << 20


def test_other_users_are_not_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as another user, slicectl acts with that user's rights alone."""
    path = tmp_path / "tenants.yaml"
    path.write_text("version: 1\n")
    path.chmod(0o666)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert untrusted(str(path)) is None


@ROOT_ONLY
def test_the_exporter_refuses_a_web_config_or_key_others_may_write(tmp_path: Path) -> None:
    from slicectl.exporter.webconfig import load_web_config

    config = tmp_path / "web.yml"
    config.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n")
    config.chmod(0o664)
    for name in ("server.crt", "server.key"):
        (tmp_path / name).write_text("x")
    (tmp_path / "server.key").chmod(0o606)
    with pytest.raises(ConfigError) as e:
        load_web_config(config)
    text = str(e.value)
    assert f"{config} is writable by its group, gid 0 (mode 0664)" in text
    assert f"{tmp_path}/server.key is writable by every user (mode 0606)" in text
