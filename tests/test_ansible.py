"""The Ansible collection in ansible/ (slicectl.fleet) on the host.

The modules run in the test process with ansible-core's helper for testing modules (two tests
run them as Ansible does, a process reading its arguments as JSON), against the real
`slicectl` of this checkout and a fake systemd on a private dbus-daemon (conftest), so
argument handling and the mapping of slicectl's output to Ansible's results (changed, check
mode, diff mode, failures) are checked against real output. One test drives them through
`ansible-playbook`; `ansible-galaxy collection build` and `ansible-test sanity` run too. The
real systemd, the role and the wheel install are the e2e tier's (tests/e2e/test_ansible.py).

Why this module runs past 400 lines: one collection's two modules, its playbook, `ansible-galaxy
collection build` and `ansible-test sanity` share the fixtures built here once (the installed
collection, a host with a fake systemd).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from slicectl.demo.fakesystemd import FakeSystemd

ROOT = Path(__file__).resolve().parent.parent
COLLECTION = ROOT / "ansible"
BIN = Path(sys.executable).parent
SYSFS = ROOT / "tests/fixtures/sysfs"
TOPOLOGY = ROOT / "tests/fixtures/topologies/xeon-2s-smt.json"

TENANTS = """\
# Tenants of this host (kept by slicectl write)
version: 1
housekeeping: {cpus: 2}
tenants:
  db1: {cpus: 4, cpu_weight: 300, memory_max: 512M}   # the database
  web: {cpu_weight: 50}
profiles:
  night:
    db1: {cpus: 2}
"""
CONFIG: dict[str, Any] = {
    "version": 1, "housekeeping": {"cpus": 2},
    "tenants": {"db1": {"cpus": 4, "cpu_weight": 300, "memory_max": "512M"},
                "web": {"cpu_weight": 80}},
    "profiles": {"night": {"db1": {"cpus": 2}}},
}


@pytest.fixture(scope="session")
def collections(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A collections path holding ansible/ as ansible_collections/slicectl/fleet."""
    root = tmp_path_factory.mktemp("collections")
    (root / "ansible_collections" / "slicectl").mkdir(parents=True)
    (root / "ansible_collections" / "slicectl" / "fleet").symlink_to(COLLECTION)
    return root


def module_env(collections: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(collections), "ANSIBLE_COLLECTIONS_PATH":
            str(collections), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(collections /
            "tmp"), "ANSIBLE_REMOTE_TEMP": str(collections / "tmp")}


async def run_module(collections: Path, name: str, args: dict[str, Any], check: bool = False,
                     diff: bool = False, process: bool = False) -> dict[str, Any]:
    """Run module NAME with ARGS; its JSON result.

    In this process by default, with ansible-core's own helper for testing modules
    (`ansible.module_utils.testing.patch_module_args`): the module's `main()`, argument
    checks and `exit_json`/`fail_json` printing its JSON, without a new interpreter importing
    Ansible each time (about 0.45 s of CPU a run). With `process`, as Ansible runs it: a
    process reading the arguments as JSON on stdin. In a thread either way, so that the
    fake systemd in this process keeps answering meanwhile.
    """
    module_args = {**args, "_ansible_check_mode": check, "_ansible_diff": diff}
    if not process:
        return await asyncio.to_thread(_run_in_process, collections, name, module_args)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(COLLECTION / "plugins" / "modules" / f"{name}.py"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=module_env(collections))
    out, err = await proc.communicate(json.dumps({"ANSIBLE_MODULE_ARGS": module_args}).encode())
    return _result(name, out.decode(), err.decode())


def _run_in_process(collections: Path, name: str, module_args: dict[str, Any]) -> dict[str, Any]:
    import contextlib
    import importlib
    import io

    from ansible.module_utils.testing import patch_module_args

    if str(collections) not in sys.path:
        sys.path.append(str(collections))  # the modules import their module_utils from there
    module = importlib.import_module(f"ansible_collections.slicectl.fleet.plugins.modules.{name}")
    out, err = io.StringIO(), io.StringIO()
    with (patch_module_args(module_args), contextlib.redirect_stdout(out),
          contextlib.redirect_stderr(err), pytest.raises(SystemExit)):
        module.main()  # exit_json and fail_json print the result and exit
    return _result(name, out.getvalue(), err.getvalue())


