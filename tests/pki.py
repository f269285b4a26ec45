"""Helpers for tests: a CA, a server certificate for 127.0.0.1 and a client certificate, made
by the real `openssl`, and bcrypt hashes for a web-config file."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Pki:
    """PEM files: the CA, the server's certificate and key, a client's certificate and key."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("openssl is not installed (tests/run installs it)")
    proc = subprocess.run([openssl, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def _signed(folder: Path, name: str, ca: Path, ca_key: Path, extensions: str) -> None:
    """NAME.crt and NAME.key, signed by the CA, with `extensions` (x509v3_config lines)."""
    key, csr, ext = folder / f"{name}.key", folder / f"{name}.csr", folder / f"{name}.ext"
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={name}")
    ext.write_text(extensions)
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
             "-CAcreateserial", "-days", "2", "-extfile", str(ext),
             "-out", str(folder / f"{name}.crt"))


def make_pki(folder: Path) -> Pki:
    """A fresh CA and the certificates it signs, in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = folder / "ca.crt", folder / "ca.key"
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
             "-subj", "/CN=slicectl test CA")
    _signed(folder, "server", ca, ca_key, "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                          "extendedKeyUsage=serverAuth\n")
    _signed(folder, "client", ca, ca_key, "extendedKeyUsage=clientAuth\n")
    return Pki(ca, folder / "server.crt", folder / "server.key", folder / "client.crt",
               folder / "client.key")


def bcrypt_hash(password: str) -> str:
    """A bcrypt hash as htpasswd -B writes it (cost 4: fast; the format is the same)."""
    import bcrypt

    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()
