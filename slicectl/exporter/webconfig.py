"""Who may read the exporter: `--web-config FILE`, in the format of Prometheus' exporter-toolkit
(docs/web-configuration.md of github.com/prometheus/exporter-toolkit), which node_exporter and
Prometheus' other exporters read with `--web.config.file`.

    tls_server_config:
      cert_file: server.crt            # both, or no tls_server_config at all
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert
      client_ca_file: clients-ca.crt
      min_version: TLS12               # the toolkit's default
    basic_auth_users:
      alice: $2y$10$...                # bcrypt hashes (`htpasswd -nBC 10 alice`)

As in the toolkit, a relative file name is relative to the web-config file's folder, an
unknown key is an error, and client_ca_file needs a client_auth_type that verifies. Keys of
the format slicectl does not implement (inline `cert`/`key`, cipher suites, curves,
`client_allowed_sans`, `http_server_config`, `rate_limit`) are refused by name rather than
ignored, and so are `RequestClientCert` and `RequireAnyClientCert`: Python's ssl module
verifies every client certificate it asks for, so it cannot accept one unverified.

Settings no client could complete a handshake with (min_version above max_version, versions
OpenSSL has no cipher for, a key that is not the certificate's) are refused at start: the
server's context is built and shaken hands with in memory. Run as root, the file and the PEM
files it names must be root's and writable by no one else (`slicectl.host.files.trust`).

Every problem of the file is reported at once, located by line (`ConfigError`). The file is
read when the exporter starts, unlike the toolkit, which reads it at every request: a new
certificate takes a restart.
"""

from __future__ import annotations

import errno
import re
import ssl
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from slicectl.core.errors import ConfigError, Problem, shown


class ClientAuth(StrEnum):
    """The toolkit's client_auth_type values slicectl implements, and what ssl makes of them."""

    NONE = "NoClientCert"
    VERIFY_IF_GIVEN = "VerifyClientCertIfGiven"
    REQUIRE_AND_VERIFY = "RequireAndVerifyClientCert"

    @property
    def verify_mode(self) -> ssl.VerifyMode:
        return {ClientAuth.NONE: ssl.CERT_NONE, ClientAuth.VERIFY_IF_GIVEN: ssl.CERT_OPTIONAL,
                ClientAuth.REQUIRE_AND_VERIFY: ssl.CERT_REQUIRED}[self]


CLIENT_AUTHS = {a.value for a in ClientAuth}
TLS_VERSIONS = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
                "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
TLS_KEYS = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version",
            "max_version"}
TOP_KEYS = {"tls_server_config", "basic_auth_users"}
# In the toolkit's format, not implemented here: refused by name.
NOT_IMPLEMENTED = {"cert", "key", "client_allowed_sans", "cipher_suites", "curve_preferences",
                   "prefer_server_cipher_suites", "http_server_config", "rate_limit"}
NOT_VERIFIED = {"RequestClientCert", "RequireAnyClientCert", "RequireClientCert"}
# bcrypt's modular crypt format: $2a$, $2b$ or $2y$, a two-digit cost, 53 characters of salt
# and hash in bcrypt's base64.
BCRYPT = re.compile(r"\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}")


