"""A fuzz test of the input contract: whatever tenants.yaml holds, `validate` and
`generate` exit 0, 1 or 2; a problem in the file is reported as FILE:LINE: with a hint, never
as an internal error; a failed generate leaves its output directory exactly as it was; a
successful one writes units the real `systemd-analyze verify` accepts.

Documents are drawn by hypothesis from the shape of tenants.yaml with every value drawn from
valid and invalid ones alike, then written as YAML (block or flow style) with some text-level
mutations (tags, anchors, odd names). A fixed seed and a bounded number of examples keep the
host suite deterministic.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from examplecounts import deterministic, examples
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from unitcheck import systemd_verify

from slicectl.cli import main

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGY = ROOT / "tests" / "fixtures" / "topologies" / "xeon-2s-smt.json"
BASE = "version: 1\nhousekeeping: {cpus: 2}\ntenants:\n  base: {cpus: 2, memory_max: 1G}\n"

# Values valid for some key and invalid for others: every key gets drawn from all of them.
SCALARS = st.one_of(
    st.sampled_from([0, 1, 2, 4, 8, -1, 10000, 10001, 2**31, 2**64 - 1, 2**64, 10**30,
                     1.5, 1.0, True, False, None, "", " ", "0", "1", "0-3", "0-3,16-19",
                     "0-2147483648", "3-1", "1,,2", "512M", "24G", "1.5G", "infinity",
                     "Infinity", "0K", "16384P", "8796093022208T", "12X", "150%", "0%",
                     "99999999999999999999%", "100ms", "1s", "500us", "2s",
                     "18446744073709551616us", "local", "spread", "any", "nowhere",
                     "app.service", "a b.service", "x.service\n[Service]", "app@.service",
                     "db\n", "caf\u00e9", "%n", "ends \\", "a" * 300]),
    st.integers(-3, 20),
    st.text(max_size=12),
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(["a", "b", "cpus"]), inner,
                                        max_size=2), max_leaves=6)
TENANT_KEYS = ["description", "cpus", "numa", "nodes", "exclusive", "cpu_weight", "cpu_quota",
               "cpu_quota_period", "memory_min", "memory_low", "memory_high", "memory_max",
               "memory_swap_max", "services", "memroy_max"]
CONFINE_KEYS = ["cpus", "cpu_weight", "cpu_quota", "memory_high", "memory_max",
                "memory_swap_max", "memory_low"]
NAMES = st.one_of(st.sampled_from(["db1", "web", "batch_2", "0x", "Web", "a-b", "db1\n", "",
                                   "x" * 240, "night"]), st.from_regex(r"[a-z][a-z0-9_]{0,6}",
                                                                       fullmatch=True))
UNITS = st.sampled_from(["system.slice", "user.slice", "cron.service", "init.scope",
                         "tenants.slice", "app.target", "bad unit", "x.service\n"])


GOOD: dict[str, st.SearchStrategy[Any]] = {
    "description": st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20),
    "cpus": st.one_of(st.integers(1, 6), st.sampled_from(["2-3", "4,36", "8-11"])),
    "numa": st.sampled_from(["local", "spread", "any"]),
    "nodes": st.sampled_from([[0], [1], "1"]),
    "exclusive": st.booleans(),
    "cpu_weight": st.integers(1, 10000),
    "cpu_quota": st.integers(1, 800).map(lambda n: f"{n}%"),
    "cpu_quota_period": st.sampled_from(["10ms", "100ms", "1s", "1000us"]),
    "memory_min": st.sampled_from([0, "256M", "1G"]),
    "memory_low": st.sampled_from(["512M", "2G", "infinity"]),
    "memory_high": st.sampled_from(["1G", "3G", "infinity", 1048576]),
    "memory_max": st.sampled_from(["2G", "4G", "infinity"]),
    "memory_swap_max": st.sampled_from([0, "1G", "infinity"]),
    "services": st.sampled_from([["app1.service"], ["db1.socket", "db1.service"]]),
}


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """A valid-looking tenants.yaml document, then up to three mutations from VALUES."""
    def mapping(keys: list[str]) -> dict[str, Any]:
        chosen = draw(st.lists(st.sampled_from(keys), max_size=4, unique=True))
        return {k: draw(GOOD[k]) for k in chosen}

    doc: dict[str, Any] = {"version": 1}
    if draw(st.booleans()):
        doc["housekeeping"] = {"cpus": draw(st.integers(0, 4))}
    names = draw(st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), min_size=1,
                          max_size=4, unique=True))
    doc["tenants"] = {name: mapping(list(GOOD)) for name in names}
    for t in doc["tenants"].values():  # a member unit belongs to one tenant only
        t.pop("services", None)
    if draw(st.booleans()):
        doc["confine"] = {"system.slice": mapping(CONFINE_KEYS[:-1])}
    if draw(st.booleans()):
        doc["profiles"] = {"night": {names[0]: mapping(["cpus", "cpu_weight", "memory_max"])}}
    for _ in range(draw(st.sampled_from([0, 0, 1, 2, 3]))):
        mutate(draw, doc)
    return doc


def mutate(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    """One change that may break the document: a value, a name, a key, a section."""
    what = draw(st.integers(0, 6))
    tenants = doc["tenants"]
    name = draw(st.sampled_from(sorted(tenants)))
    if what <= 2:
        tenants[name][draw(st.sampled_from(TENANT_KEYS))] = draw(VALUES)
    elif what == 3:
        tenants[draw(NAMES)] = tenants.pop(name)
    elif what == 4:
        doc[draw(st.sampled_from(["version", "slice", "housekeeping", "tenant"]))] = \
            draw(VALUES)
    elif what == 5:
        doc["confine"] = {draw(UNITS): {draw(st.sampled_from(CONFINE_KEYS)): draw(VALUES)}}
    else:
        doc["profiles"] = {draw(NAMES): {draw(NAMES): {draw(st.sampled_from(TENANT_KEYS)):
                                                        draw(VALUES)}}}


def to_yaml(doc: dict[str, Any], style: int) -> str:
    """The document as YAML text: JSON (flow), or block style, or with a YAML trick."""
    text = json.dumps(doc, indent=None if style == 0 else 2, ensure_ascii=False)  # JSON is YAML
    if style == 2:
        from ruamel.yaml import YAML

        out = io.StringIO()
        YAML(typ="safe", pure=True).dump(doc, out)
        text = out.getvalue()
    elif style == 3:
        text = text.replace('"version": 1', '"version": !!int "1"', 1)
    elif style == 4:
        text = text.replace('"tenants"', '"tenants" ', 1) + "\n# a comment\n"
    elif style == 5:
        text = '{"x": &a [1, 2], ' + text[1:].replace('"cpus": 2', '"cpus": *a', 1)
    return text


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def listing(root: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry below `root`: its mode and contents (files) or target (links)."""
    found: dict[str, tuple[int, bytes | str]] = {}
    for p in sorted(root.rglob("*")):
        st_ = p.lstat()
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            found[rel] = (st_.st_mode, str(p.readlink()))
        elif p.is_file():
            found[rel] = (st_.st_mode, p.read_bytes())
        else:
            found[rel] = (st_.st_mode, "")
    return found


