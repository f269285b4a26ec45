"""A private `dbus-daemon` in a folder: what the fake systemd serves on, for the demo and the
tests (no system bus, no root)."""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from slicectl.core.errors import SlicectlError

_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""
# sun_path holds 108 bytes with its terminating NUL.
MAX_SOCKET_PATH = 107


class PrivateBus:
    """A dbus-daemon listening on FOLDER/bus (`address`); `start` it, `stop` it, start it again
    on the same socket (as the system bus comes back after `systemctl restart dbus`)."""

    def __init__(self, folder: Path, preexec: Callable[[], None] | None = None) -> None:
        """Check and configure it; `preexec` runs in its process before dbus-daemon does
        (subprocess's preexec_fn: start the bus before any thread)."""
        daemon = shutil.which("dbus-daemon")
        if daemon is None:
            raise SlicectlError("dbus-daemon is not installed: the fake systemd needs a "
                                "private bus", "install it: apt install dbus-daemon (Debian, "
                                "Ubuntu), dnf install dbus-daemon (Fedora, RHEL)")
        self.socket = folder / "bus"
        if len(str(self.socket).encode()) > MAX_SOCKET_PATH:
            raise SlicectlError(f"{self.socket}: too long for a unix socket path "
                                f"({MAX_SOCKET_PATH} bytes at most)", "use a shorter folder")
        self.binary = daemon
        self.folder = folder
        self.config = folder / "bus.conf"
        self.config.write_text(_CONFIG.format(socket=self.socket))
        self.address = f"unix:path={self.socket}"
        self.preexec = preexec
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        """Start the daemon; return once it listens."""
        # Its messages (a warning about fd limits, say) into FOLDER/bus.log, not the screen.
        # Its own process group, so that a Ctrl-C typed at the demo's shell or view does not
        # reach it. Not its own session: that is also a scheduling group of its own (autogroup,
        # sched(7)), and so started, on a busy machine, it dropped a fake systemd answering
        # hundreds of calls at once from the bus (tests/host/systemd/test_systemd.py).
        with open(self.folder / "bus.log", "ab") as log:
            self.process = subprocess.Popen(
                [self.binary, f"--config-file={self.config}", "--nofork", "--print-address=1"],
                stdout=subprocess.PIPE, stderr=log, text=True, process_group=0,
                preexec_fn=self.preexec)
        assert self.process.stdout is not None
        if not self.process.stdout.readline().strip():  # printed once it listens
            status = self.process.wait(5)
            raise SlicectlError(f"dbus-daemon did not start (exit status {status})",
                                f"see {self.folder / 'bus.log'}")

    def stop(self) -> None:
        """Stop the daemon and wait for it."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()
