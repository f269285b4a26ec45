"""The Ansible collection (ansible/) on the real guest: `ansible-playbook -c local` with the
role slicectl.fleet.host, as a fleet operator runs it against one host.

The role installs slicectl into a virtual environment from a wheel built on the host (the
guest has no index: `tests/testbed/run` stages the wheel and its dependencies' wheels in
`/mnt/results/install/wheels`), writes the tenants file from inventory variables (group and
host variables, one tenant sized from the topology facts) and applies it. Every assertion
reads what an operator would: the play recap and diff output, the files, the cgroup files,
`systemctl show`, /proc/PID/status of a running process.

Ansible under TCG is slow (seconds per task), so the playbook runs are few and small: the
module-scoped `fleet` fixture runs the role twice (the first run and the idempotent second
run), and each later test adds one playbook of one or two tasks of the module alone.

Why this module runs past 400 lines: every test runs on the host the one `fleet` fixture set
up (a venv installed by the role, which costs minutes under TCG); split into files, each would
install it again.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from . import guest
from .conftest import Units, undoing_unit_changes

CHECKOUT = Path(os.environ.get("SLICECTL_CHECKOUT", Path(__file__).resolve().parents[2]))
WHEELS = Path(os.environ.get("SLICECTL_RESULTS", "/mnt/results")) / "install" / "wheels"
ETC = Path("/etc/systemd/system")
VENV = Path("/opt/slicectl-fleet")
# Seconds one ansible-playbook run may take (the first run creates a venv and installs:
# about 5 minutes under TCG).
PLAYBOOK_TIMEOUT = float(os.environ.get("SLICECTL_E2E_PLAYBOOK_TIMEOUT", "900"))
TENANT_UNITS = ("tenants.slice", "tenants-web.slice", "tenants-batch.slice", "tenants-db.slice")
UNITS = (*TENANT_UNITS, "system.slice", "user.slice", "init.scope")
CGROUP_FILES = ("cpuset.cpus", "cpuset.mems", "cpu.weight", "cpu.max", "memory.max",
                "memory.high", "memory.low", "memory.min", "memory.swap.max")
# `systemctl show` lines that count or measure (they move between two reads of an idle unit).
VOLATILE = re.compile(r"^\w*(Current|Peak|Available|NSec|Bytes|Packets|Operations)=")

PLAYBOOK = """\
- name: Tenants on every host
  hosts: all
  gather_facts: false
  roles:
    - role: slicectl.fleet.host
"""
# The module alone (one task: cheaper than the role's nine under TCG).
MODULE = """\
- name: Tenants
  hosts: all
  gather_facts: false
  tasks:
    - name: Apply the tenants
      slicectl.fleet.tenants:
{args}
"""

# The fleet's tenants (group_vars) plus this host's own (host_vars), merged as docs/fleet.md
# shows; `db` gets every CPU of the largest node, from the topology facts.
GROUP_VARS = """\
slicectl_venv: {venv}
slicectl_wheel: {wheel}
slicectl_pip_args: [--no-index, --find-links, {wheels}, --no-compile]  # pip compiling every
# dependency's modules takes minutes under TCG; Python compiles what slicectl imports, once
slicectl_link: {link}
slicectl_tenants_path: {tenants}
slicectl_housekeeping: {{cpus: 2}}
fleet_tenants:
  web: {{cpu_weight: 200, memory_max: 96M}}
  batch: {{cpus: 2, cpu_weight: 50}}
slicectl_tenants: "{{{{ fleet_tenants | combine(host_tenants | default({{}}), recursive=True) }}}}"
slicectl_profiles:
  night:
    batch: {{cpus: 1}}
    db: {{cpus: 1}}
"""
HOST_VARS = """\
host_tenants:
  db:
    cpus: "{{ ansible_facts.slicectl_nodes | map(attribute='cpu_count') | max }}"
    cpu_weight: 300
    memory_max: 256M