@dataclass(frozen=True)
class TlsConfig:
    """tls_server_config, its file names made absolute."""

    cert_file: Path
    key_file: Path
    client_auth: ClientAuth = ClientAuth.NONE
    client_ca_file: Path | None = None
    min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    max_version: ssl.TLSVersion | None = None

    def context(self) -> ssl.SSLContext:
        """The server's SSL context; raises OSError/ssl.SSLError naming no file."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = self.min_version
        if self.max_version is not None:
            ctx.maximum_version = self.max_version
        ctx.load_cert_chain(self.cert_file, self.key_file)
        if self.client_ca_file is not None:
            ctx.load_verify_locations(cafile=self.client_ca_file)
        ctx.verify_mode = self.client_auth.verify_mode
        return ctx


@dataclass(frozen=True)
class WebConfig:
    """What --web-config asks: TLS (or plain HTTP) and the users basic auth lets in."""

    tls: TlsConfig | None = None
    users: Mapping[str, bytes] = field(default_factory=dict)  # user -> bcrypt hash


class _Checker:
    """Collects the problems of one file, each located by its key's line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problems: list[Problem] = []

    def add(self, node: Any, key: str, where: str, message: str, hint: str = "") -> None:
        line = 0
        lc = getattr(node, "lc", None)
        if lc is not None:
            line = (lc.key(key)[0] if key in lc.data else lc.line) + 1
        self.problems.append(Problem(shown(self.path), line, where, message, hint))

    def mapping(self, node: Any, parent: Any, key: str) -> dict[Any, Any]:
        if node is None:
            return {}
        if not isinstance(node, dict):
            self.add(parent, key, key, "must be a mapping")
            return {}
        return node

    def keys(self, node: dict[Any, Any], allowed: set[str], where: str) -> None:
        for key in node:
            prefix = f"{where}." if where else ""
            if key in NOT_IMPLEMENTED:
                self.add(node, key, f"{prefix}{key}", "not supported by slicectl",
                         "remove it; slicectl implements " + ", ".join(sorted(allowed)))
            elif key not in allowed:
                self.add(node, key, f"{prefix}{key}", "unknown key",
                         "known keys: " + ", ".join(sorted(allowed)))

    def text(self, node: dict[Any, Any], key: str, where: str) -> str | None:
        value = node.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            self.add(node, key, f"{where}.{key}", "must be a non-empty string")
            return None
        return value

    def file(self, node: dict[Any, Any], key: str) -> Path | None:
        name = self.text(node, key, "tls_server_config")
        if name is None:
            return None
        path = self.path.parent / name  # the toolkit's rule: relative to the config file
        where = f"tls_server_config.{key}"
        try:
            regular = stat.S_ISREG(path.stat().st_mode)
        except OSError as e:  # a name too long (ENAMETOOLONG), a folder we may not enter
            reason = "no such file" if e.errno == errno.ENOENT else f"cannot read: {e.strerror}"
            self.add(node, key, where, f"{shown(path)}: {reason}")
            return None
        except ValueError:  # a NUL in the name ("\0" in a quoted YAML string)
            self.add(node, key, where, f"{shown(path)}: a file name cannot hold a NUL byte")
            return None
        if not regular:
            self.add(node, key, where, f"{shown(path)}: not a regular file",
                     "a PEM file (certificate, key or CA certificates)")
            return None
        return path if self.trusted(node, key, where, path) else None

    def trusted(self, node: Any, key: str, where: str, path: Path) -> bool:
        """Whether root may read `path` (`check_trusted`); a problem at `key` if not."""
        from slicectl.host.files.trust import check_trusted

        try:
            check_trusted(str(path), shown(path) if key else "the web-config file")
        except ConfigError as e:
            for problem in e.problems:
                self.add(node, key, where, problem.message, problem.hint)
            return False
        return True


def _tls(check: _Checker, tls: dict[Any, Any]) -> TlsConfig | None:
    where = "tls_server_config"
    check.keys(tls, TLS_KEYS, where)
    cert, key, ca = (check.file(tls, k) for k in ("cert_file", "key_file", "client_ca_file"))
    for name in ("cert_file", "key_file"):
        if tls.get(name) is None:
            check.add(tls, "", f"{where}.{name}", "missing",
                      "give both cert_file and key_file, or no tls_server_config")
    auth_name = check.text(tls, "client_auth_type", where) or ClientAuth.NONE.value
    auth = ClientAuth.NONE
    if auth_name in CLIENT_AUTHS:
        auth = ClientAuth(auth_name)
    elif auth_name in NOT_VERIFIED:
        check.add(tls, "client_auth_type", f"{where}.client_auth_type",
                  f"{auth_name} is not supported by slicectl (Python's ssl module verifies "
                  "every client certificate it asks for)",
                  "use VerifyClientCertIfGiven or RequireAndVerifyClientCert")
    else:
        check.add(tls, "client_auth_type", f"{where}.client_auth_type",
                  f"{auth_name!r} is not a client_auth_type",
                  "one of " + ", ".join(ClientAuth))
    if auth is not ClientAuth.NONE and tls.get("client_ca_file") is None:
        check.add(tls, "client_auth_type", f"{where}.client_ca_file",
                  f"{auth} needs client_ca_file", "the CA that signs the clients' certificates")
    if auth is ClientAuth.NONE and tls.get("client_ca_file") is not None \
            and auth_name in CLIENT_AUTHS:
        check.add(tls, "client_ca_file", f"{where}.client_ca_file",
                  "client_ca_file without a client_auth_type that verifies",
                  "add client_auth_type: RequireAndVerifyClientCert")
    versions = {}
    for name in ("min_version", "max_version"):
        version = check.text(tls, name, where)
        if version is not None and version not in TLS_VERSIONS:
            check.add(tls, name, f"{where}.{name}", f"{version!r} is not a TLS version",
                      "one of " + ", ".join(TLS_VERSIONS))
        elif version is not None:
            versions[name] = TLS_VERSIONS[version]
    if cert is None or key is None or (auth is not ClientAuth.NONE and ca is None):
        return None
    low, high = versions.get("min_version", ssl.TLSVersion.TLSv1_2), versions.get("max_version")
    if high is not None and low > high:
        check.add(tls, "min_version", f"{where}.min_version",
                  f"{tls.get('min_version', 'TLS12 (the default)')} is above max_version "
                  f"{tls['max_version']}: no TLS version is left",
                  "lower min_version or raise max_version (clients use TLS12 and TLS13)")
        return None
    config = TlsConfig(cert, key, auth, ca, low, high)
    return config if _loads(check, tls, config) and _handshakes(check, tls, config) else None


