"""Whether root may read a file (slicectl.host.trust): owned by root (or slicectl's user) and
writable by no one else, the file and every folder above it, but for sticky folders.

Run by root, the files made here are root's; run by another user (with os.geteuid() made to
say root), they are that user's, which the rule refuses too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slicectl.core.errors import ConfigError
from slicectl.exporter.webconfig import load_web_config
from slicectl.host.trust import check_trusted


def as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)


def test_a_file_others_may_write_is_refused_with_a_hint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    as_root(monkeypatch)
    key = tmp_path / "server.key"
    key.write_text("x")
    key.chmod(0o666)
    with pytest.raises(ConfigError) as e:
        check_trusted(str(key), "the key")
    assert f"{key} is writable by others: the key is not trusted" in e.value.message
    assert e.value.hint.startswith(f"`chmod go-w {key}`")


def test_a_file_another_user_owns_is_refused(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    key = tmp_path / "server.key"
    key.write_text("x")
    if os.geteuid() == 0:
        os.chown(key, 4242, -1)
    owner = key.stat().st_uid
    as_root(monkeypatch)
    with pytest.raises(ConfigError) as e:
        check_trusted(str(key), "the key")
    assert f"{key} is owned by uid {owner}, not root" in e.value.message
    assert e.value.hint.startswith(f"`chown root {key}`")


def test_a_folder_above_that_its_group_may_write_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    as_root(monkeypatch)
    (tmp_path / "etc").mkdir()
    key = tmp_path / "etc" / "server.key"
    key.write_text("x")
    key.chmod(0o600)
    (tmp_path / "etc").chmod(0o775)
    with pytest.raises(ConfigError) as e:
        check_trusted(str(key), "the key")
    if os.stat(key).st_uid == 0:  # (another user's file is refused for its owner first)
        assert f"{tmp_path}/etc is writable by its group" in e.value.message


def test_roots_own_files_and_sticky_folders_pass(tmp_path: Path) -> None:
    """As root, the files root made, also in a folder anyone may write with the sticky bit
    (/tmp); as any other user, nothing is checked."""
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp").chmod(0o1777)
    key = tmp_path / "tmp" / "server.key"
    key.write_text("x")
    key.chmod(0o640)
    check_trusted(str(key), "the key")


def test_the_exporter_refuses_a_web_config_or_key_others_may_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    as_root(monkeypatch)
    config = tmp_path / "web.yml"
    config.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n")
    config.chmod(0o664)
    for name in ("server.crt", "server.key"):
        (tmp_path / name).write_text("x")
    (tmp_path / "server.key").chmod(0o606)
    with pytest.raises(ConfigError) as e:
        load_web_config(config)
    text = str(e.value)
    assert f"{config}: {config} is writable by its group: the web-config file" in text or \
        f"{config}: {config} is owned by uid" in text
    assert f"{config}:3: tls_server_config.key_file: {tmp_path}/server.key is" in text
