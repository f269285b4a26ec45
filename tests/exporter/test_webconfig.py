"""`slicectl exporter --web-config`: who may read /metrics (TLS, client certificates, basic
auth), with certificates made by the real `openssl`. A real Prometheus scraping over TLS with
a client certificate and basic auth is in tests/test_exporter.py (external tier)."""

from __future__ import annotations

import base64
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cgtree import MovingTree
from pki import Pki, bcrypt_hash, make_pki

from slicectl.core.errors import ConfigError
from slicectl.exporter.server import Exposition, SliceCollector, serve
from slicectl.exporter.webconfig import ClientAuth, load_web_config
from slicectl.host.cgroup.sampler import Sampler

Serve = Callable[[str], str]  # web-config text -> the /metrics URL


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Serve]:
    """`served(text)`: the exporter over a small tree with `text` as its web config."""
    tree = MovingTree(tmp_path / "cg")
    tree.add("tenants.slice")
    stops = []
    with Sampler(tree.root) as sampler:
        def start(text: str) -> str:
            config = tmp_path / "web.yml"
            config.write_text(text)
            web = load_web_config(config)
            stop, port = serve(Exposition(SliceCollector(sampler)), "127.0.0.1:0", web)
            stops.append(stop)
            return f"{'https' if web.tls else 'http'}://127.0.0.1:{port}/metrics"

        yield start
        for stop in stops:
            stop()


def tls_config(pki: Pki, auth: str = "NoClientCert") -> str:
    lines = [f"  cert_file: {pki.server_cert}", f"  key_file: {pki.server_key}",
             f"  client_auth_type: {auth}"]
    if auth != "NoClientCert":
        lines.append(f"  client_ca_file: {pki.ca}")
    return "tls_server_config:\n" + "\n".join(lines) + "\n"


def client(pki: Pki, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=pki.ca)
    if cert is not None:
        ctx.load_cert_chain(*cert)
    return ctx


def get(url: str, ctx: ssl.SSLContext | None = None, user: str | None = None,
        password: str = "") -> int:
    headers = {}
    if user is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(
            f"{user}:{password}".encode()).decode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30,
                                    context=ctx) as r:
            assert b"slicectl_exporter_cgroups" in r.read()
            return int(r.status)
    except urllib.error.HTTPError as e:
        if e.code == 401:
            assert e.headers["WWW-Authenticate"].startswith("Basic")
        return int(e.code)


# --- who gets in ---------------------------------------------------------------------------


def test_basic_auth_lets_in_the_user_with_its_password_only(served: Serve) -> None:
    url = served(f"basic_auth_users:\n  alice: '{bcrypt_hash('s3cret')}'\n")
    assert get(url) == 401
    assert get(url, user="alice", password="wrong") == 401
    assert get(url, user="mallory", password="s3cret") == 401
    assert get(url, user="alice", password="x" * 100) == 401
    assert get(url, user="alice", password="s3cret") == 200
    assert get(url, user="alice", password="s3cret") == 200  # the kept answer
    assert get(url, user="alice", password="wrong") == 401


def test_tls_with_basic_auth(served: Serve, pki: Pki) -> None:
    url = served(tls_config(pki) + f"basic_auth_users:\n  prom: '{bcrypt_hash('pw')}'\n")
    assert url.startswith("https://")
    assert get(url, client(pki)) == 401
    assert get(url, client(pki), user="prom", password="pw") == 200
    with pytest.raises(OSError):  # plain HTTP to a TLS port
        get(url.replace("https://", "http://"))


def test_required_client_certificate(served: Serve, pki: Pki, tmp_path: Path) -> None:
    url = served(tls_config(pki, ClientAuth.REQUIRE_AND_VERIFY))
    assert get(url, client(pki, (pki.client_cert, pki.client_key))) == 200
    with pytest.raises(OSError):  # no certificate: the handshake fails
        get(url, client(pki))
    other = make_pki(tmp_path / "other")  # a certificate from another CA
    with pytest.raises(OSError):
        get(url, client(pki, (other.client_cert, other.client_key)))
    assert get(url, client(pki, (pki.client_cert, pki.client_key))) == 200  # still serving