"""


@dataclass
class Fleet:
    """An inventory for the guest, the playbook, and the runs made so far."""

    root: Path
    runs: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    tasks: dict[str, list[tuple[float, str]]] = field(default_factory=dict)  # banners, when
    after_first: dict[str, object] = field(default_factory=dict)  # host_state()

    @property
    def tenants(self) -> Path:
        return self.root / "etc" / "tenants.yaml"

    def write_inventory(self) -> None:
        wheel = next(WHEELS.glob("slicectl-*.whl"))
        inventory = self.root / "inventory"
        (inventory / "group_vars").mkdir(parents=True, exist_ok=True)
        (inventory / "host_vars").mkdir(exist_ok=True)
        (inventory / "hosts.yml").write_text(
            "all:\n  hosts:\n    testbed:\n      ansible_connection: local\n"
            f"      ansible_python_interpreter: {sys.executable}\n")
        (inventory / "group_vars" / "all.yml").write_text(GROUP_VARS.format(
            venv=VENV, wheel=wheel, wheels=WHEELS, link=self.root / "bin" / "slicectl",
            tenants=self.tenants))
        (inventory / "host_vars" / "testbed.yml").write_text(HOST_VARS)

    def playbook(self, name: str, text: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Run `ansible-playbook -c local` (the inventory says so) and keep its output."""
        path = self.root / f"{name}.yml"
        path.write_text(text)
        # No PYTHONPATH (the testbed's points into the checkout): what the role installs and
        # the modules run must not see the checkout or the testbed's packages, as on a real
        # host. Ansible itself finds its packages (the testbed's) through sys.path. No
        # PYTHONDONTWRITEBYTECODE (the testbed's keeps the read-only checkout clean): on a real
        # host the installed slicectl keeps its compiled modules, and without them every
        # slicectl the modules run compiled its imports again (about 20 s each under TCG).
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
        env |= {"ANSIBLE_COLLECTIONS_PATH": str(self.root / "collections"),
                "ANSIBLE_PIPELINING": "1", "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_LOCAL_TEMP": str(self.root / "tmp"),
                "ANSIBLE_REMOTE_TEMP": str(self.root / "tmp")}
        launcher = (f"import sys; sys.path[:0] = {self.ansible_path()!r}; "
                    "sys.argv[0] = 'ansible-playbook'; "
                    "from ansible.cli.playbook import main; sys.exit(main())")
        start = time.monotonic()
        cmd = [sys.executable, "-c", launcher, "-i", str(self.root / "inventory"), str(path),
               *args]
        lines: list[tuple[float, str]] = []  # stdout, with when each line came
        with (open(self.root / f"{name}.stderr", "w+") as err,
              subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                               env=env) as child):
            assert child.stdout is not None
            out = child.stdout
            reader = threading.Thread(target=lambda: lines.extend(
                (time.monotonic() - start, line) for line in out), daemon=True)
            reader.start()
            try:
                child.wait(timeout=PLAYBOOK_TIMEOUT)
            except subprocess.TimeoutExpired:
                stuck = processes_below(child.pid)  # before the kill: what it waits on
                child.kill()
                child.wait()
                reader.join()
                err.seek(0)
                raise AssertionError(
                    f"ansible-playbook {name} timed out after {PLAYBOOK_TIMEOUT:.0f} s; its "
                    f"processes then:\n{stuck}\nits output so far (seconds from its start):\n"
                    + "".join(f"{t:7.1f} {line}" for t, line in lines) + err.read()
                ) from None
            reader.join()
            err.seek(0)
            stderr = err.read()
        proc = subprocess.CompletedProcess(cmd, child.returncode, "".join(ln for _, ln in lines),
                                           stderr)
        self.seconds[name] = time.monotonic() - start
        self.tasks[name] = [(t, line.strip(" *\n")) for t, line in lines
                            if line.startswith(("TASK [", "PLAY RECAP"))]
        self.runs[name] = proc
        return proc

    def ansible_path(self) -> list[str]:
        """Where ansible-playbook imports ansible-core and its packages from: a copy on the
        guest's disk of the tar `tests/testbed/run` stages (ansible from the 9p share reads
        every module and module payload across 9p: a role of nine tasks took over 15 minutes
        under TCG), else the testbed's packages on the share."""
        local = self.root / "ansible-packages"
        if not local.exists() and (tar := WHEELS.parent / "ansible.tar").exists():
            with tarfile.open(tar) as packages:
                packages.extractall(local.with_suffix(".tmp"))  # our own tar; 3.11.2 has no filter=
            local.with_suffix(".tmp").rename(local)
        if local.exists():
            return [str(local)]
        return [p for p in os.environ.get("PYTHONPATH", "").split(":")
                if p and Path(p) != CHECKOUT]

    def role(self, name: str, *args: str) -> subprocess.CompletedProcess[str]:
        return self.playbook(name, PLAYBOOK, *args)

    def module(self, name: str, *args: str, **options: object) -> subprocess.CompletedProcess[
            str]:
        """A playbook running slicectl.fleet.tenants with OPTIONS and the role's slicectl."""
        options["executable"] = VENV / "bin" / "slicectl"
        lines = "\n".join(f"        {k}: {v}" for k, v in options.items())
        return self.playbook(name, MODULE.format(args=lines), *args)

    def state(self) -> dict[str, object]:
        """host_state() and the tenants file the role writes."""
        return {**host_state(), "tenants": self.tenants.read_bytes()}


