"""The private dbus-daemon (slicectl.demo.bus): it listens where it says, comes back on the
same socket after a stop, and refuses clearly what cannot work."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from dbus_fast.aio import MessageBus

from slicectl.core.errors import SlicectlError
from slicectl.demo.bus import MAX_SOCKET_PATH, PrivateBus


async def _hello(address: str) -> str:
    """Connect to the bus at `address`; the unique name it gives."""
    bus = await MessageBus(bus_address=address).connect()
    try:
        return str(bus.unique_name)
    finally:
        bus.disconnect()


def test_it_listens_and_comes_back_on_the_same_socket(scratch: Path) -> None:
    bus = PrivateBus(scratch)
    assert bus.address == f"unix:path={scratch / 'bus'}"
    bus.start()
    try:
        assert asyncio.run(_hello(bus.address)).startswith(":")
        bus.stop()
        with pytest.raises(OSError):  # nobody listens
            asyncio.run(_hello(bus.address))
        bus.start()
        assert asyncio.run(_hello(bus.address)).startswith(":")
    finally:
        bus.stop()
    bus.stop()  # again: nothing to do
    assert (scratch / "bus.log").exists()  # its messages, not on the terminal


def test_a_socket_path_too_long_is_refused_before_starting(scratch: Path) -> None:
    deep = scratch / ("x" * (MAX_SOCKET_PATH - len(str(scratch))))
    deep.mkdir()
    with pytest.raises(SlicectlError, match="too long for a unix socket path"):
        PrivateBus(deep)
    assert list(deep.iterdir()) == []


def test_without_dbus_daemon_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", tempfile.gettempdir() + "/no-such-folder")
    with pytest.raises(SlicectlError, match="dbus-daemon is not installed") as caught:
        PrivateBus(Path(tempfile.gettempdir()))
    assert "apt install dbus-daemon" in caught.value.hint