LOCATED = re.compile(r"error: \S*t\.yaml:\d+: ")


def check_errors(err: str) -> None:
    assert "Traceback" not in err and "internal error" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors, err
    for line in errors:
        assert LOCATED.match(line), f"not located: {line}\n{err}"
    assert "  hint: " in err, err


@pytest.mark.long
@seed(20261122)
@settings(max_examples=examples(80), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc=documents(), style=st.integers(0, 5))
def test_any_document_keeps_the_contract(tmp_path_factory: Any, doc: dict[str, Any],
                                         style: int) -> None:
    work = tmp_path_factory.mktemp("fuzz")
    path = work / "t.yaml"
    path.write_text(to_yaml(doc, style))
    out = work / "out"
    # A directory holding an earlier, valid generate: a failure must leave it as it is.
    (work / "base.yaml").write_text(BASE)
    assert run("generate", str(work / "base.yaml"), "--topology", str(TOPOLOGY),
               "--out", str(out))[0] == 0
    before = listing(out)

    code_v, _, err_v = run("validate", str(path))
    assert code_v in (0, 1), err_v
    if code_v:
        check_errors(err_v)
    code, _, err = run("generate", str(path), "--topology", str(TOPOLOGY), "--out", str(out))
    assert code in (0, 1, 2), err
    assert not (code_v == 1 and code == 0), "validate refused what generate accepted"
    if code:
        check_errors(err)
        assert listing(out) == before, "a failed generate changed the output directory"
    else:
        systemd_verify(out, work)


