"""`slicectl lint`: case files carry their expected findings (the live rule: test_readers.py).

Case files in tests/cases/lint/ use comment directives:
  ## topology: NAME          fixture topology (tests/fixtures/topologies/NAME.json)
  ## expect RULE LINE        one expected finding (the set of findings must match exactly)
A case without `## expect` lines must produce no findings.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from paths import ROOT

from slicectl.cli import main
from slicectl.core.advice.lint import RULES, lint
from slicectl.core.config.config import Config
from slicectl.host.planning import load_tenants
from slicectl.host.topology.sysfs import load_topology_file

CASES = sorted((ROOT / "tests" / "cases" / "lint").glob("*.yaml"))
TOPOLOGIES = ROOT / "tests" / "fixtures" / "topologies"


def case_directives(path: Path) -> tuple[str, Counter[tuple[str, int]]]:
    """(topology name, expected (rule, line) multiset) of a case file."""
    topology = "xeon-2s-smt"
    expected: Counter[tuple[str, int]] = Counter()
    for line in path.read_text().splitlines():
        if line.startswith("## topology:"):
            topology = line.split(":", 1)[1].strip()
        elif line.startswith("## expect "):
            _, _, rule, lineno = line.split()
            assert rule in RULES, f"{path.name}: unknown rule {rule}"
            expected[(rule, int(lineno))] += 1
    return topology, expected


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_case(case: Path) -> None:
    topology, expected = case_directives(case)
    topo = load_topology_file(str(TOPOLOGIES / f"{topology}.json"))
    findings = lint(load_tenants(str(case), contradictions_are_errors=False), topo)
    got = Counter((f.rule, f.line) for f in findings)
    assert got == expected, "\n".join(str(f) for f in findings)
    for f in findings:
        assert f.file == str(case) and f.fix and f.source


def test_every_rule_has_a_case() -> None:
    covered = {rule for case in CASES for rule, _ in case_directives(case)[1]}
    # The live rules are tested below and in test_readers.py.
    assert covered | {"root-tasks", "io-device-missing", "oomd-not-running",
                      "hugetlb-in-memory-limit"} == set(RULES)


EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def example_topology(path: Path) -> str:
    """The fixture topology an example's header names (`## topology: NAME`)."""
    return _topo(case_directives(path)[0])


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_bundled_examples_are_lint_clean(example: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Every bundled example follows every recommendation on the topology its header names,
    for the base file and every profile: no warnings (`--strict` passes)."""
    assert main(["lint", str(example), "--topology", example_topology(example),
                 "--strict"]) == 0
    assert capsys.readouterr().out == f"{example}: no findings\n"
    config = load_tenants(str(example))
    topo = load_topology_file(example_topology(example))
    for profile in config.profiles:
        findings = lint(config.with_profile(profile), topo)
        assert [(f.rule, f.line) for f in findings] == [], profile


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_bundled_examples_guarantee_cpu_to_every_pinned_tenant(
        example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`plan` shows a non-zero guarantee for every tenant with CPUs, in every profile (never
    "0.00 cores 0.0% (threads)": the examples leave no tenant to compete thread by thread)."""
    config = load_tenants(str(example))
    for profile in (None, *config.profiles):
        args = ["plan", str(example), "--topology", example_topology(example), "--json"]
        assert main(args + (["--profile", profile] if profile else [])) == 0
        data = json.loads(capsys.readouterr().out)
        for tenant in data["tenants"]:
            if tenant["cpu_count"]:
                share = tenant["cpu_share"]
                assert share["cores"] > 0 and share["bound"] != "threads", (profile, tenant)


def test_without_topology_skips_placement_rules() -> None:
    config = load_tenants(str(ROOT / "tests/cases/lint/cross-node-cpus.yaml"))
    assert not [f for f in lint(config, None) if f.rule == "cross-node-cpus"]


def test_levels_documented() -> None:
    doc = (ROOT / "docs" / "lint.md").read_text()
    for rule in RULES.values():
        assert f"`{rule.name}`" in doc
        assert rule.source in doc


def _topo(name: str = "xeon-2s-smt") -> str:
    return str(TOPOLOGIES / f"{name}.json")


def test_run_lint_output_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    warn = str(ROOT / "tests/cases/lint/swap-unbounded.yaml")
    assert main(["lint", warn, "--topology", _topo()]) == 0
    out = capsys.readouterr().out
    assert f"{warn}:13: swap-unbounded: tenant unset has memory_max 8G" in out
    assert "fix: set memory_swap_max: 0" in out
    assert "source: Tran and Weng, \"Don't Let Linux Control Groups Run Uncontrolled\"" in out
    assert main(["lint", warn, "--topology", _topo(), "--strict"]) == 1  # warnings fail
    capsys.readouterr()
    err = str(ROOT / "tests/cases/lint/high-above-max.yaml")
    assert main(["lint", err, "--topology", _topo()]) == 1
    sound = str(ROOT / "tests/cases/lint/sound.yaml")
    capsys.readouterr()
    assert main(["lint", sound, "--topology", _topo(), "--strict"]) == 0
    assert capsys.readouterr().out == f"{sound}: no findings\n"


def test_run_lint_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "tests/cases/lint/high-above-max.yaml")
    assert main(["lint", path, "--topology", _topo(), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == 2 and data["warnings"] == 0
    assert {f["rule"] for f in data["findings"]} == {"high-above-max"}
    assert data["findings"][0]["level"] == "error"


def test_run_lint_sysfs(capsys: pytest.CaptureFixture[str]) -> None:
    sysfs = str(ROOT / "tests/fixtures/sysfs/xeon-2s-smt")
    assert main(["lint", str(ROOT / "examples/web-batch.yaml"), "--sysfs", sysfs]) == 0
    assert "no findings" in capsys.readouterr().out


def test_no_protection_cannot_overcommit() -> None:
    """Housekeeping limits above RAM with no tenant protection: nothing is protected, so
    protection-overcommit has nothing to say (and build_plan, which enforces it, plans)."""
    from slicectl.core.advice.lint import overcommit_rule
    from slicectl.core.config.config import load_yaml, parse_config
    from slicectl.core.plan import build_plan

    text = ("version: 1\nhousekeeping: {cpus: 2}\nconfine:\n  system.slice: {memory_max: 300G}\n"
            "tenants:\n  a: {cpus: 2, memory_max: 8G}\n")
    config = parse_config(load_yaml(text, "t.yaml"), "t.yaml", contradictions_are_errors=False)
    topo = load_topology_file(str(TOPOLOGIES / "xeon-2s-smt.json"))
    assert topo.total_memory < 300 * 1024**3
    assert list(overcommit_rule(config, topo)) == []
    assert build_plan(config, topo).units
    protected = text.replace("memory_max: 8G}", "memory_max: 8G, memory_low: 1G}")
    (finding,) = overcommit_rule(parse_config(load_yaml(protected, "t.yaml"), "t.yaml"), topo)
    assert finding.rule == "protection-overcommit" and finding.line == 6


LIVE = """\
version: 1
confine:
  cron.service: {io_write_bandwidth_max: {/dev/nvme9n1: 1M}}
tenants:
  db:
    io_read_bandwidth_max: {/dev/vda: 50M, /var/lib/db: 20M}
    managed_oom_memory_pressure: kill
  web: {managed_oom_memory_pressure: auto}
"""


def live_config(tmp_path: Path) -> Config:
    path = tmp_path / "tenants.yaml"
    path.write_text(LIVE)
    return load_tenants(str(path), contradictions_are_errors=False)


def test_io_settings_for_devices_the_host_lacks(tmp_path: Path) -> None:
    from slicectl.core.advice.lint import missing_devices

    config = live_config(tmp_path)
    found = missing_devices(config, lambda path: path == "/dev/vda")
    assert [(f.rule, f.line) for f in found] == [("io-device-missing", 6),
                                                ("io-device-missing", 3)]
    assert "/var/lib/db, which is not a block device" in found[0].message
    assert found[1].message.startswith("unit cron.service has io_write_bandwidth_max for "
                                       "/dev/nvme9n1")
    assert missing_devices(config, lambda _: True) == []


def test_managed_oom_without_systemd_oomd(tmp_path: Path) -> None:
    from slicectl.core.advice.lint import oomd_rule

    config = live_config(tmp_path)
    (finding,) = oomd_rule(config, oomd_running=False)
    assert (finding.rule, finding.line) == ("oomd-not-running", 7)
    assert "tenant db has managed_oom_memory_pressure: kill" in finding.message
    assert oomd_rule(config, oomd_running=True) == []


HUGE = """\
version: 1
tenants:
  db: {memory_high: 20G, memory_max: 24G}
  cache: {memory_high: 8G}
  batch: {memory_max: infinity, cpu_weight: 50}
  web: {cpu_weight: 200}
"""


def test_huge_pages_count_in_the_limits_where_the_mount_says_so(tmp_path: Path) -> None:
    from slicectl.core.advice.lint import hugetlb_rule

    path = tmp_path / "tenants.yaml"
    path.write_text(HUGE)
    config = load_tenants(str(path), contradictions_are_errors=False)
    found = hugetlb_rule(config, hugetlb_accounted=True)
    assert [f"{f.line}: {f.level}: {f.message}" for f in found] == [
        "3: warning: tenant db has memory_max 24G and this host's cgroup2 is mounted with "
        "memory_hugetlb_accounting: the huge pages it uses (reserved as HugePages) count "
        "against that limit once it touches them, and cannot be reclaimed",
        "4: warning: tenant cache has memory_high 8G and this host's cgroup2 is mounted with "
        "memory_hugetlb_accounting: the huge pages it uses (reserved as HugePages) count "
        "against that limit once it touches them, and cannot be reclaimed"]
    assert hugetlb_rule(config, hugetlb_accounted=False) == []


@pytest.mark.parametrize(("options", "flagged"), [
    ("rw,nsdelegate,memory_recursiveprot,memory_hugetlb_accounting", [29, 37]),
    ("rw,nsdelegate,memory_recursiveprot", [])])
def test_lint_live_reads_hugetlb_accounting_from_the_mount_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], options: str,
        flagged: list[int]) -> None:
    """The option as the host's mount table has it on its cgroup2 mount (`--proc-root`)."""
    cg = tmp_path / "cgroup"
    cg.mkdir()
    (cg / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids\n")
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "mountinfo").write_text(
        f"26 22 0:25 / {cg} rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
        f"{options}\n")
    example = str(ROOT / "examples" / "web-batch.yaml")
    main(["lint", example, "--topology", _topo(), "--live", "--json", "--cgroup-root", str(cg),
          "--proc-root", str(tmp_path / "proc")])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["line"] for f in findings if f["rule"] == "hugetlb-in-memory-limit"] == flagged


