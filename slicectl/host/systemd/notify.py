"""sd_notify(3) for a `Type=notify` service: tell systemd that it is ready, what it is doing,
that it is stopping.

The protocol is one datagram of `KEY=value` lines to the AF_UNIX socket systemd names in
$NOTIFY_SOCKET (a path, or an abstract name written with a leading "@"). Outside systemd (no
$NOTIFY_SOCKET) nothing is sent. systemd's own Python binding (python3-systemd) would add a
compiled dependency for this one datagram; the protocol is stable and documented in
sd_notify(3).
"""

from __future__ import annotations

import os
import socket


def notify(**fields: str) -> bool:
    """Send `fields` (READY="1", STATUS="…", STOPPING="1") to systemd; whether it was sent.
    Never raises: a balancer must not stop because systemd did not listen."""
    address = os.environ.get("NOTIFY_SOCKET", "")
    if not address or not fields:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    message = "\n".join(f"{key}={value}" for key, value in fields.items()).encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(message, address)
    except OSError:
        return False
    return True
