"""Who gets in at each request (slicectl.exporter.access): basic auth's answers. Over HTTP and
TLS, with certificates made by openssl, in test_exporter_webconfig.py."""

from __future__ import annotations

import base64

import pytest

# --- basic auth: the time taken does not tell which users exist ----------------------------


def test_an_unknown_user_costs_a_check_at_the_users_cost(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A name that is no user's is checked against a hash of the users' cost, made at start:
    it takes as long as a known user's wrong password."""
    import bcrypt

    from slicectl.exporter.access import BasicAuth

    auth = BasicAuth({"alice": bcrypt.hashpw(b"s3cret", bcrypt.gensalt(5))})
    checked: list[bytes] = []
    hashed: list[bytes] = []
    check = bcrypt.checkpw

    def checkpw(password: bytes, hashed_password: bytes) -> bool:
        checked.append(hashed_password)
        return bool(check(password, hashed_password))

    def hashpw(password: bytes, salt: bytes) -> bytes:
        hashed.append(salt)
        return b""

    monkeypatch.setattr(bcrypt, "checkpw", checkpw)
    monkeypatch.setattr(bcrypt, "hashpw", hashpw)

    def header(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    assert not auth.allows(header("mallory", "s3cret"))
    assert not auth.allows(header("alice", "wrong"))
    assert auth.allows(header("alice", "s3cret"))
    assert [h[:7] for h in checked] == [b"$2b$05$"] * 3 and not hashed
