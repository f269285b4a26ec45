"""Who gets in, at each request to the exporter: basic auth against the users' bcrypt hashes
(`BasicAuth`, `require_auth`) and the TLS handshake in each connection's own thread
(`TlsServer`), from what `webconfig` read of `--web-config FILE`."""

from __future__ import annotations

import hashlib
import hmac
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any


class BasicAuth:
    """Checks an `Authorization: Basic` header against the users' bcrypt hashes.

    bcrypt is slow on purpose (a cost of 10 is tens of milliseconds), and Prometheus sends the
    same header at every scrape, so each answer is kept by a digest of the header, as the
    toolkit keeps them. A user that does not exist is checked against a hash too, so the time
    taken does not tell which users exist.
    """

    MAX_KEPT = 1024

    def __init__(self, users: Mapping[str, bytes]) -> None:
        import bcrypt

        self.users = dict(users)
        self._kept: dict[bytes, bool] = {}
        self._lock = threading.Lock()
        # The hash an unknown user is checked against: made now (not at the first unknown
        # user, whose answer would then take two hashings) at the users' highest cost, so
        # it takes as long as a known user's check.
        cost = max((int(h[4:6]) for h in self.users.values()), default=10)
        self._decoy: bytes = bcrypt.hashpw(b"", bcrypt.gensalt(cost))

    def allows(self, authorization: str) -> bool:
        """Whether the header names a user and its password."""
        import base64
        import binascii

        scheme, _, encoded = authorization.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, colon, password = base64.b64decode(encoded.strip(), validate=True) \
                .decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        if not colon:
            return False
        key = hashlib.sha256(authorization.encode()).digest()
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None:
            return kept
        allowed = self._check(user, password.encode())
        with self._lock:
            if len(self._kept) >= self.MAX_KEPT:
                self._kept.clear()
            self._kept[key] = allowed
        return allowed

    def _check(self, user: str, password: bytes) -> bool:
        import bcrypt

        if len(password) > 72:  # bcrypt reads 72 bytes; the library refuses more
            return False
        # Every user name is looked at (compare_digest: the time does not depend on where
        # the names differ) and one hash checked, the decoy for a name that is no user's.
        hashed = self._decoy
        known = False
        for name, users_hash in self.users.items():
            if hmac.compare_digest(name.encode(), user.encode()):
                hashed, known = users_hash, True
        return bool(bcrypt.checkpw(password, hashed)) and known


App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def require_auth(app: App, auth: BasicAuth) -> App:
    """`app` for the users of `auth` only: anyone else gets 401 and a Basic challenge, as
    the toolkit answers."""

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if auth.allows(environ.get("HTTP_AUTHORIZATION", "")):
            return app(environ, start_response)
        body = b"Unauthorized\n"
        start_response("401 Unauthorized", [
            ("WWW-Authenticate", 'Basic realm="slicectl exporter"'),
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body)))])
        return [body]

    return guarded


class TlsServer:
    """Mixed into a socketserver server: TLS on each accepted connection, its handshake in
    the connection's own thread. (prometheus_client's `start_http_server(certfile=...)` wraps
    the listening socket, so each handshake runs in the accepting thread: one client that
    connects and says nothing holds up every scrape.)"""

    HANDSHAKE_TIMEOUT = 10.0
    tls: ssl.SSLContext | None = None

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()  # type: ignore[misc]
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def finish_request(self, request: socket.socket, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            # (ssl's do_handshake takes the socket's timeout as a deadline for the whole
            # handshake, not for each read: a hello sent a byte at a time is cut short too)
            request.settimeout(self.HANDSHAKE_TIMEOUT)
            try:
                request.do_handshake()
            except OSError:  # no certificate, a wrong one, plain HTTP, silence: closed
                return
            request.settimeout(None)  # the handler sets its own timeouts
        super().finish_request(request, client_address)  # type: ignore[misc]
