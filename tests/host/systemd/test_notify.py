"""sd_notify: the datagrams systemd reads from $NOTIFY_SOCKET, through a real AF_UNIX socket
(a path, and an abstract name as systemd writes it with "@"); nothing sent outside systemd."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from slicectl.host.systemd.notify import notify


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[socket.socket]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(tmp_path / "notify"))
        sock.settimeout(5)
        yield sock


def test_ready_and_status_arrive_as_one_datagram(listener: socket.socket,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", listener.getsockname())
    assert notify(READY="1", STATUS="2 elastic tenants") is True
    assert listener.recv(4096) == b"READY=1\nSTATUS=2 elastic tenants"


def test_an_abstract_socket_is_written_with_an_at_sign(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"slicectl-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert notify(STOPPING="1") is True
        assert sock.recv(4096) == b"STOPPING=1"


def test_outside_systemd_nothing_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert notify(READY="1") is False


def test_a_socket_nobody_listens_on_is_not_an_error(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    assert notify(READY="1") is False