def processes_below(pid: int) -> str:
    """The process tree under `pid`: state, kernel wait channel, command, and the kernel stack
    of each, so a hung playbook says what it was waiting for."""
    tree = guest.run(["ps", "-e", "--forest", "-o", "pid,ppid,etimes,time,stat,wchan:24,args"],
                     check=False).stdout
    lines = tree.splitlines()
    below, keep = {pid}, lines[:1]
    for line in lines[1:]:
        fields = line.split()
        if int(fields[1]) in below or int(fields[0]) == pid:
            below.add(int(fields[0]))
            keep.append(line[:300])
    for p in sorted(below):
        try:
            keep.append(f"--- /proc/{p}/stack\n" + Path(f"/proc/{p}/stack").read_text())
        except OSError:
            pass
    return "\n".join(keep)


def recap(proc: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """The host's counters from the PLAY RECAP line (ok=, changed=, failed=, ...)."""
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("testbed "))
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


def output(proc: subprocess.CompletedProcess[str]) -> str:
    return f"--- stdout ---\n{proc.stdout}--- stderr ---\n{proc.stderr}"


def task_status(proc: subprocess.CompletedProcess[str], task: str) -> str:
    """`ok`, `changed`, `skipping`, `fatal` ... for the task whose banner names `task`."""
    text = proc.stdout.split(f"{task}] ***", 1)[1]
    return re.search(r"^(ok|changed|skipping|fatal|failed): \[testbed\]", text, re.M)[1]  # type: ignore[index]


def host_state() -> dict[str, object]:
    """What an apply may change: slicectl's files, cgroup files, `systemctl show`."""
    files = {str(p): p.read_bytes() for p in sorted(ETC.rglob("*")) if p.is_file()}
    cgroups: dict[str, str | None] = {}
    show: dict[str, list[str]] = {}
    for unit in UNITS:
        lines = guest.systemctl("show", unit).stdout.splitlines()
        show[unit] = [ln for ln in lines if not VOLATILE.match(ln)]
        group = guest.unit_property(unit, "ControlGroup")
        for name in CGROUP_FILES:
            path = guest.CGROUP_ROOT / group.lstrip("/") / name
            cgroups[f"{unit}/{name}"] = path.read_text() if group and path.exists() else None
    return {"files": files, "cgroups": cgroups, "show": show}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """The role applied twice to the guest (the first and the idempotent second run); undone
    when the module's tests are done."""
    root = tmp_path_factory.mktemp("fleet")
    collections = root / "collections" / "ansible_collections" / "slicectl"
    collections.mkdir(parents=True)
    (collections / "fleet").symlink_to(CHECKOUT / "ansible")
    (root / "bin").mkdir()  # where the role links slicectl (the folder must exist)
    fleet = Fleet(root)
    fleet.write_inventory()
    with undoing_unit_changes(Units()) as units:
        units.track(*TENANT_UNITS)
        first = fleet.role("first")
        assert first.returncode == 0, output(first)
        fleet.after_first = fleet.state()
        fleet.role("second")
        yield fleet
        (ETC / ".slicectl-manifest.json").unlink(missing_ok=True)
    print("ansible-playbook runs: " + ", ".join(f"{name} {seconds:.1f} s"
                                                for name, seconds in fleet.seconds.items()))
    for name, banners in fleet.tasks.items():  # where each run's time went
        print(f"{name}: " + "; ".join(f"{t:.1f} s {banner}" for t, banner in banners))


