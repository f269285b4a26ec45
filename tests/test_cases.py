"""Quadlet-style case files: each YAML (examples/ and tests/cases/) carries its own assertions.

Directives are comment lines starting with `## `:
  ## topology: NAME                      fixture topology (tests/fixtures/topologies/NAME.json)
  ## assert-key-is PATH SECTION KEY VALUE
  ## assert-file-absent PATH
  ## assert-failed                        generate must fail (exit 1) and write nothing
  ## assert-stderr-contains TEXT
  ## assert-validate-failed               `slicectl validate` fails too (exit 1), before any
                                          placement, with the same stderr texts, each error
                                          located (FILE:LINE:) and no "internal error"
  ## profile P: <directive>               checked after generating profile P into the same
                                          directory (so placement stability is part of the test)
Every successful output is also checked by the real `systemd-analyze verify`, and examples are
compared byte for byte with golden files under tests/golden/ (UPDATE_GOLDEN=1 rewrites them).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from unitcheck import parse_unit, systemd_verify

from slicectl.cli import main

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted(ROOT.glob("examples/*.yaml")) + sorted(ROOT.glob("tests/cases/*.yaml"))
GOLDEN = ROOT / "tests" / "golden"


def directives(path: Path) -> list[tuple[str | None, list[str]]]:
    """(profile or None, words) for every `## ` line."""
    result: list[tuple[str | None, list[str]]] = []
    for line in path.read_text().splitlines():
        if not line.startswith("## "):
            continue
        body = line[3:].strip()
        profile = None
        if body.startswith("profile ") and ":" in body:
            head, _, body = body.partition(":")
            profile = head.split()[1]
        result.append((profile, shlex.split(body)))
    return result


def run_generate(case: Path, out: Path, topology: str, profile: str | None,
                 capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    args = ["generate", str(case.relative_to(ROOT)), "--topology",
            str(ROOT / "tests/fixtures/topologies" / f"{topology}.json"), "--out", str(out)]
    if profile:
        args += ["--profile", profile]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        code = main(args)
    finally:
        os.chdir(cwd)
    return code, capsys.readouterr().err


def check(words: list[str], out: Path, code: int, stderr: str) -> None:
    verb = words[0]
    if verb == "assert-key-is":
        path, section, key, value = words[1:5]
        assert (out / path).exists(), f"{path} was not generated"
        units = parse_unit((out / path).read_text())
        assert units.get(section, {}).get(key) == value, (
            f"{path} [{section}] {key}: expected {value!r}, got "
            f"{units.get(section, {}).get(key)!r}")
    elif verb == "assert-file-absent":
        assert not (out / words[1]).exists(), f"{words[1]} should not be generated"
    elif verb == "assert-failed":
        assert code == 1, f"expected failure (exit 1), got exit {code}"
        assert not out.exists(), "a failed generate left files behind"
    elif verb == "assert-stderr-contains":
        assert words[1] in stderr, f"stderr lacks {words[1]!r}:\n{stderr}"
        assert "Traceback" not in stderr
    elif verb not in ("topology:", "assert-validate-failed"):
        raise AssertionError(f"unknown directive {verb}")


def check_validate(case: Path, ds: list[tuple[str | None, list[str]]],
                   capsys: pytest.CaptureFixture[str]) -> None:
    """`slicectl validate` refuses the case with located errors (no topology involved)."""
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        code = main(["validate", str(case.relative_to(ROOT))])
    finally:
        os.chdir(cwd)
    out, err = capsys.readouterr()
    assert code == 1 and out == "", f"validate: exit {code}\n{out}{err}"
    assert "internal error" not in err and "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors and all(re.match(rf"error: \S*{re.escape(case.name)}:\d+: ", line)
                          for line in errors), err
    for _, words in ds:
        if words[0] == "assert-stderr-contains":
            assert words[1] in err, f"validate's stderr lacks {words[1]!r}:\n{err}"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_case(case: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = directives(case)
    topology = next((w[1] for p, w in ds if w[0] == "topology:"), None)
    assert topology, f"{case.name}: no '## topology:' line"
    out = tmp_path / "out"
    code, stderr = run_generate(case, out, topology, None, capsys)
    failing = any(w[0] == "assert-failed" for _, w in ds)
    assert failing or code == 0, f"generate failed:\n{stderr}"
    for profile, words in ds:
        if profile is None:
            check(words, out, code, stderr)
    if any(w[0] == "assert-validate-failed" for _, w in ds):
        check_validate(case, ds, capsys)
    if not failing:
        systemd_verify(out, tmp_path / "base")
        if case.parent.name == "examples":
            compare_golden(out, GOLDEN / case.stem)
    for profile in sorted({p for p, _ in ds if p is not None}):
        code, stderr = run_generate(case, out, topology, profile, capsys)
        assert code == 0, f"generate --profile {profile} failed:\n{stderr}"
        for p, words in ds:
            if p == profile:
                check(words, out, code, stderr)
        systemd_verify(out, tmp_path / f"profile-{profile}")


def compare_golden(out: Path, golden: Path) -> None:
    """Byte-for-byte comparison of every generated file with tests/golden/<example>/."""
    produced = {p.relative_to(out).as_posix(): p.read_bytes()
                for p in sorted(out.rglob("*")) if p.is_file()}
    if os.environ.get("UPDATE_GOLDEN"):
        if golden.exists():
            for old in sorted(golden.rglob("*"), reverse=True):
                old.unlink() if old.is_file() else old.rmdir()
        for rel, data in produced.items():
            (golden / rel).parent.mkdir(parents=True, exist_ok=True)
            (golden / rel).write_bytes(data)
    expected = {p.relative_to(golden).as_posix(): p.read_bytes()
                for p in sorted(golden.rglob("*")) if p.is_file()}
    assert sorted(produced) == sorted(expected), "generated file set differs from golden"
    for rel, data in produced.items():
        assert data == expected[rel], f"{rel} differs from tests/golden/{golden.name}/{rel}"
