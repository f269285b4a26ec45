"""Quadlet-style case files: each YAML (examples/ and tests/cases/) carries its own assertions.

Directives are comment lines starting with `## ` (words are shell-quoted):
  ## topology: NAME                      fixture topology (tests/fixtures/topologies/NAME.json)
  ## out: PATH                           `--out PATH`, relative to the run's scratch folder (the
                                          working directory of the run; default: out; Python
                                          escapes as in file-name:)
  ## file-name: NAME                     run on a copy of the case named NAME, in the scratch
                                          folder (Python escapes: '\\xff' is the byte 0xff)
  ## args: WORD...                       more arguments for generate
  ## setup-generate [WORD...]            before the run: generate once (must succeed)
  ## setup-file PATH TEXT                before the run: write TEXT and a newline to PATH
  ## setup-append PATH TEXT              before the run: append a line to PATH (a hand edit)
  ## setup-symlink PATH TARGET           before the run: replace PATH (file or folder) by a link
  ## setup-manifest PATH HASH            before the run: list PATH with HASH in the manifest
                                          (@: the SHA-256 PATH has now, as if slicectl wrote it)
  ## assert-key-is PATH SECTION KEY VALUE
  ## assert-file-absent PATH
  ## assert-file-contains PATH TEXT
  ## assert-file-lacks PATH TEXT
  ## assert-failed [CODE]                generate must fail (exit CODE, default 1) and leave the
                                          scratch folder byte-identical (every entry's kind,
                                          mode, contents and link target)
  ## assert-stderr-contains TEXT
  ## assert-stdout-contains TEXT
  ## assert-validate-failed               `slicectl validate` fails too (exit 1), before any
                                          placement, with the same stderr texts, each error
                                          located (FILE:LINE:) and no "internal error"
  ## profile P: <directive>               checked after generating profile P into the same
                                          directory (so placement stability is part of the test)
Setup paths are relative to the output directory. Every successful output is also checked by
the real `systemd-analyze verify`, and examples are compared byte for byte with golden files
under tests/golden/ (UPDATE_GOLDEN=1 rewrites them). Errors are never "internal error".
"""

from __future__ import annotations

import codecs
import json
import os
import re
import shlex
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from unitcheck import parse_unit, systemd_verify

from slicectl.cli import main
from slicectl.host.files.owned import sha256
from slicectl.host.files.unitdir import MANIFEST_NAME

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted(ROOT.glob("examples/*.yaml")) + sorted(ROOT.glob("tests/cases/*.yaml"))
GOLDEN = ROOT / "tests" / "golden"
SETUP = ("setup-generate", "setup-file", "setup-append", "setup-symlink", "setup-manifest")


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


@dataclass
class Run:
    """Where a case runs: the scratch folder (cwd), the tenants file and the output folder."""

    ws: Path
    tenants: str
    out: str
    topology: str
    args: list[str] = field(default_factory=list)

    @property
    def out_path(self) -> Path:
        return self.ws / self.out


