"""`slicectl completion bash|zsh|fish`: the scripts, loaded into the real shells, complete verbs,
flags, files and directories, and the profiles of the tenants file on the command line.

bash: the script is sourced and its completion function driven through COMP_WORDS, as bash
does on TAB. fish: `complete -C` asks fish what it would offer. zsh: an interactive zsh in a
pseudo-terminal gets the line and a TAB (tests/shell/complete.zsh). tests/run installs zsh and
fish.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

from slicectl.cli import COMMANDS, main
from slicectl.cli.completion import profiles, tenants_in
from slicectl.cli.parser import VERBS

DAY_NIGHT = "examples/day-night.yaml"  # has one profile, `night`
SLICECTL = Path(sys.executable).with_name("slicectl")  # the console script of this install

# (command line before the cursor, a candidate the shell must offer)
CASES = [
    ("slicectl pl", "plan"),
    ("slicectl comp", "completion"),
    ("slicectl plan --pro", "--profile"),
    ("slicectl status --js", "--json"),
    (f"slicectl plan {DAY_NIGHT} --profile ", "night"),
    (f"slicectl generate --topology x.json {DAY_NIGHT} --out o --profile ", "night"),
    (f"slicectl --debug apply {DAY_NIGHT} -y --profile ", "night"),
    ("slicectl completion ", "fish"),
    ("slicectl validate examples/day-", "day-night.yaml"),
    ("slicectl generate x --out tests/fixt", "fixtures"),
]


def script(shell: str) -> str:
    proc = subprocess.run([str(SLICECTL), "completion", shell], capture_output=True, text=True,
                          timeout=60, check=True)
    return proc.stdout


def shell_env() -> dict[str, str]:
    """PATH leads to this install's slicectl (the zsh and fish scripts call it by name)."""
    if not SLICECTL.exists():
        pytest.fail(f"no console script {SLICECTL}: pip install -e .")
    return dict(os.environ, PATH=f"{SLICECTL.parent}:{os.environ['PATH']}")


def need(shell: str) -> str:
    path = shutil.which(shell)
    if path is None:
        pytest.fail(f"{shell} is not installed (tests/run installs it)")
    return path


def check(shell: str, offers: list[list[str]]) -> None:
    """Each case's candidate is among what the shell offered for its line."""
    assert len(offers) == len(CASES), offers
    for (line, want), found in zip(CASES, offers, strict=True):
        assert any(c.rstrip("/").endswith(want) for c in found), (
            f"{shell}: {line!r} offers {found}, not {want}")


def run_shell(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, cwd=ROOT, env=shell_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_bash(tmp_path: Path) -> None:
    need("bash")
    path = tmp_path / "slicectl.bash"
    path.write_text(script("bash"))
    driver = [f"source {path}", "complete -p slicectl"]
    for line, _ in CASES:
        words = line.split(" ")
        words[0] = str(SLICECTL)
        quoted = " ".join(f"'{w}'" for w in words)
        # What bash does on TAB: COMP_WORDS/COMP_CWORD set, the registered function called.
        driver.append(f"COMP_WORDS=({quoted}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); "
                      "COMPREPLY=(); _shtab_slicectl; echo \"REPLY:${COMPREPLY[*]}\"")
    lines = run_shell(["bash", "-c", "\n".join(driver)]).splitlines()
    assert lines[0] == "complete -o bashdefault -F _shtab_slicectl slicectl"
    check("bash", [line.removeprefix("REPLY:").split() for line in lines[1:]])


def test_fish(tmp_path: Path) -> None:
    need("fish")
    path = tmp_path / "slicectl.fish"
    path.write_text(script("fish"))
    assert subprocess.run(["fish", "--no-execute", str(path)], timeout=60).returncode == 0
    commands = [f"source {path}"]
    for line, _ in CASES:
        commands += [f"complete -C {line!r}", "echo END"]
    answers = run_shell(["fish", "--no-config", "-c", "; ".join(commands)]).split("END\n")
    check("fish", [[row.split("\t")[0] for row in answer.splitlines()]
                   for answer in answers[:-1]])


def test_zsh(tmp_path: Path) -> None:
    need("zsh")
    path = tmp_path / "_slicectl"
    path.write_text(script("zsh"))
    assert subprocess.run(["zsh", "-n", str(path)], timeout=60).returncode == 0
    out = run_shell(["zsh", "-f", str(ROOT / "tests/shell/complete.zsh"), str(path),
                     *(line for line, _ in CASES)])
    check("zsh", [re.findall(r"HIT:([^\r\n]*)", answer)
                  for answer in re.split(r"END:\d+", out)[:-1]])


def test_every_verb_has_a_command_and_completes() -> None:
    assert set(VERBS) == set(COMMANDS)
    text = script("bash")
    for verb in VERBS:
        assert f"_shtab_slicectl_{verb}_option_strings=" in text


@pytest.mark.parametrize(("words", "tenants"), [
    (["plan", "t.yaml", "--profile"], "t.yaml"),
    (["--debug", "plan", "--topology", "x.json", "t.yaml"], "t.yaml"),
    (["generate", "--out", "o", "--profile", "p", "t.yaml", "--sysfs"], "t.yaml"),
    (["plan", "--json", "t.yaml"], "t.yaml"),
    (["plan", "--profile"], None),
    (["frobnicate", "t.yaml"], None),
])
def test_tenants_in(words: list[str], tenants: str | None) -> None:
    assert tenants_in(words) == tenants


def test_profiles_of_a_bad_file_are_none(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ntenants: [\n")
    assert profiles(["plan", str(bad)]) == []
    assert profiles(["plan", str(tmp_path / "missing.yaml")]) == []
    assert profiles(["plan", str(ROOT / DAY_NIGHT)]) == ["night"]


def test_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["completion", "tcsh"])
    assert e.value.code == 2
    assert "invalid choice: 'tcsh'" in capsys.readouterr().err