def test_first_run_installs_writes_and_applies(fleet: Fleet) -> None:
    proc = fleet.runs["first"]
    assert proc.returncode == 0, output(proc)
    assert recap(proc)["failed"] == 0 and recap(proc)["changed"] >= 3, output(proc)
    assert task_status(proc, "Install slicectl into the virtual environment") == "changed"
    assert task_status(proc, "Write the tenants file and apply it") == "changed"
    # Installed from the wheel, into the venv, linked onto PATH.
    version = subprocess.run([str(fleet.root / "bin" / "slicectl"), "--version"],
                             capture_output=True, text=True)
    assert version.stdout.startswith("slicectl "), version.stderr
    assert (fleet.root / "bin" / "slicectl").resolve() == VENV / "bin" / "slicectl"
    # The tenants file from inventory variables; db sized from the topology facts.
    text = fleet.tenants.read_text()
    biggest = max(len(c) for c in guest.numa_nodes().values())
    assert f"cpus: {biggest}" in text and "web:" in text and "batch:" in text
    # Applied live.
    assert len(guest.parse_cpulist(guest.cgroup_file("tenants-db.slice", "cpuset.cpus"))) == \
        biggest
    assert guest.cgroup_file("tenants-db.slice", "cpu.weight") == "300"
    assert guest.cgroup_file("tenants-web.slice", "memory.max") == str(96 << 20)
    assert guest.unit_property("tenants-batch.slice", "ActiveState") == "active"


def test_second_run_changes_nothing(fleet: Fleet) -> None:
    proc = fleet.runs["second"]
    assert proc.returncode == 0, output(proc)
    assert recap(proc)["changed"] == 0 and recap(proc)["failed"] == 0, output(proc)
    assert fleet.state() == fleet.after_first  # files (the tenants file too), cgroups, show


def test_check_diff_reports_changes_and_touches_nothing(fleet: Fleet) -> None:
    before = fleet.state()
    changed = fleet.root / "changed" / "tenants.yaml"  # same name: the units name their source
    changed.parent.mkdir()
    changed.write_text(fleet.tenants.read_text().replace("memory_max: 256M", "memory_max: 200M")
                       .replace("cpu_weight: 200", "cpu_weight: 300"))
    proc = fleet.module("check", "--check", "--diff", tenants=changed)
    assert proc.returncode == 0, output(proc)
    assert recap(proc)["changed"] == 1, output(proc)
    # The diff: the drop-ins and the live properties, before and after.
    assert f"+++ after: {ETC}/tenants-db.slice.d/50-slicectl.conf" in proc.stdout, output(proc)
    assert "-MemoryMax=256M" in proc.stdout and "+MemoryMax=200M" in proc.stdout  # as written
    assert f"-tenants-db.slice: MemoryMax={256 << 20}" in proc.stdout
    assert f"+tenants-db.slice: MemoryMax={200 << 20}" in proc.stdout
    assert "-tenants-web.slice: CPUWeight=200" in proc.stdout
    assert "+tenants-web.slice: CPUWeight=300" in proc.stdout
    assert fleet.state() == before  # files, cgroup files, systemctl show: byte for byte


BROKEN = """\
- name: Broken tenants
  hosts: all
  gather_facts: false
  tasks:
    - name: A tenants file with a typo
      slicectl.fleet.tenants:
        tenants: {typo}
        executable: {slicectl}
      ignore_errors: true

    - name: Tenants that do not fit this host
      slicectl.fleet.tenants:
        config: {{version: 1, tenants: {{huge: {{cpus: 64}}}}}}
        dest: {tenants}
        executable: {slicectl}
      ignore_errors: true
"""


def test_broken_tenants_fail_located_and_change_nothing(fleet: Fleet) -> None:
    before = fleet.state()
    typo = fleet.root / "typo.yaml"
    typo.write_text(fleet.tenants.read_text().replace("cpu_weight: 300", "cpu_weigth: 300"))
    line = typo.read_text().splitlines().index("    cpu_weigth: 300") + 1
    proc = fleet.playbook("broken", BROKEN.format(typo=typo, tenants=fleet.tenants,
                                                  slicectl=VENV / "bin" / "slicectl"))
    assert recap(proc)["ignored"] == 2 and recap(proc)["changed"] == 0, output(proc)
    assert f"{typo}:{line}: tenants.db.cpu_weigth: unknown key" in proc.stdout, output(proc)
    assert "did you mean 'cpu_weight'?" in proc.stdout
    assert "tenants.huge.cpus" in proc.stdout and "slicectl plan failed" in proc.stdout
    # The second task wrote the tenants file, planning failed, and it put the file back.
    assert fleet.state() == before