def test_client_certificate_if_given(served: Serve, pki: Pki, tmp_path: Path) -> None:
    url = served(tls_config(pki, ClientAuth.VERIFY_IF_GIVEN))
    assert get(url, client(pki)) == 200
    assert get(url, client(pki, (pki.client_cert, pki.client_key))) == 200
    other = make_pki(tmp_path / "other")
    with pytest.raises(OSError):
        get(url, client(pki, (other.client_cert, other.client_key)))


def test_a_silent_client_does_not_hold_up_the_scrapes(served: Serve, pki: Pki) -> None:
    """Each handshake runs in its connection's thread, not in the one that accepts."""
    url = served(tls_config(pki))
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port)):  # connects, never says hello
        assert get(url, client(pki)) == 200


# --- the file's problems: located, all at once, never a traceback --------------------------


@pytest.mark.parametrize("text, message", [
    ("tls_server_config:\n  cert_file: CERT\n", "tls_server_config.key_file: missing"),
    ("tls_server_config:\n  cert_file: CERT\n  key_file: KEY\n  client_auth_type: "
     "RequireAndVerifyClientCert\n", "needs client_ca_file"),
    ("tls_server_config:\n  cert_file: CERT\n  key_file: KEY\n  client_ca_file: CA\n",
     "without a client_auth_type that verifies"),
    ("tls_server_config:\n  cert_file: CERT\n  key_file: KEY\n  client_auth_type: Sometimes\n",
     "'Sometimes' is not a client_auth_type"),
    ("tls_server_config:\n  cert_file: CERT\n  key_file: KEY\n  client_auth_type: "
     "RequireAnyClientCert\n", "RequireAnyClientCert is not supported by slicectl"),
    ("tls_server_config:\n  cert_file: CERT\n  key_file: KEY\n  min_version: TLS14\n",
     "'TLS14' is not a TLS version"),
    ("tls_server_config:\n  cert_file: CERT\n  key_file: KEY\n  cipher_suites: [X]\n",
     "cipher_suites: not supported by slicectl"),
    ("tls_server_config:\n  cert_file: nosuch.crt\n  key_file: KEY\n", "nosuch.crt: no such file"),
    ("tls_server_config:\n  cert_file: KEY\n  key_file: KEY\n",
     "are not a certificate and its private key"),
    ("tls_server_config:\n  cert_file: CERT\n  key_file: CLIENTKEY\n",
     "key values mismatch"),
    ("tls_server_config:\n  cert_file: CERT\n  key_file: KEY\n  min_version: TLS13\n"
     "  max_version: TLS12\n", "min_version: TLS13 is above max_version TLS12"),
    ("tls_server_config:\n  cert_file: CERT\n  key_file: KEY\n  max_version: TLS11\n",
     "min_version: TLS12 (the default) is above max_version TLS11"),
    ("tls_server_config:\n  cert_file: CERT\n  key_file: KEY\n  min_version: TLS10\n"
     "  max_version: TLS11\n", "max_version: no client can complete a TLS handshake"),
    ("tls_server_config:\n  cert_file: " + "c" * 5000 + ".crt\n  key_file: KEY\n",
     ".crt: cannot read: File name too long"),
    ("tls_server_config:\n  cert_file: /\n  key_file: KEY\n", "/: not a regular file"),
    ('tls_server_config:\n  cert_file: "a\\0b"\n  key_file: KEY\n', "cannot hold a NUL byte"),
    ("basic_auth_users:\n  alice: hunter2\n", "basic_auth_users.alice: not a user name and a "
                                              "bcrypt hash"),
    ("basic_auth_user:\n  alice: x\n", "basic_auth_user: unknown key"),
    ("- a list\n", "must be a mapping"),
    ("tls_server_config: [\n", ""),
])
def test_problems_are_located(tmp_path: Path, pki: Pki, text: str, message: str) -> None:
    config = tmp_path / "web.yml"
    config.write_text(text.replace("CERT", str(pki.server_cert))
                      .replace("CLIENTKEY", str(pki.client_key))
                      .replace("KEY", str(pki.server_key)).replace("CA", str(pki.ca)))
    with pytest.raises(ConfigError) as e:
        load_web_config(config)
    assert str(e.value).startswith(f"{config}:"), str(e.value)
    assert message in str(e.value)
    assert all(p.line > 0 for p in e.value.problems), e.value.problems


