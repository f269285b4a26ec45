"""`slicectl exporter`'s server (slicectl.exporter.server): the listen address, tenants from the
manifest, a scrape that never fails because of the host, the app's choice between its own
writer and the library's, and the errors that stop the exporter from starting. Scrapes over
HTTP by curl-like clients, promtool and Prometheus are in test_exporter.py."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from slicectl.core.errors import ExporterError, SamplerError
from slicectl.core.monitor.samples import Snapshot
from slicectl.exporter.server import (
    Exposition,
    SliceCollector,
    manifest_tenants,
    parse_listen,
    send_pieces,
    serve,
    write_textfile,
    wsgi_app,
)
from slicectl.host.files.unitdir import MANIFEST_NAME, Manifest


class Unreadable:
    """A sampler whose cgroup tree cannot be read at all."""

    def sample(self) -> Snapshot:
        raise SamplerError("cannot read /sys/fs/cgroup", "")


class Empty:
    """A sampler of a host without slices."""

    def sample(self) -> Snapshot:
        return Snapshot(time=0.0, cgroups={}, host_cpus=4)


def exposition(sampler: object) -> Exposition:
    return Exposition(SliceCollector(sampler))  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "address"), [
    (":19116", ("0.0.0.0", 19116)), ("127.0.0.1:9000", ("127.0.0.1", 9000)),
    ("[::1]:0", ("::1", 0)), ("localhost:65535", ("localhost", 65535)),
])
def test_parse_listen(text: str, address: tuple[str, int]) -> None:
    assert parse_listen(text) == address


@pytest.mark.parametrize("text", ["19116", "host:", "host:65536", "host:http"])
def test_parse_listen_refuses(text: str) -> None:
    with pytest.raises(ExporterError) as e:
        parse_listen(text)
    assert e.value.message == f"--listen {text!r}: not ADDR:PORT with a port 0-65535"
    assert e.value.hint == "give ADDR:PORT, e.g. 127.0.0.1:19116, :19116 or [::1]:19116"


def test_tenants_are_the_slices_under_slicectls_parent(tmp_path: Path) -> None:
    files = {name: "0" * 64 for name in (
        "tenants.slice", "tenants-db1.slice", "tenants-db1.slice.d/50-slicectl.conf",
        "tenants-web.slice", "app.service.d/50-slicectl.conf", "other-x.slice")}
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(Manifest(files=files).to_json()))
    assert manifest_tenants(tmp_path) == {"tenants-db1.slice": "db1", "tenants-web.slice": "web"}


def test_no_tenants_without_a_readable_manifest(tmp_path: Path) -> None:
    assert manifest_tenants(tmp_path) == {}
    (tmp_path / MANIFEST_NAME).write_text("{not json")
    assert manifest_tenants(tmp_path) == {}


def test_a_tree_that_cannot_be_read_is_counted_not_failed() -> None:
    text = exposition(Unreadable()).render().decode()
    assert 'slicectl_exporter_errors_total{source="cgroupfs"} 1.0' in text
    assert "slicectl_exporter_cgroups 0.0" in text
    assert "process_cpu_seconds_total" in text  # the process' own metrics still there


def call(app: Any, method: str = "GET", query: str = "", **headers: str
         ) -> tuple[str, dict[str, str], bytes]:
    got: dict[str, Any] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]]) -> None:
        got["status"], got["headers"] = status, dict(response_headers)

    environ = {"REQUEST_METHOD": method, "PATH_INFO": "/metrics", "QUERY_STRING": query,
               "wsgi.input": None, **{f"HTTP_{k.upper()}": v for k, v in headers.items()}}
    body: Iterable[bytes] = app(environ, start_response)
    return got["status"], got["headers"], b"".join(body)


def test_the_app_serves_text_openmetrics_and_gzip() -> None:
    exp = exposition(Empty())
    app = wsgi_app(exp)
    status, headers, body = call(app)
    assert status == "200 OK" and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert int(headers["Content-Length"]) == len(body) and b"slicectl_exporter_cgroups 0.0" in body
    _, headers, body = call(app, accept="application/openmetrics-text; version=1.0.0")
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert body.endswith(b"# EOF\n")
    _, headers, body = call(app, accept_encoding="gzip")
    assert headers["Content-Encoding"] == "gzip" and body[:2] == b"\x1f\x8b"


def test_a_gzipped_scrape_is_compressed_a_piece_at_a_time() -> None:
    """Gzip (every Prometheus scrape asks for it) never joins the exposition into one
    buffer: a scrape of 30 MB allocates a few MB, and decompresses to the plain body."""
    import gzip
    import tracemalloc

    filler = [b"# a comment line of filler\n" * 40000 for _ in range(30)]
    exp = exposition(Empty())
    plain = exp.parts

    def parts(om: bool = False) -> list[bytes]:
        return [*filler, *plain(om)]

    exp.parts = parts  # type: ignore[method-assign]
    app = wsgi_app(exp)
    tracemalloc.start()
    try:
        _, headers, body = call(app, accept_encoding="gzip")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert headers["Content-Encoding"] == "gzip" and int(headers["Content-Length"]) == len(body)
    text = gzip.decompress(body)
    assert text.startswith(b"".join(filler)) and b"\nslicectl_exporter_cgroups 0.0\n" in text
    assert peak < sum(map(len, filler)) / 4, peak


def test_filters_and_other_methods_go_to_the_librarys_app() -> None:
    app = wsgi_app(exposition(Empty()))
    _, _, body = call(app, query="name[]=slicectl_exporter_cgroups")
    names = {line.split()[2] for line in body.decode().splitlines() if line.startswith("# TYPE")}
    assert names == {"slicectl_exporter_cgroups"}
    status, _, _ = call(app, method="POST")
    assert status.startswith("405")


def test_a_port_in_use_says_so() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ExporterError) as e:
            serve(exposition(Empty()), f"127.0.0.1:{port}")
    assert e.value.message == f"cannot listen on 127.0.0.1:{port}: Address already in use"
    assert e.value.hint.startswith("another program (another exporter?) listens there")


def test_serve_on_a_free_port_and_stop() -> None:
    stop, port = serve(exposition(Empty()), "127.0.0.1:0")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            reply = b""
            while chunk := conn.recv(65536):
                reply += chunk
        assert reply.startswith(b"HTTP/1.0 200 OK") and b"slicectl_exporter_cgroups" in reply
    finally:
        stop()


def _receive_all(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("iov_max", [1024, 3])
def test_pieces_arrive_whole_in_order_through_a_small_socket_buffer(
        monkeypatch: pytest.MonkeyPatch, iov_max: int) -> None:
    """Every byte of every piece, in order, when the kernel takes a few kilobytes per call
    (partial sends, a piece cut in the middle) and when there are more pieces than one call
    may carry; empty pieces are skipped."""
    import threading

    import slicectl.exporter.server as server

    monkeypatch.setattr(server, "_IOV_MAX", iov_max)
    pieces = [bytes([65 + i % 26]) * (i * 997 % 70000) for i in range(40)] + [b"", b"end"]
    sender, receiver = socket.socketpair()
    sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    sender.settimeout(60)  # a socket with a timeout: each sendmsg sends what fits, and returns
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(_receive_all(receiver)))
    reader.start()
    try:
        send_pieces(sender, pieces)
    finally:
        sender.close()
        reader.join(60)
        receiver.close()
    assert got == [b"".join(pieces)]


def test_a_large_scrape_and_an_error_reply_arrive_whole_over_http() -> None:
    """The server's reply (status line, headers, the exposition's pieces) is sent with one
    scatter-gather call: a body far larger than the socket buffers arrives whole, as long as
    Content-Length says; the library's error replies (405) go out the same way."""
    class Big:
        def __init__(self) -> None:
            self.exposition = exposition(Empty())

        def parts(self, om: bool = False) -> list[bytes]:
            return [b"# a comment line of filler\n" * 40000 for _ in range(30)] + \
                self.exposition.parts(om)

    big = Big()
    big.registry = big.exposition.registry  # type: ignore[attr-defined]
    stop, port = serve(big, "127.0.0.1:0")  # type: ignore[arg-type]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            conn.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            reply = _receive_all(conn)
        head, _, body = reply.partition(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length")))
        assert head.startswith(b"HTTP/1.0 200 OK") and len(body) == length > 30 * 1_000_000
        assert b"\nslicectl_exporter_cgroups 0.0\n" in body
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            conn.sendall(b"DELETE /metrics HTTP/1.0\r\n\r\n")
            assert _receive_all(conn).startswith(b"HTTP/1.0 405")
    finally:
        stop()


def test_textfile_readable_by_node_exporter_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        write_textfile(exposition(Empty()), tmp_path / "slicectl.prom")
    finally:
        os.umask(old)
    path = tmp_path / "slicectl.prom"
    assert path.stat().st_mode & 0o777 == 0o644
    assert "slicectl_exporter_cgroups 0.0" in path.read_text()


def test_textfile_into_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(ExporterError) as e:
        write_textfile(exposition(Empty()), tmp_path / "missing" / "slicectl.prom")
    assert e.value.message.startswith(f"cannot write {tmp_path}/missing/slicectl.prom: ")
    assert e.value.hint == ("the textfile directory must exist and be writable "
                            "(node_exporter --collector.textfile.directory)")


# --- a hostile client: connections that wait, heads sent too slowly ------------------------


def _closed_by_server(conn: socket.socket, within: float, trickle: bytes = b"") -> bool:
    """Whether the server closes `conn` within `within` seconds while the client sends
    `trickle` a byte at a time (a slowloris) or nothing."""
    import time

    end = time.monotonic() + within
    conn.settimeout(0.2)  # the pace of the trickle, and of looking for the close
    sent = 0
    while time.monotonic() < end:
        try:
            if sent < len(trickle):
                conn.send(trickle[sent:sent + 1])
                sent += 1
            if conn.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:  # reset, broken pipe: closed
            return True
    return False


HEAD = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Filler: abcdefghijklmnop\r\n" * 100 + b"\r\n"


@pytest.mark.parametrize("trickle", [b"", HEAD], ids=["silent", "a-byte-at-a-time"])
def test_a_client_too_slow_with_its_request_is_dropped(
        monkeypatch: pytest.MonkeyPatch, trickle: bytes) -> None:
    """The whole head (request line, headers) within REQUEST_DEADLINE, before basic auth is
    asked; a byte now and then does not keep a connection (a thread) alive."""
    import slicectl.exporter.server as server

    monkeypatch.setattr(server, "REQUEST_DEADLINE", 1.0)
    stop, port = serve(exposition(Empty()), "127.0.0.1:0")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            assert _closed_by_server(conn, within=30, trickle=trickle)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:  # still serving
            conn.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            assert _receive_all(conn).startswith(b"HTTP/1.0 200 OK")
    finally:
        stop()


def test_connections_past_the_cap_are_closed_and_hold_no_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """At most MAX_CONNECTIONS connections (threads) at once: one more is closed at once; a
    slot freed serves again."""
    import threading
    import time

    import slicectl.exporter.server as server

    monkeypatch.setattr(server.BoundedServer, "max_connections", 4)
    monkeypatch.setattr(server, "REQUEST_DEADLINE", 600.0)  # closed by the cap alone
    threads = threading.active_count()
    stop, port = serve(exposition(Empty()), "127.0.0.1:0")
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(4)]
    try:
        extra = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(20)]
        for conn in extra:
            assert _closed_by_server(conn, within=30)
            conn.close()
        assert threading.active_count() <= threads + 1 + 4  # the server's, one per slot
        idle.pop().close()
        end = time.monotonic() + 30
        while True:  # the freed slot comes back once its thread sees the close
            with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
                conn.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
                reply = _receive_all(conn)
            if reply or time.monotonic() > end:
                break
        assert reply.startswith(b"HTTP/1.0 200 OK")
    finally:
        for conn in idle:
            conn.close()
        stop()


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_memory_stays_flat_over_a_thousand_scrapes(tmp_path: Path) -> None:
    """1,000 scrapes over HTTP of a tree whose busy slices move before each: what the
    exporter keeps between scrapes (the last scrape's lines) does not grow."""
    from cgtree import MovingTree

    from slicectl.demo.cgtree import write_files
    from slicectl.host.cgroup.sampler import Sampler

    tree = MovingTree(tmp_path / "cg")
    busy = ["system.slice", "user.slice", "tenants.slice/tenants-s0.slice"]
    tree.add("tenants.slice")
    for path in busy:
        tree.add(path)
    for i in range(1, 100):
        tree.add(f"tenants.slice/tenants-s{i}.slice", tasks=0)
    with Sampler(tree.root) as sampler:
        stop, port = serve(exposition(sampler), "127.0.0.1:0")
        try:
            rss = []
            for n in range(1000):
                for path in busy:
                    tree.cgroups[path].usage_usec += 10000
                    write_files(tree.root / path, tree.cgroups[path].files())
                with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
                    conn.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
                    assert b"tenants-s99.slice" in _receive_all(conn)
                if n in (99, 999):
                    rss.append(_rss_mib())
        finally:
            stop()
    assert rss[1] - rss[0] < 4, rss