def test_memory_findings_say_what_happens() -> None:
    """The exact messages of limit-exceeds-memory and of protection-overcommit on nodes."""
    path = ROOT / "tests/cases/lint/limit-exceeds-memory.yaml"
    findings = lint(load_tenants(str(path), contradictions_are_errors=False),
                    load_topology_file(_topo()))
    assert [f"{f.line}: {f.rule}: {f.message}" for f in findings] == [
        "15: limit-exceeds-memory: tenant host has memory_max 500G but the host has 192G of "
        "RAM: the limit is never reached, the tenant is pushed into swap (or the kernel "
        "OOM-kills on the host) first",
        "21: limit-exceeds-memory: tenant node has memory_max 120G but its memory is bound to "
        "node 0 (96G): past 96G it swaps or the kernel OOM-kills it on that node, before the "
        "limit",
        "27: limit-exceeds-memory: tenant remote has memory_max 120G but its CPUs' node 1 "
        "holds 96G: beyond that its memory comes from other nodes (remote memory, slower)",
    ]
    assert all(f.level == "warning" for f in findings)


def test_protection_beyond_bound_nodes_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("version: 1\ntenants:\n  a: {cpus: \"0-3\", memory_low: 50G}\n"
                    "  b: {cpus: \"4-7\", memory_low: 50G}\n")
    findings = lint(load_tenants(str(path), contradictions_are_errors=False),
                    load_topology_file(_topo()))
    over = [f for f in findings if f.rule == "protection-overcommit"]
    assert [(f.line, f.level, f.message) for f in over] == [
        (4, "error", "tenants a, b protect 100G (memory_low + memory_min) with their memory "
         "bound to node 0, which has 96G: protection beyond the memory it can be given "
         "protects nobody")]