def test_every_problem_at_once_and_relative_names_from_the_files_folder(
        tmp_path: Path, pki: Pki) -> None:
    config = pki.ca.parent / "web.yml"
    config.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                      "  min_version: TLS9\nbasic_auth_users:\n  bob: plain\n")
    with pytest.raises(ConfigError) as e:
        load_web_config(config)
    assert [(p.line, p.key) for p in e.value.problems] == [
        (4, "tls_server_config.min_version"), (6, "basic_auth_users.bob")]
    config.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n")
    tls = load_web_config(config).tls
    assert tls is not None and tls.cert_file == pki.server_cert


def test_command_reports_the_file_with_a_hint_never_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / "web.yml"
    config.write_text("basic_auth_users:\n  alice: hunter2\n")
    slicectl = [sys.executable, "-m", "slicectl", "exporter", "--cgroup-root", str(tmp_path),
                "--listen", "127.0.0.1:0"]
    proc = subprocess.run([*slicectl, "--web-config", str(config)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"error: {config}:2: basic_auth_users.alice:" in proc.stderr, proc.stderr
    assert "hint: " in proc.stderr and "bcrypt" in proc.stderr
    proc = subprocess.run([*slicectl, "--web-config", str(tmp_path / "none.yml")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "cannot read" in proc.stderr, proc.stderr
    proc = subprocess.run([*slicectl[:-2], "--textfile", str(tmp_path / "x.prom"),
                           "--web-config", str(config)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "not --textfile" in proc.stderr, proc.stderr


def test_a_long_web_config_name_is_located_never_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / ("w" * 5000 + ".yml")
    with pytest.raises(ConfigError) as e:
        load_web_config(config)
    assert "cannot read: File name too long" in str(e.value)


def test_a_fifo_as_web_config_is_refused_not_waited_on(tmp_path: Path) -> None:
    import os
    import threading

    config = tmp_path / "web.yml"
    os.mkfifo(config)
    got: list[Exception] = []

    def load() -> None:
        try:
            load_web_config(config)
        except ConfigError as e:
            got.append(e)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(60)
    assert got and f"{config}: cannot read: not a regular file" in str(got[0])


# --- TLS: a handshake cut short by its deadline --------------------------------------------


def test_a_client_sending_its_hello_a_byte_at_a_time_is_dropped(
        served: Serve, pki: Pki, monkeypatch: pytest.MonkeyPatch) -> None:
    """The handshake's deadline holds for the whole handshake, not each read."""
    import time

    from slicectl.exporter.access import TlsServer

    monkeypatch.setattr(TlsServer, "HANDSHAKE_TIMEOUT", 1.0)
    url = served(tls_config(pki))
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    wire = ssl.MemoryBIO()
    with pytest.raises(ssl.SSLWantReadError):  # a real client's hello, to send a byte at a time
        client(pki).wrap_bio(ssl.MemoryBIO(), wire, server_hostname="127.0.0.1").do_handshake()
    hello = wire.read()
    closed = False
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.settimeout(0.2)  # the trickle's pace
        end = time.monotonic() + 30
        for byte in hello:
            if time.monotonic() > end:
                break
            try:
                conn.send(bytes([byte]))
                closed = conn.recv(1024) == b""
            except TimeoutError:
                continue
            except OSError:
                closed = True
            if closed:
                break
    assert closed
    assert get(url, client(pki)) == 200
