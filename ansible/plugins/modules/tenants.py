#!/usr/bin/python
# Copyright: slicectl contributors
# Licensed under the same terms as slicectl.

from __future__ import annotations

DOCUMENTATION = r"""
module: tenants
short_description: Apply a slicectl tenants file to a host, live and idempotently
description:
  - Runs the installed C(slicectl) on the target. C(slicectl plan) finds what differs between
    the tenants file and the host (unit files in the unit directory, live properties of
    running slices); when something does, C(slicectl apply) writes the files atomically,
    reloads systemd only when needed, sets the live properties without restarting anything
    and verifies them in the cgroups. A failed apply rolls files and live properties back.
  - The tenants file is either a file on the target (O(tenants)) or a mapping written to O(dest)
    (O(config)). A written file keeps the comments of the file it replaces, and a failed plan
    or apply puts the previous file back.
  - In check mode only C(slicectl plan) runs, against a copy of the would-be tenants file;
    nothing on the target changes. C(changed) says whether an apply would change anything.
  - In diff mode the task shows the tenants file, every unit file and the live properties
    before and after.
  - The module relies only on slicectl's documented JSON (docs/plan-json.md in slicectl).
version_added: "0.1.0"
author:
  - slicectl contributors (!UNKNOWN)
extends_documentation_fragment:
  - slicectl.fleet.slicectl
options:
  tenants:
    description:
      - Path of a tenants file on the target.
      - Mutually exclusive with O(config).
    type: path
  config:
    description:
      - The whole tenants document as a mapping (C(version), C(tenants), C(confine), ...).
      - Written to O(dest), atomically, keeping the comments of the existing file for what stays.
      - Validated before it is written; a document slicectl cannot read fails the task with
        the located problems and writes nothing.
      - Mutually exclusive with O(tenants).
    type: dict
  dest:
    description:
      - Where O(config) is written on the target. Ignored with O(tenants).
    type: path
    default: /etc/slicectl/tenants.yaml
  profile:
    description:
      - Apply the overrides of this profile (C(slicectl apply --profile)).
    type: str
  templates:
    description:
      - Use the unit templates in this directory on the target (C(--templates)).
    type: path
  repack:
    description:
      - "Where keeping every tenant where it is would split a C(numa: local) tenant over
        NUMA nodes, move the fewest other tenants so that every local tenant is on one node
        (C(--repack)). Without it such a change fails, naming those moves, and changes
        nothing."
    type: bool
    default: false
  unit_dir:
    description:
      - Unit directory slicectl owns files in (C(--unit-dir)). Default is slicectl's,
        C(/etc/systemd/system).
    type: path
  cgroup_root:
    description:
      - The cgroup v2 mount (C(--cgroup-root)). Default is slicectl's, C(/sys/fs/cgroup).
    type: path
  bus:
    description:
      - D-Bus address of systemd (C(--bus)). Default is the system bus.
    type: str
attributes:
  check_mode:
    support: full
    description: Runs C(slicectl plan) only.
  diff_mode:
    support: full
    description: The tenants file, unit files and live properties before and after.
  platform:
    support: full
    description: Linux hosts with systemd and cgroup v2.
    platforms: posix
notes:
  - "Run it as root (C(become: true)): slicectl writes the unit directory and talks to
    systemd."
  - C(changed) is true exactly when the tenants file, a unit file or the live state changed
    (in check mode, would change).
  - When C(slicectl plan) finds that the host matches, C(slicectl apply) is not run (it would
    change nothing).
"""

EXAMPLES = r"""
- name: Apply the tenants file that is on the host
  slicectl.fleet.tenants:
    tenants: /etc/slicectl/tenants.yaml

- name: Write the tenants from inventory variables and apply them
  slicectl.fleet.tenants:
    config:
      version: 1
      housekeeping: {cpus: 2}
      tenants:
        db1: {cpus: 8, memory_max: 24G, memory_low: 16G}
        web: {cpu_weight: 200}
      profiles:
        night:
          db1: {cpus: 4}
    dest: /etc/slicectl/tenants.yaml

- name: Switch every host to the night profile
  slicectl.fleet.tenants:
    tenants: /etc/slicectl/tenants.yaml
    profile: night
"""

RETURN = r"""
plan:
  description:
    - The output of C(slicectl plan --json) (format C(slicectl-plan/1), docs/plan-json.md),
      with C(changes) comparing the host with the plan before this task changed anything.
  returned: success
  type: dict
  sample:
    format: slicectl-plan/1
    tenants: [{name: web, cpus: "2,6", cpu_count: 2, cpu_nodes: [2], memory_nodes: [2]}]
    changes:
      changed: true
      files: {created: [tenants-web.slice], updated: [], removed: []}
      properties: [{unit: tenants-web.slice, property: CPUWeight, live: "100",
                    desired: "200", source: ""}]
      reload: false
      start: [tenants-web.slice]
      stop: []
      notes: []
apply:
  description:
    - The output of C(slicectl apply --json) (what was written, reloaded, started, set live and
      verified); absent in check mode and when the host already matched the plan.
  returned: when something was applied
  type: dict
  sample:
    dry_run: false
    profile: null
    reloaded: false
    started: [tenants.slice, tenants-web.slice]
    set_live: []
    verified: [tenants.slice, tenants-web.slice]
tenants_file:
  description:
    - The tenants file used, whether this task changed it (O(config) only), and C(restored)
      when a failed plan or apply made the task put the previous file back.
  returned: always
  type: dict
  sample: {path: /etc/slicectl/tenants.yaml, changed: false}
errors:
  description:
    - "slicectl's problems, each C(FILE:LINE: key: message) with its hint; the lines are those
      of the tenants file (with O(config), of the file that would have been written)."
  returned: failure
  type: list
  elements: dict
  sample: [{message: "/etc/slicectl/tenants.yaml:7: tenants.web.cpu_weigth: unknown key",
            hint: "did you mean 'cpu_weight'?"}]
"""