def listing(root: Path) -> dict[str, tuple[str, int, bytes | str | None]]:
    """Every entry under root, not following links: kind, mode, contents or link target."""
    result: dict[str, tuple[str, int, bytes | str | None]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, root)
            if stat.S_ISLNK(st.st_mode):
                result[rel] = ("link", 0, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                result[rel] = ("dir", stat.S_IMODE(st.st_mode), None)
            else:
                result[rel] = ("file", stat.S_IMODE(st.st_mode), Path(path).read_bytes())
    return result


def run_generate(run: Run, profile: str | None, capsys: pytest.CaptureFixture[str],
                 extra: list[str] | None = None) -> tuple[int, str, str]:
    args = ["generate", run.tenants, "--topology",
            str(ROOT / "tests/fixtures/topologies" / f"{run.topology}.json"), "--out", run.out,
            *(run.args if extra is None else extra)]
    if profile:
        args += ["--profile", profile]
    cwd = os.getcwd()
    os.chdir(run.ws)
    try:
        code = main(args)
    except SystemExit as e:  # argparse: usage errors
        code = e.code if isinstance(e.code, int) else 1
    finally:
        os.chdir(cwd)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def setup(words: list[str], run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    """One `setup-*` directive: the state of the output directory before the run."""
    verb, *rest = words
    if verb == "setup-generate":
        code, _, err = run_generate(run, None, capsys, rest)
        assert code == 0, f"setup-generate failed:\n{err}"
        return
    path = run.out_path / rest[0]
    if verb == "setup-file":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rest[1] + "\n")
    elif verb == "setup-append":
        with path.open("a") as f:
            f.write(rest[1] + "\n")
    elif verb == "setup-symlink":
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        path.symlink_to(rest[1])
    elif verb == "setup-manifest":
        manifest = run.out_path / MANIFEST_NAME
        data = json.loads(manifest.read_text())
        data["files"][rest[0]] = sha256(path.read_bytes()) if rest[1] == "@" else rest[1]
        manifest.write_text(json.dumps(data, indent=2) + "\n")


def check(words: list[str], run: Run, code: int, stdout: str, stderr: str) -> None:
    verb = words[0]
    out = run.out_path
    if verb == "assert-key-is":
        path, section, key, value = words[1:5]
        assert (out / path).exists(), f"{path} was not generated"
        units = parse_unit((out / path).read_text())
        assert units.get(section, {}).get(key) == value, (
            f"{path} [{section}] {key}: expected {value!r}, got "
            f"{units.get(section, {}).get(key)!r}")
    elif verb == "assert-file-absent":
        assert not (out / words[1]).exists(), f"{words[1]} should not be generated"
    elif verb == "assert-file-contains":
        text = (out / words[1]).read_text()
        assert words[2] in text, f"{words[1]} lacks {words[2]!r}:\n{text}"
    elif verb == "assert-file-lacks":
        text = (out / words[1]).read_text()
        assert words[2] not in text, f"{words[1]} has {words[2]!r}:\n{text}"
    elif verb == "assert-stderr-contains":
        assert words[1] in stderr, f"stderr lacks {words[1]!r}:\n{stderr}"
    elif verb == "assert-stdout-contains":
        assert words[1] in stdout, f"stdout lacks {words[1]!r}:\n{stdout}"
    elif verb not in ("topology:", "out:", "file-name:", "args:", "assert-failed",
                      "assert-validate-failed", *SETUP):
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


def unescape(text: str) -> str:
    """A file name written with Python escapes ('\\xff': the byte), as Python keeps it."""
    raw = codecs.escape_decode(text.encode())[0]
    assert isinstance(raw, bytes)
    return os.fsdecode(raw)


def prepare(case: Path, ds: list[tuple[str | None, list[str]]], tmp_path: Path) -> Run:
    """The scratch folder for a case, with the tenants file where its directives say."""
    topology = next((w[1] for p, w in ds if w[0] == "topology:"), None)
    assert topology, f"{case.name}: no '## topology:' line"
    ws = tmp_path / "ws"
    ws.mkdir()
    tenants = str(case)
    name = next((w[1] for p, w in ds if w[0] == "file-name:"), None)
    if name is not None:
        tenants = unescape(name)
        shutil.copy(case, ws / tenants)  # the name as Python keeps it (surrogates)
    out = unescape(next((w[1] for p, w in ds if w[0] == "out:"), "out"))
    args = next((w[1:] for p, w in ds if w[0] == "args:"), [])
    return Run(ws=ws, tenants=tenants, out=out, topology=topology, args=args)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_case(case: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = directives(case)
    run = prepare(case, ds, tmp_path)
    for profile, words in ds:
        if profile is None and words[0] in SETUP:
            setup(words, run, capsys)
    before = listing(run.ws)
    code, stdout, stderr = run_generate(run, None, capsys)
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr
    failing = next((w for _, w in ds if w[0] == "assert-failed"), None)
    if failing is None:
        assert code == 0, f"generate failed:\n{stderr}"
    else:
        expected = int(failing[1]) if len(failing) > 1 else 1
        assert code == expected, f"expected exit {expected}, got exit {code}:\n{stderr}"
        assert stderr.startswith(("error: ", "usage: ")), stderr
        assert listing(run.ws) == before, "a failed generate changed the directory"
    for profile, words in ds:
        if profile is None:
            check(words, run, code, stdout, stderr)
    if any(w[0] == "assert-validate-failed" for _, w in ds):
        check_validate(case, ds, capsys)
    if failing is None:
        systemd_verify(run.out_path, tmp_path / "base")
        if case.parent.name == "examples":
            compare_golden(run.out_path, GOLDEN / case.stem)
    for profile in sorted({p for p, _ in ds if p is not None}):
        code, stdout, stderr = run_generate(run, profile, capsys)
        assert code == 0, f"generate --profile {profile} failed:\n{stderr}"
        for p, words in ds:
            if p == profile:
                check(words, run, code, stdout, stderr)
        systemd_verify(run.out_path, tmp_path / f"profile-{profile}")


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