# The documents that crashed or exhausted slicectl before its bounds, kept as regression
# cases: each is refused with a located error, in a process of its own (a crash is a signal).
REGRESSIONS = {
    "block sequences 40,000 deep on one line": "- " * 40_000 + "x\n",
    "block sequences under a key": "version: 1\ntenants:\n  a:\n    " + "- " * 40_000 + "x\n",
    "explicit keys 20,000 deep": "? " * 20_000 + "x\n",
    "indentation 300 levels deep": "a:\n" + "".join(" " * i + "- \n" for i in range(0, 600, 2)),
    "flow sequences 100,000 deep": "[" * 100_000,
    "flow mappings inside block ones": "- " * 60 + "{a: " * 150 + "x" + "}" * 150 + "\n",
    "17 MiB of comment": "version: 1\n" + "#" * (17 << 20) + "\n",
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_documents_that_crashed_are_refused_located(tmp_path: Path, name: str) -> None:
    import subprocess
    import sys

    path = tmp_path / "t.yaml"
    path.write_text(REGRESSIONS[name])
    proc = subprocess.run([sys.executable, "-m", "slicectl", "validate", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr
    if name.endswith("of comment"):  # refused before any line is read
        assert proc.stderr.startswith(f"error: {path}: is larger than 16 MiB"), proc.stderr
    else:
        check_errors(proc.stderr)


def test_an_alias_bomb_is_read_in_linear_memory() -> None:
    """Aliases share one node: nine levels of ten aliases are 10^9 leaves only if expanded,
    and an error message quoting the value is bounded (values.quote)."""
    lines = ["version: 1", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    lines += ["tenants:", "  db: {cpus: *a8}"]
    from slicectl.core.config.config import load_yaml, parse_config
    from slicectl.core.errors import ConfigError

    with pytest.raises(ConfigError) as e:
        parse_config(load_yaml("\n".join(lines) + "\n", "t.yaml"), "t.yaml")
    assert len(str(e.value)) < 4000


# Text drawn from YAML's indicators and a few words and numbers, now and then nested deep.
YAML_PIECES = st.sampled_from(["- ", "? ", ": ", "[", "]", "{", "}", ", ", "\n", "  ", "\t",
                               "#", "&a ", "*a", "!!int ", "!!str ", "<<: ", "|", ">", "'", '"',
                               "version: 1", "tenants:", "cpus", "db", "2", "50%", "1G", "---",
                               "...", "%YAML 1.1\n", "\\u0000", "\u0665", "\ufeff", "\x85"])
DEEP = st.builds(lambda piece, n: piece * n, st.sampled_from(["- ", "[", "{a: ", "? ", "  "]),
                 st.integers(50, 3000))


@seed(20261128)
@settings(max_examples=examples(400), deadline=None, derandomize=deterministic(),
          suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.one_of(YAML_PIECES, DEEP, st.text(max_size=8)), max_size=40))
def test_any_text_is_read_or_refused_located(pieces: list[str]) -> None:
    """Whatever the text, reading and checking it raises a located ConfigError or nothing."""
    from slicectl.core.config.config import load_yaml, parse_config
    from slicectl.core.errors import ConfigError

    text = "".join(pieces)
    try:
        parse_config(load_yaml(text, "t.yaml"), "t.yaml")
    except ConfigError as e:
        assert e.problems and all(p.file == "t.yaml" for p in e.problems), e


# web-config documents: the keys of exporter-toolkit's format with values valid or not, some
# naming the fixture's real certificate and key, some files that are not there or not files.
WEB_VALUES = st.one_of(SCALARS, st.sampled_from(
    ["server.crt", "server.key", "ca.crt", "missing.pem", "/dev/zero", ".", "TLS12", "TLS13",
     "TLS10", "RequireAndVerifyClientCert", "NoClientCert", "VerifyClientCertIfGiven",
     "$2b$04$" + "a" * 53, "x" * 5000]))
WEB_KEYS = {"tls_server_config": ["cert_file", "key_file", "client_ca_file",
                                  "client_auth_type", "min_version", "max_version",
                                  "cipher_suites", "curve_preferences"],
            "basic_auth_users": ["alice", "bob", ""], "http_server_config": ["http2"]}


_MADE: dict[str, Any] = {}


@st.composite
def web_configs(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for section, keys in WEB_KEYS.items():
        if draw(st.booleans()):
            chosen = draw(st.lists(st.sampled_from(keys), max_size=4, unique=True))
            doc[section] = {k: draw(WEB_VALUES) for k in chosen}
    if draw(st.integers(0, 5)) == 0:
        doc[draw(st.sampled_from(["tls_config", "users", ""]))] = draw(VALUES)
    return doc


@seed(20261128)
@settings(max_examples=examples(200), deadline=None, derandomize=deterministic(),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc=web_configs(), style=st.integers(0, 2))
def test_any_web_config_is_loaded_or_refused_located(tmp_path_factory: Any,
                                                     doc: dict[str, Any], style: int) -> None:
    """The exporter's --web-config: whatever it holds, a WebConfig or a located ConfigError,
    never a traceback or a hang."""
    from pki import make_pki

    from slicectl.core.errors import ConfigError
    from slicectl.exporter.webconfig import load_web_config

    if "pki" not in _MADE:  # one set of keys for every example: openssl is slow
        _MADE["pki"] = make_pki(tmp_path_factory.mktemp("pki"))
    pki = _MADE["pki"]
    work = tmp_path_factory.mktemp("web")
    for name, made in (("server.crt", pki.server_cert), ("server.key", pki.server_key),
                       ("ca.crt", pki.ca)):
        (work / name).write_bytes(made.read_bytes())
        (work / name).chmod(0o600)
    path = work / "web.yml"
    path.write_text(to_yaml(doc, style))
    try:
        load_web_config(path)
    except ConfigError as e:
        assert e.problems and all(p.file.startswith(str(path)) or str(path) in str(p)
                                  for p in e.problems), e
