#!/usr/bin/python
# Copyright: slicectl contributors
# Licensed under the same terms as slicectl.

from __future__ import annotations

DOCUMENTATION = r"""
module: topology_facts
short_description: The host's NUMA topology as slicectl sees it, as facts
description:
  - Runs C(slicectl topology --json) on the target and returns it as the fact
    C(slicectl_topology) (format C(slicectl-topology/1), docs/topology-json.md in slicectl),
    with a per-node summary in C(slicectl_nodes) and the threads per core in C(slicectl_smt),
    so a playbook can size tenants per host (for example C(cpus) per node).
  - Changes nothing.
version_added: "0.1.0"
author:
  - slicectl contributors (!UNKNOWN)
extends_documentation_fragment:
  - slicectl.fleet.slicectl
options:
  sysfs:
    description:
      - Read the topology from this sysfs root instead of C(/sys) (C(--sysfs)).
    type: path
attributes:
  check_mode:
    support: full
    description: Reads only; runs the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is nothing to show.
  facts:
    support: full
    description: Returns C(slicectl_topology), C(slicectl_nodes) and C(slicectl_smt).
  platform:
    support: full
    description: Linux hosts with sysfs.
    platforms: posix
"""

EXAMPLES = r"""
- name: Read the NUMA topology
  slicectl.fleet.topology_facts:

- name: Give the database every CPU of one node but one
  ansible.builtin.set_fact:
    db_cpus: "{{ (slicectl_nodes | map(attribute='cpu_count') | max) - 1 }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts about the host's NUMA topology.
  returned: always
  type: complex
  contains:
    slicectl_topology:
      description: The output of C(slicectl topology --json), unchanged.
      returned: always
      type: dict
      sample:
        format: slicectl-topology/1
        source: /sys
        nodes: [{id: 0, cpus: "0,4", memory_bytes: 1073741824, distances: {"0": 10, "1": 20}}]
        cpus: [{id: 0, online: true, node: 0, package: 0, die: 0, core: 0, siblings: "0"}]
    slicectl_nodes:
      description: One entry per NUMA node, by id, with its online CPUs, how many, and memory.
      returned: always
      type: list
      elements: dict
      sample: [{id: 0, cpus: "0,4", cpu_count: 2, memory_bytes: 1073741824}]
    slicectl_smt:
      description: Hardware threads per core (1 when SMT is off or absent).
      returned: always
      type: int
      sample: 2
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.slicectl.fleet.plugins.module_utils.slicectl import (
    EXECUTABLE_ARGUMENT,
    failure,
    find_slicectl,
    load_json,
)

ARGUMENT_SPEC = dict(
    sysfs=dict(type="path"),
    executable=EXECUTABLE_ARGUMENT,
)


def facts(topology):
    """The facts for one `slicectl topology --json` document."""
    online = [c for c in topology["cpus"] if c["online"]]
    nodes = []
    for node in sorted(topology["nodes"], key=lambda n: n["id"]):
        count = sum(1 for c in online if c["node"] == node["id"])
        nodes.append({"id": node["id"], "cpus": node["cpus"], "cpu_count": count,
                      "memory_bytes": node["memory_bytes"]})
    cores = {}
    for c in online:
        key = (c["package"], c["die"], c["core"])
        cores[key] = cores.get(key, 0) + 1
    return {"slicectl_topology": topology, "slicectl_nodes": nodes,
            "slicectl_smt": max(cores.values()) if cores else 1}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    cmd = [find_slicectl(module), "topology", "--json"]
    if module.params["sysfs"]:
        cmd += ["--sysfs", module.params["sysfs"]]
    rc, out, err = module.run_command(cmd)
    topology = load_json(out) if rc == 0 else None
    if not isinstance(topology, dict) or topology.get("format") != "slicectl-topology/1":
        module.fail_json(**failure("slicectl topology failed", rc, out, err))
    module.exit_json(changed=False, ansible_facts=facts(topology))


if __name__ == "__main__":
    main()