import json
import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.slicectl.fleet.plugins.module_utils.slicectl import (
    EXECUTABLE_ARGUMENT,
    EXIT_DIFF,
    EXIT_OK,
    apply_command,
    diff_entries,
    failure,
    find_slicectl,
    load_json,
    plan_command,
    write_command,
)

ARGUMENT_SPEC = dict(
    tenants=dict(type="path"),
    config=dict(type="dict"),
    dest=dict(type="path", default="/etc/slicectl/tenants.yaml"),
    profile=dict(type="str"),
    templates=dict(type="path"),
    repack=dict(type="bool", default=False),
    unit_dir=dict(type="path"),
    cgroup_root=dict(type="path"),
    bus=dict(type="str"),
    executable=EXECUTABLE_ARGUMENT,
)


class TenantsFile:
    """The tenants file: as given, or written from `config` (and put back on failure)."""

    def __init__(self, module, slicectl):
        self.module = module
        self.slicectl = slicectl
        self.path = module.params["tenants"] or module.params["dest"]
        self.change = None  # slicectl write's report, with `config`
        self.restored = False

    def write(self, check):
        """Merge `config` into the file (check: only compute the new text)."""
        cmd = [self.slicectl] + write_command(self.path, check)
        data = json.dumps(self.module.params["config"])
        rc, out, err = self.module.run_command(cmd, data=data)
        change = load_json(out) if rc == EXIT_OK else None
        if change is None:
            self.module.fail_json(tenants_file=self.report(), **failure(
                "the tenants document is not valid, nothing was written", rc, out, err))
        self.change = change

    @property
    def changed(self):
        return bool(self.change and self.change["changed"])

    def restore(self):
        """Put back the file this task replaced (or remove the one it created)."""
        if not self.changed or self.module.check_mode:
            return
        if self.change["before"] is None:
            os.unlink(self.path)
        else:
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(self.path) or ".")
            with os.fdopen(fd, "w") as f:
                f.write(self.change["before"])
            self.module.atomic_move(tmp, self.path)
        self.restored = True

    def report(self):
        report = {"path": self.path, "changed": self.changed and not self.restored}
        if self.restored:
            report["restored"] = True
        return report


def run(module):
    params = module.params
    slicectl = find_slicectl(module)
    tenants = TenantsFile(module, slicectl)
    if params["config"] is not None:
        tenants.write(check=module.check_mode)
    elif not os.path.isfile(tenants.path):
        module.fail_json(msg=f"tenants: no such file on the target: {tenants.path}")

    # Check mode plans the file that would be written: a copy with the same name (slicectl
    # names the source file in every unit file it generates), reported under the real name.
    plan_path, rename, scratch = tenants.path, {}, None
    if module.check_mode and tenants.changed:
        scratch = tempfile.mkdtemp(prefix="slicectl-", dir=module.tmpdir)
        plan_path = os.path.join(scratch, os.path.basename(tenants.path))
        with open(plan_path, "w") as f:
            f.write(tenants.change["after"])
        rename = {plan_path: tenants.path}
    try:
        rc, out, err = module.run_command(
            [slicectl] + plan_command(params, plan_path, contents=module._diff))
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    plan = load_json(out) if rc in (EXIT_OK, EXIT_DIFF) else None
    if plan is None:
        tenants.restore()
        module.fail_json(tenants_file=tenants.report(),
                         **failure("slicectl plan failed, nothing was applied", rc, out, err,
                                   rename))
    if scratch:
        plan["source"] = tenants.path

    result = {"plan": plan, "tenants_file": tenants.report()}
    changed = rc == EXIT_DIFF
    if changed and not module.check_mode:
        rc, out, err = module.run_command([slicectl] + apply_command(params, tenants.path))
        report = load_json(out) if rc == EXIT_OK else None
        if report is None:
            tenants.restore()
            module.fail_json(plan=plan, tenants_file=tenants.report(), **failure(
                "slicectl apply failed and rolled the host back", rc, out, err))
        result["apply"] = report
        changed = bool(report["changes"]["changed"])
    result["changed"] = changed or tenants.changed
    if module._diff:
        result["diff"] = diff_entries(plan, params["unit_dir"], tenants.change)
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        mutually_exclusive=[("tenants", "config")],
        required_one_of=[("tenants", "config")],
        supports_check_mode=True,
    )
    run(module)


if __name__ == "__main__":
    main()