def _result(name: str, out: str, err: str) -> dict[str, Any]:
    try:
        result: dict[str, Any] = json.loads(out)
    except ValueError:
        raise AssertionError(f"{name} printed no JSON:\n{out}{err}") from None
    return result


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@dataclass
class Host:
    """A host for the modules: unit dir, cgroup tree and bus of the fake systemd, and a
    `slicectl` that adds what plan and apply hide from users (lock, control dir, topology)."""

    root: Path
    bus: str
    executable: Path

    @property
    def unit_dir(self) -> Path:
        return self.root / "units"

    @property
    def cgroup_root(self) -> Path:
        return self.root / "cgroup"

    def args(self, **more: Any) -> dict[str, Any]:
        return {"unit_dir": str(self.unit_dir), "cgroup_root": str(self.cgroup_root),
                "bus": self.bus, "executable": str(self.executable), **more}


@pytest.fixture
def host(tmp_path: Path, dbus_daemon: str, fake_systemd: FakeSystemd) -> Host:
    (tmp_path / "units").mkdir()
    wrapper = tmp_path / "slicectl"
    slicectl = f"{sys.executable} -m slicectl"
    wrapper.write_text(f"""#!/bin/sh
verb=$1; shift
case $verb in
  apply) exec {slicectl} apply "$@" --topology {TOPOLOGY} \\
           --control-dir {tmp_path}/control ;;
  plan) exec {slicectl} plan "$@" --topology {TOPOLOGY} ;;
  *) exec {slicectl} "$verb" "$@" ;;
esac
""")
    wrapper.chmod(0o755)
    return Host(tmp_path, dbus_daemon, wrapper)


# --- argument handling: Ansible's usual errors -------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    ({"tenants": "/x.yaml", "bogus": 1},
     "Unsupported parameters for (basic.py) module: bogus. Supported parameters include: "
     "bus, cgroup_root, config, dest, executable, profile, repack, templates, tenants, "
     "unit_dir."),
    ({"tenants": "/x.yaml", "config": {"version": 1}},
     "parameters are mutually exclusive: tenants|config"),
    ({}, "one of the following is required: tenants, config"),
    ({"config": "tenants: {}"},
     "argument 'config' is of type str and we were unable to convert to dict"),
])
async def test_bad_arguments_fail_like_every_module(collections: Path, args: dict[str, Any],
                                                    message: str) -> None:
    result = await run_module(collections, "tenants", args)
    assert result["failed"] is True
    assert result["msg"].startswith(message), result["msg"]


