# Copyright: slicectl contributors
# Licensed under the same terms as slicectl.

"""Documentation shared by the collection's modules (`extends_documentation_fragment`)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  executable:
    description:
      - The slicectl to run, a path or a name looked up on E(PATH),
        then in C(/opt/slicectl/bin) and C(/usr/local/bin).
    type: str
    default: slicectl
requirements:
  - slicectl on the target (the role slicectl.fleet.host installs it)
"""