def _loads(check: _Checker, tls: dict[Any, Any], config: TlsConfig) -> bool:
    """Whether ssl loads the PEM files, each problem at the key naming the file."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ok = True
    try:
        ctx.load_cert_chain(config.cert_file, config.key_file)
    except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
        check.add(tls, "cert_file", "tls_server_config.cert_file",
                  f"{shown(config.cert_file)} and key_file {shown(config.key_file)} are not "
                  f"a certificate and its private key ({_reason(e)})",
                  "PEM files: the certificate (then its chain) and its unencrypted key")
        ok = False
    if config.client_ca_file is not None:
        try:
            ctx.load_verify_locations(cafile=config.client_ca_file)
        except (OSError, ValueError) as e:
            check.add(tls, "client_ca_file", "tls_server_config.client_ca_file",
                      f"{shown(config.client_ca_file)} holds no CA certificate ({_reason(e)})",
                      "a PEM file of the CA certificates that sign the clients'")
            ok = False
    return ok


def _handshakes(check: _Checker, tls: dict[Any, Any], config: TlsConfig) -> bool:
    """Whether a client (any version, any cipher OpenSSL has) completes a handshake with the
    server's context, in memory: settings that load but leave no version or cipher both
    sides could use (max_version TLS11 where OpenSSL allows TLS 1.1 no cipher) are refused
    at start, not found by every scrape failing."""
    try:
        server = config.context()
        server.verify_mode = ssl.CERT_NONE  # the probe has no client certificate to show
        client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        client.check_hostname = False
        client.verify_mode = ssl.CERT_NONE
        client.set_ciphers("ALL:@SECLEVEL=0")
        client.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        client.maximum_version = ssl.TLSVersion.MAXIMUM_SUPPORTED
        _in_memory_handshake(server, client)
        return True
    except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
        key = next((k for k in ("max_version", "min_version") if k in tls), "cert_file")
        check.add(tls, key, f"tls_server_config.{key}",
                  f"no client can complete a TLS handshake with these settings ({_reason(e)})",
                  "allow TLS12 or TLS13 (min_version, max_version), which every client and "
                  "OpenSSL's defaults accept, with a key type OpenSSL's security level allows")
        return False


def _in_memory_handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> None:
    """A handshake between `server` and `client` over memory buffers; raises ssl.SSLError
    when it fails."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    ends = [client.wrap_bio(to_client, to_server), server.wrap_bio(to_server, to_client,
                                                                  server_side=True)]
    done = [False, False]
    for _ in range(8):  # TLS 1.2 takes two round trips, TLS 1.3 one
        for i, end in enumerate(ends):
            if not done[i]:
                try:
                    end.do_handshake()
                    done[i] = True
                except ssl.SSLWantReadError:
                    pass
        if all(done):
            return
    raise ssl.SSLError("the handshake did not complete")


def _reason(e: Exception) -> str:
    """ssl's reason without the C source's line ("[SSL] PEM lib (_ssl.c:3905)")."""
    text = str(getattr(e, "strerror", None) or e)
    return re.sub(r"^\[\w+\]\s*|\s*\(_ssl\.c:\d+\)$", "", text)


def _users(check: _Checker, users: dict[Any, Any]) -> dict[str, bytes]:
    out = {}
    for user, hashed in users.items():
        where = f"basic_auth_users.{user}"
        if not isinstance(user, str) or not isinstance(hashed, str) \
                or not BCRYPT.fullmatch(hashed):
            check.add(users, user, where, "not a user name and a bcrypt hash",
                      "hash the password with bcrypt, e.g. `htpasswd -nBC 10 USER`, and "
                      "quote the hash")
            continue
        out[user] = hashed.encode()
    return out


def load_web_config(path: Path) -> WebConfig:
    """The web-config file at `path`; every problem at once as a located ConfigError."""
    from slicectl.core.config.config import load_yaml

    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block the read for ever
            raise OSError(errno.EINVAL, "not a regular file")
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:  # ENAMETOOLONG too: never a traceback
        reason = getattr(e, "strerror", None) or str(e)
        raise ConfigError([Problem(shown(path), 0, "", f"cannot read: {reason}",
                                   "--web-config FILE: exporter-toolkit's web configuration "
                                   "(docs/metrics.md)")]) from None
    doc = load_yaml(text, shown(path))
    check = _Checker(path)
    check.trusted(None, "", "", path)
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        check.add(doc, "", "", "must be a mapping (tls_server_config:, basic_auth_users:)")
        raise ConfigError(check.problems)
    check.keys(doc, TOP_KEYS, "")
    tls_node = check.mapping(doc.get("tls_server_config"), doc, "tls_server_config")
    tls = _tls(check, tls_node) if "tls_server_config" in doc else None
    users = _users(check, check.mapping(doc.get("basic_auth_users"), doc, "basic_auth_users"))
    if check.problems:
        raise ConfigError(sorted(check.problems, key=lambda p: p.line))
    return WebConfig(tls, users)