async def test_missing_tenants_file_fails_before_running_slicectl(
        collections: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    result = await run_module(collections, "tenants", {"tenants": str(missing),
                                                       "executable": "/bin/false"},
                              process=True)
    assert result["failed"] is True
    assert result["msg"] == f"tenants: no such file on the target: {missing}"


async def test_missing_slicectl_is_named(collections: Path, tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TENANTS)
    result = await run_module(collections, "tenants", {
        "tenants": str(tmp_path / "t.yaml"), "executable": str(tmp_path / "bin/slicectl")})
    assert result["failed"] is True
    assert result["msg"] == f"executable: {tmp_path}/bin/slicectl is not an executable file"


# --- check mode, diff mode, apply, idempotency (against the fake systemd) ----------------------


async def test_check_mode_plans_and_changes_nothing(collections: Path, host: Host,
                                                    fake_systemd: FakeSystemd) -> None:
    (host.root / "t.yaml").write_text(TENANTS)
    calls = len(fake_systemd.calls)
    result = await run_module(collections, "tenants", host.args(tenants=str(host.root /
                                                                            "t.yaml")),
                              check=True)
    assert result["changed"] is True and "failed" not in result, result
    plan = result["plan"]
    assert plan["format"] == "slicectl-plan/1"
    assert [t["name"] for t in plan["tenants"]] == ["db1", "web"]
    assert "tenants-db1.slice" in plan["changes"]["files"]["created"]
    assert plan["changes"]["start"] and "apply" not in result and "diff" not in result
    assert snapshot(host.unit_dir) == {}
    changing = {"SetUnitProperties", "StartUnit", "StopUnit", "Reload"}
    assert not changing & {m for m, _ in fake_systemd.calls[calls:]}


async def test_diff_mode_shows_files_and_live_properties(collections: Path, host: Host) -> None:
    tenants = host.root / "t.yaml"
    tenants.write_text(TENANTS)
    await run_module(collections, "tenants", host.args(tenants=str(tenants)))
    tenants.write_text(TENANTS.replace("cpu_weight: 300", "cpu_weight: 500"))
    result = await run_module(collections, "tenants", host.args(tenants=str(tenants)),
                              check=True, diff=True)
    assert result["changed"] is True
    by_header = {d["before_header"]: d for d in result["diff"]}
    dropin = by_header[f"{host.unit_dir}/tenants-db1.slice.d/50-slicectl.conf"]
    assert "CPUWeight=300" in dropin["before"] and "CPUWeight=500" in dropin["after"]
    live = by_header["systemd: live properties"]
    assert live["before"] == "tenants-db1.slice: CPUWeight=300\n"
    assert live["after"] == "tenants-db1.slice: CPUWeight=500\n"
    assert set(by_header) == {dropin["before_header"], "systemd: live properties"}


async def test_apply_then_nothing_to_do(collections: Path, host: Host) -> None:
    tenants = host.root / "t.yaml"
    tenants.write_text(TENANTS)
    first = await run_module(collections, "tenants", host.args(tenants=str(tenants)),
                             diff=True)
    assert first["changed"] is True, first
    assert "tenants-db1.slice" in first["apply"]["verified"]
    assert first["plan"]["changes"]["files"]["created"]
    created = {d["after_header"] for d in first["diff"] if not d["before"]}
    assert f"{host.unit_dir}/tenants-db1.slice" in created
    assert (host.cgroup_root / "tenants.slice/tenants-db1.slice/cpu.weight").read_text() \
        .strip() == "300"
    files, cgroups = snapshot(host.unit_dir), snapshot(host.cgroup_root)
    second = await run_module(collections, "tenants", host.args(tenants=str(tenants)),
                              diff=True)
    assert second["changed"] is False and "apply" not in second and second["diff"] == []
    assert second["plan"]["changes"]["changed"] is False
    assert snapshot(host.unit_dir) == files and snapshot(host.cgroup_root) == cgroups


async def test_profile_is_passed_to_plan_and_apply(collections: Path, host: Host) -> None:
    tenants = host.root / "t.yaml"
    tenants.write_text(TENANTS)
    await run_module(collections, "tenants", host.args(tenants=str(tenants)))
    night = await run_module(collections, "tenants", host.args(tenants=str(tenants),
                                                               profile="night"))
    assert night["changed"] is True and night["apply"]["profile"] == "night"
    db1 = next(t for t in night["plan"]["tenants"] if t["name"] == "db1")
    assert db1["cpu_count"] == 2
    assert night["plan"]["profile"] == "night"


async def test_failed_apply_rolls_back_and_restores_the_tenants_file(
        collections: Path, host: Host, fake_systemd: FakeSystemd) -> None:
    dest = host.root / "tenants.yaml"
    dest.write_text(TENANTS)
    await run_module(collections, "tenants", host.args(tenants=str(dest)))
    files, cgroups, text = snapshot(host.unit_dir), snapshot(host.cgroup_root), dest.read_text()
    fake_systemd.fail_on("SetUnitProperties", "tenants-web.slice",
                         error="org.freedesktop.DBus.Error.AccessDenied")
    result = await run_module(collections, "tenants", host.args(config=CONFIG,
                                                                dest=str(dest)))
    assert result["failed"] is True
    assert result["msg"].startswith("slicectl apply failed and rolled the host back: apply "
                                    "failed:"), result["msg"]
    assert "rolled back to the previous state" in result["msg"]
    assert result["tenants_file"] == {"path": str(dest), "changed": False, "restored": True}
    assert dest.read_text() == text
    assert snapshot(host.unit_dir) == files and snapshot(host.cgroup_root) == cgroups


async def test_a_grown_tenant_fails_naming_the_repack_until_repack_is_set(
        collections: Path, host: Host) -> None:
    tenants = host.root / "t.yaml"
    clusters = ("version: 1\nhousekeeping: {cpus: 2}\ntenants:\n  main: {cpus: 8}\n"
                "  pg2: {cpus: 4}\n  pg3: {cpus: 2}\n  pg4: {cpus: 8}\n")
    tenants.write_text(clusters)
    assert (await run_module(collections, "tenants", host.args(tenants=str(tenants))))["changed"]
    tenants.write_text(clusters.replace("main: {cpus: 8}", "main: {cpus: 10}"))
    files = snapshot(host.unit_dir)
    refused = await run_module(collections, "tenants", host.args(tenants=str(tenants)))
    assert refused["failed"] is True
    assert "would split tenant main (numa: local)" in refused["msg"], refused["msg"]
    assert "pg3: node 0 -> 1" in refused["msg"] and "--repack" in refused["msg"]
    assert snapshot(host.unit_dir) == files
    repacked = await run_module(collections, "tenants", host.args(tenants=str(tenants),
                                                                  repack=True))
    assert repacked["changed"] is True, repacked
    assert [m["tenant"] for m in repacked["plan"]["moves"]] == ["pg3"]
    main = next(t for t in repacked["plan"]["tenants"] if t["name"] == "main")
    assert main["cpu_nodes"] == [0] and main["cpu_count"] == 10


# --- config: the tenants document as a mapping --------------------------------------------------


async def test_config_is_written_keeping_comments_then_applied(collections: Path,
                                                               host: Host) -> None:
    dest = host.root / "etc" / "tenants.yaml"
    dest.parent.mkdir()
    dest.write_text(TENANTS)
    result = await run_module(collections, "tenants", host.args(config=CONFIG, dest=str(dest)),
                              diff=True)
    assert result["changed"] is True and result["tenants_file"]["changed"] is True
    text = dest.read_text()
    assert text == TENANTS.replace("web: {cpu_weight: 50}", "web: {cpu_weight: 80}")
    tenants_diff = result["diff"][0]
    assert tenants_diff["before_header"] == str(dest)
    assert tenants_diff["before"] == TENANTS and tenants_diff["after"] == text
    again = await run_module(collections, "tenants", host.args(config=CONFIG, dest=str(dest)))
    assert again["changed"] is False and again["tenants_file"]["changed"] is False


async def test_config_in_check_mode_writes_nothing_and_plans_the_new_file(
        collections: Path, host: Host) -> None:
    dest = host.root / "tenants.yaml"
    result = await run_module(collections, "tenants", host.args(config=CONFIG, dest=str(dest)),
                              check=True, diff=True)
    assert result["changed"] is True and result["tenants_file"]["changed"] is True
    assert not dest.exists() and snapshot(host.unit_dir) == {}
    assert result["plan"]["source"] == str(dest)
    assert result["diff"][0]["before"] == "" and "cpu_weight: 80" in result["diff"][0]["after"]
    dropin = f"{host.unit_dir}/tenants-web.slice.d/50-slicectl.conf"
    web = next(d for d in result["diff"] if d["after_header"] == dropin)
    # The generated files name the tenants file as the source, not check mode's copy.
    assert "from tenants.yaml." in web["after"] and "CPUWeight=80" in web["after"]


async def test_invalid_config_fails_located_and_writes_nothing(collections: Path,
                                                               host: Host) -> None:
    dest = host.root / "tenants.yaml"
    dest.write_text(TENANTS)
    config = json.loads(json.dumps(CONFIG))
    config["tenants"]["web"]["cpu_weigth"] = 80
    result = await run_module(collections, "tenants", host.args(config=config, dest=str(dest)))
    assert result["failed"] is True
    # The message and its hint, as `slicectl write` printed them (lines of the new file).
    error = result["errors"][0]
    assert error["message"] == f"{dest}:6: tenants.web.cpu_weigth: unknown key"
    assert error["hint"].startswith("did you mean 'cpu_weight'? known keys: ")
    assert result["msg"] == ("the tenants document is not valid, nothing was written: "
                             f"{error['message']} (hint: {error['hint']})")
    assert dest.read_text() == TENANTS and snapshot(host.unit_dir) == {}


async def test_infeasible_tenants_in_check_mode_name_the_real_file(collections: Path,
                                                                   host: Host) -> None:
    dest = host.root / "tenants.yaml"
    config = {"version": 1, "tenants": {"huge": {"cpus": 64}}}
    result = await run_module(collections, "tenants", host.args(config=config, dest=str(dest)),
                              check=True)
    assert result["failed"] is True
    assert result["msg"].startswith(f"slicectl plan failed, nothing was applied: {dest}:"), \
        result["msg"]
    assert "tenants.huge.cpus" in result["msg"] and "slicectl-" not in result["msg"]
    assert not dest.exists()


# --- topology facts --------------------------------------------------------------------------


async def test_topology_facts(collections: Path) -> None:
    result = await run_module(collections, "topology_facts", {
        "sysfs": str(SYSFS / "cpuless-memory-node"), "executable": str(BIN / "slicectl")},
        process=True)
    facts = result["ansible_facts"]
    assert result["changed"] is False
    assert facts["slicectl_topology"]["format"] == "slicectl-topology/1"
    assert facts["slicectl_nodes"] == [
        {"id": 0, "cpus": "0-3,8-11", "cpu_count": 8, "memory_bytes": 64 << 30},
        {"id": 1, "cpus": "4-7,12-15", "cpu_count": 8, "memory_bytes": 64 << 30},
        {"id": 2, "cpus": "", "cpu_count": 0, "memory_bytes": 256 << 30}]
    assert facts["slicectl_smt"] == 2


async def test_topology_facts_failure_carries_slicectl_message(collections: Path,
                                                                tmp_path: Path) -> None:
    result = await run_module(collections, "topology_facts", {
        "sysfs": str(tmp_path), "executable": str(BIN / "slicectl")})
    assert result["failed"] is True
    assert result["msg"].startswith("slicectl topology failed: ")
    assert result["errors"] and result["errors"][0]["hint"]


# --- through ansible-playbook ---------------------------------------------------------------


def recap(output: str) -> dict[str, int]:
    line = next(ln for ln in output.splitlines() if ln.startswith("localhost "))
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


@pytest.mark.external
async def test_playbook_check_diff_then_apply_then_ok(collections: Path, host: Host) -> None:
    tenants = host.root / "t.yaml"
    tenants.write_text(TENANTS)
    playbook = host.root / "site.yml"
    args = "\n".join(f"        {k}: {v}" for k, v in host.args(tenants=str(tenants)).items())
    playbook.write_text(f"""- hosts: localhost
  gather_facts: false
  tasks:
    - name: Apply the tenants
      slicectl.fleet.tenants:
{args}
""")

    async def play(*flags: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            str(BIN / "ansible-playbook"), "-c", "local", "-i", "localhost,", "-e",
            f"ansible_python_interpreter={sys.executable}", str(playbook), *flags,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=module_env(collections))
        out = (await proc.communicate())[0].decode()
        assert proc.returncode == 0, out
        return out

    checked = await play("--check", "--diff")
    assert recap(checked)["changed"] == 1 and snapshot(host.unit_dir) == {}
    assert f"+++ after: {host.unit_dir}/tenants-db1.slice.d/50-slicectl.conf" in checked
    assert "+tenants-db1.slice: active" in checked
    assert recap(await play())["changed"] == 1
    assert recap(await play())["changed"] == 0



# --- the role in generator mode (slicectl_mode: generator) -------------------------------------


@dataclass
class GeneratorHost:
    """A host for the role in generator mode: the fake systemd's host, and a `slicectl` whose
    `generator enable` links a stand-in for the generator (the role looks for the link) and
    does what the generator and enable do for plan: the units in force, running cgroups
    matching (here an apply into the unit dir). It logs every `generator` call."""

    host: Host
    playbook: Path

    @property
    def link(self) -> Path:
        return self.host.root / "system-generators" / "slicectl-generator"

    @property
    def tenants(self) -> Path:
        return self.host.root / "etc" / "slicectl" / "tenants.yaml"

    @property
    def calls(self) -> list[str]:
        log = self.host.root / "generator.log"
        return log.read_text().splitlines() if log.exists() else []

    async def play(self, collections: Path, *flags: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            str(BIN / "ansible-playbook"), "-c", "local", "-i", "localhost,", "-e",
            f"ansible_python_interpreter={sys.executable}", str(self.playbook), *flags,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=module_env(collections))
        out = (await proc.communicate())[0].decode()
        assert proc.returncode == 0, out
        return out


@pytest.fixture
def generator_host(host: Host) -> GeneratorHost:
    root, slicectl = host.root, f"{sys.executable} -m slicectl"
    where = (f"--unit-dir {host.unit_dir} --cgroup-root {host.cgroup_root} --bus '{host.bus}' "
             f"--topology {TOPOLOGY}")
    wrapper = root / "fake-slicectl"
    wrapper.write_text(f"""#!/bin/sh
verb=$1; shift
case $verb in
  topology) exec {slicectl} topology "$@" --sysfs {SYSFS / "cpuless-memory-node"} ;;
  plan) exec {slicectl} plan "$@" {where} ;;
  apply) exec {slicectl} apply "$@" {where} --control-dir {root}/control ;;
  generator) echo "generator $*" >> {root}/generator.log
    [ "$1" = enable ] || exit 1
    mkdir -p {root}/system-generators && ln -s /bin/true {root}/system-generators/slicectl-generator
    exec {slicectl} apply "$2" --yes --json {where} --control-dir {root}/control >/dev/null ;;
  *) exec {slicectl} "$verb" "$@" ;;
esac
""")
    wrapper.chmod(0o755)
    role_vars = {
        "slicectl_mode": "generator", "slicectl_install": False,
        "slicectl_executable": str(wrapper),
        "slicectl_tenants_path": str(root / "etc" / "slicectl" / "tenants.yaml"),
        "slicectl_generator_link": str(root / "system-generators" / "slicectl-generator"),
        "slicectl_housekeeping": CONFIG["housekeeping"], "slicectl_tenants": CONFIG["tenants"],
    }
    playbook = root / "site.yml"
    playbook.write_text(f"""- hosts: localhost
  gather_facts: false
  vars: {json.dumps(role_vars)}
  roles: [slicectl.fleet.host]
""")
    return GeneratorHost(host, playbook)


@pytest.mark.external
async def test_role_generator_mode_enables_once_then_reports_no_change(
        collections: Path, generator_host: GeneratorHost) -> None:
    host = generator_host
    first = await host.play(collections)
    assert recap(first)["changed"] == 2, first  # the tenants file written, the generator enabled
    assert host.calls == [f"generator enable {host.tenants}"]
    assert host.link.is_symlink() and "cpu_weight: 80" in host.tenants.read_text()
    assert (host.host.cgroup_root / "tenants.slice/tenants-db1.slice/cpu.weight").read_text() \
        .strip() == "300"
    files, cgroups = snapshot(host.host.unit_dir), snapshot(host.host.cgroup_root)
    second = await host.play(collections)
    assert recap(second)["changed"] == 0, second
    assert host.calls == [f"generator enable {host.tenants}"]
    assert snapshot(host.host.unit_dir) == files and snapshot(host.host.cgroup_root) == cgroups
    # A change afterwards is applied (through the generator), without enabling again.
    tenants = {**CONFIG["tenants"], "web": {"cpu_weight": 90}}
    third = await host.play(collections, "-e", json.dumps({"slicectl_tenants": tenants}))
    assert recap(third)["changed"] == 1, third
    assert host.calls == [f"generator enable {host.tenants}"]
    assert "cpu_weight: 90" in host.tenants.read_text()


@pytest.mark.external
async def test_role_generator_mode_check_changes_nothing(
        collections: Path, generator_host: GeneratorHost, fake_systemd: FakeSystemd) -> None:
    host = generator_host
    calls = len(fake_systemd.calls)
    checked = await host.play(collections, "--check")
    assert recap(checked)["changed"] == 2, checked  # would write the file, would enable
    assert "Would not run command" not in checked
    assert host.calls == [] and not host.link.exists() and not host.tenants.exists()
    assert snapshot(host.host.unit_dir) == {}
    changing = {"SetUnitProperties", "StartUnit", "StopUnit", "Reload"}
    assert not changing & {m for m, _ in fake_systemd.calls[calls:]}


# --- the collection as a package ---------------------------------------------------------------


@pytest.mark.external
def test_galaxy_build_makes_the_tarball(tmp_path: Path, collections: Path) -> None:
    proc = subprocess.run([BIN / "ansible-galaxy", "collection", "build", str(COLLECTION),
                           "--output-path", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tarball = tmp_path / "slicectl-fleet-0.1.0.tar.gz"
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        manifest = json.load(tar.extractfile("MANIFEST.json"))  # type: ignore[arg-type]
    assert manifest["collection_info"]["namespace"] == "slicectl"
    assert manifest["collection_info"]["name"] == "fleet"
    assert {"plugins/modules/tenants.py", "plugins/modules/topology_facts.py",
            "plugins/module_utils/slicectl.py", "roles/host/tasks/main.yml",
            "roles/host/tasks/install.yml", "roles/host/defaults/main.yml",
            "meta/runtime.yml"} <= names
    # ... and installs: ansible-doc reads both modules from the installed tarball.
    installed = tmp_path / "installed"
    proc = subprocess.run([BIN / "ansible-galaxy", "collection", "install", str(tarball), "-p",
                           str(installed)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    env = {**module_env(collections), "ANSIBLE_COLLECTIONS_PATH": str(installed)}
    for module in ("tenants", "topology_facts"):
        doc = subprocess.run([BIN / "ansible-doc", f"slicectl.fleet.{module}"],
                             capture_output=True, text=True, env=env)
        assert doc.returncode == 0 and "OPTIONS" in doc.stdout, doc.stderr


# --- ansible-test sanity -------------------------------------------------------------------------

# ansible-test keeps its sanity virtual environments and pip bootstrap here (not in ~/.ansible).
SANITY_HOME = Path(os.environ.get("SLICECTL_ANSIBLE_TEST_HOME",
                                  Path.home() / ".cache" / "slicectl-ansible-test"))


def pip_bootstrap(home: Path) -> None:
    """ansible-test creates each sanity virtual environment without pip and bootstraps pip with
    a script it downloads from ci-files.testing.ansible.com, which this network does not
    reach (only the package index). Stand in for that script, in ansible-test's documented
    cache location under `home`: install the same pip from a pip wheel fetched from the
    index, into the interpreter that runs the script (the new environment)."""
    # Importing ansible-test lowers this process's soft RLIMIT_NOFILE to 1024 for good
    # (ansible_test._internal.init): put it back, or the tests that run later in this xdist
    # worker inherit the lower limit (the exporter's fd-count test dup2()s to fd 3000).
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        from ansible_test._internal.python_requirements import get_venv_packages
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, limits)

    version = get_venv_packages(type("Python", (), {"version": "3.11"})())["pip"]
    wheels = home / "wheels"
    wheel = wheels / f"pip-{version}-py3-none-any.whl"
    if not wheel.exists():
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                               "--dest", str(wheels), f"pip=={version}"],
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"cannot fetch pip {version}: {proc.stderr}"
    script = home / ".ansible" / "test" / "cache" / f"get_pip_{version.replace('.', '_')}.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f'''"""Stands in for get-pip.py (see tests/test_ansible.py)."""
import sys
sys.path.insert(0, {str(wheel)!r})
from pip._internal.cli.main import main
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--ignore-installed", *args]))
''')


@pytest.fixture
def content_root(tmp_path: Path) -> Iterator[Path]:
    """ansible/ copied to .../ansible_collections/slicectl/fleet, where ansible-test wants it
    (a copy: ansible-test writes tests/output there)."""
    root = tmp_path / "ansible_collections" / "slicectl" / "fleet"
    shutil.copytree(COLLECTION, root, ignore=shutil.ignore_patterns("__pycache__", "output"))
    yield root


@pytest.mark.external
def test_ansible_test_sanity_passes(content_root: Path) -> None:
    SANITY_HOME.mkdir(parents=True, exist_ok=True)
    pip_bootstrap(SANITY_HOME)
    env = {**os.environ, "HOME": str(SANITY_HOME), "PATH": f"{BIN}:{os.environ['PATH']}"}
    proc = subprocess.run([BIN / "ansible-test", "sanity", "--local", "--python", "3.11",
                           "--color", "no"], cwd=content_root, capture_output=True, text=True,
                          env=env, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]
    assert 'Running sanity test "validate-modules"' in proc.stdout
    assert 'Running sanity test "pylint"' in proc.stdout