def test_profile_switch_moves_a_running_process(fleet: Fleet, units: Units) -> None:
    guest.run(["systemd-run", "--unit=fleet-probe", "--slice=tenants-db.slice", "sleep", "600"])
    units.track("fleet-probe.service")
    pid = guest.unit_property("fleet-probe.service", "MainPID")
    day = guest.cgroup_file("tenants-db.slice", "cpuset.cpus")
    assert f"Cpus_allowed_list:\t{day}" in Path(f"/proc/{pid}/status").read_text()
    proc = fleet.module("night", "--diff", tenants=fleet.tenants, profile="night")
    assert proc.returncode == 0, output(proc)
    assert recap(proc)["changed"] == 1, output(proc)
    night = guest.cgroup_file("tenants-db.slice", "cpuset.cpus")
    assert len(guest.parse_cpulist(night)) == 1 and night != day
    assert f"-tenants-db.slice: AllowedCPUs={day}" in proc.stdout, output(proc)
    assert f"+tenants-db.slice: AllowedCPUs={night}" in proc.stdout
    # The same process, not restarted, now on the night CPUs.
    assert guest.unit_property("fleet-probe.service", "MainPID") == pid
    assert f"Cpus_allowed_list:\t{night}" in Path(f"/proc/{pid}/status").read_text()


def test_role_in_generator_mode_hands_the_host_to_the_generator(fleet: Fleet,
                                                                units: Units) -> None:
    """`-e slicectl_mode=generator` on the host the role set up in files mode: the tenants
    file goes to /etc/slicectl and the generator is enabled once; the slices then come from
    the generator's units with the CPUs they had, a running process untouched; a second run
    changes nothing; `slicectl generator disable` hands the host back to files mode."""
    slicectl = str(VENV / "bin" / "slicectl")
    link = Path("/etc/systemd/system-generators/slicectl-generator")
    # The host as the role left it in files mode: the base file applied, whatever profile an
    # earlier test switched to (the role in generator mode applies the base file too).
    base = fleet.module("base", tenants=fleet.tenants)
    assert base.returncode == 0, output(base)
    placed = {u: guest.cgroup_file(u, "cpuset.cpus") for u in TENANT_UNITS[1:]}
    files_mode = {str(p) for p in ETC.rglob("*") if p.is_file()}
    guest.run(["systemd-run", "--unit=probe-fleet", "--slice=tenants-db.slice",
               "sleep", "infinity"])
    units.track("probe-fleet.service")
    pid = guest.unit_property("probe-fleet.service", "MainPID")
    try:
        first = fleet.role("generator", "-e", "slicectl_mode=generator")
        assert first.returncode == 0, output(first)
        assert recap(first)["failed"] == 0, output(first)
        assert task_status(first, "Enable the generator") == "changed", output(first)
        assert link.is_symlink() and link.resolve().exists()
        assert "db:" in Path("/etc/slicectl/tenants.yaml").read_text()
        for unit, cpus in placed.items():
            assert guest.unit_property(unit, "FragmentPath") == \
                f"/run/systemd/generator/{unit}", unit
            assert guest.cgroup_file(unit, "cpuset.cpus") == cpus, unit
        assert not (ETC / "tenants-db.slice").exists()  # one owner of each unit
        assert guest.unit_property("probe-fleet.service", "MainPID") == pid

        again = fleet.role("generator-again", "-e", "slicectl_mode=generator")
        assert again.returncode == 0, output(again)
        assert recap(again)["changed"] == 0 and recap(again)["failed"] == 0, output(again)
    finally:
        disable = guest.run([slicectl, "generator", "disable"], check=False)
    assert disable.returncode == 0, disable.stdout + disable.stderr
    assert not link.exists()
    assert {str(p) for p in ETC.rglob("*") if p.is_file()} == files_mode
    assert guest.unit_property("tenants-db.slice", "FragmentPath") == f"{ETC}/tenants-db.slice"
    assert {u: guest.cgroup_file(u, "cpuset.cpus") for u in placed} == placed
