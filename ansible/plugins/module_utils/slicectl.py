# Copyright: slicectl contributors
# Licensed under the same terms as slicectl.

"""Running the installed `slicectl` and mapping its output to Ansible results.

The modules rely only on what docs/plan-json.md promises (section "What the Ansible
collection relies on"): the verbs and flags they call, the exit codes, the JSON documents
and the `error: ...` / `  hint: ...` lines on standard error. Everything here is plain
functions of that output, so the unit tests feed them real slicectl output.
"""

from __future__ import annotations

import json
import os

DEFAULT_UNIT_DIR = "/etc/systemd/system"
# Where the collection's role installs slicectl; searched after PATH.
EXTRA_DIRS = ["/opt/slicectl/bin", "/usr/local/bin"]
EXIT_OK, EXIT_DIFF = 0, 3
# The `executable` option of every module (documented in doc_fragments/slicectl.py).
EXECUTABLE_ARGUMENT = dict(type="str", default="slicectl")


def find_slicectl(module):
    """The slicectl executable: the `executable` option (a path, or a name on PATH)."""
    executable = module.params.get("executable") or "slicectl"
    if os.sep in executable:
        if not os.access(executable, os.X_OK):
            module.fail_json(msg=f"executable: {executable} is not an executable file")
        return executable
    return module.get_bin_path(executable, required=True, opt_dirs=EXTRA_DIRS)


def host_args(params):
    """`--unit-dir`, `--cgroup-root`, `--bus`: where plan and apply look (default: the host)."""
    args = []
    for option, flag in (("unit_dir", "--unit-dir"), ("cgroup_root", "--cgroup-root"),
                         ("bus", "--bus")):
        if params.get(option):
            args += [flag, params[option]]
    return args


def plan_command(params, tenants, contents=False):
    """`slicectl plan` as check mode runs it: JSON, exit 3 when the host differs."""
    args = ["plan", tenants, "--json", "--exit-code"]
    if params.get("profile"):
        args += ["--profile", params["profile"]]
    if params.get("templates"):
        args += ["--templates", params["templates"]]
    if contents:
        args.append("--contents")
    return args + placement_args(params) + host_args(params)


def apply_command(params, tenants):
    """`slicectl apply` without questions, reporting JSON."""
    args = ["apply", tenants, "--yes", "--json"]
    if params.get("profile"):
        args += ["--profile", params["profile"]]
    if params.get("templates"):
        args += ["--templates", params["templates"]]
    return args + placement_args(params) + host_args(params)


def placement_args(params):
    """`--repack` when asked: move the fewest tenants rather than split a local one."""
    return ["--repack"] if params.get("repack") else []


def write_command(tenants, check):
    """`slicectl write` reading the mapping as JSON from standard input."""
    return ["write", tenants, "--from", "-", "--json"] + (["--check"] if check else [])


def parse_errors(stderr, rename=None):
    """slicectl's `error: MESSAGE` lines, each with the `  hint: HINT` that follows it.

    `rename` maps a path slicectl was given to the one the user knows (check mode plans a
    temporary copy of the tenants file: its problems are reported under the real name).
    """
    errors = []
    for line in stderr.splitlines():
        for old, new in (rename or {}).items():
            line = line.replace(old, new)
        if line.startswith("error: "):
            errors.append({"message": line[len("error: "):], "hint": ""})
        elif line.startswith("  hint: ") and errors:
            errors[-1]["hint"] = line[len("  hint: "):]
    return errors


def error_message(errors, stderr=""):
    """One line per problem, `FILE:LINE: key: message (hint: ...)`, for the task's `msg`."""
    if not errors:
        return stderr.strip() or "slicectl failed without a message"
    return "\n".join(e["message"] + (f" (hint: {e['hint']})" if e["hint"] else "")
                     for e in errors)


def failure(what, rc, stdout, stderr, rename=None):
    """The fields of a failed task: msg with slicectl's located messages, and the details."""
    errors = parse_errors(stderr, rename)
    return {"msg": f"{what}: {error_message(errors, stderr)}", "errors": errors,
            "rc": rc, "stdout": stdout, "stderr": stderr}


def load_json(text):
    """A JSON document slicectl printed, or None when it printed something else."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def _entry(header, before, after):
    return {"before_header": header, "after_header": header,
            "before": before or "", "after": after or ""}


def live_lines(changes):
    """The live side of a plan's `changes`, as `unit: Property=value` lines before/after."""
    before, after = [], []
    for c in changes.get("properties", []):
        before.append(f"{c['unit']}: {c['property']}={c['live']}\n")
        after.append(f"{c['unit']}: {c['property']}={c['desired']}\n")
    for unit in changes.get("start", []):
        before.append(f"{unit}: inactive\n")
        after.append(f"{unit}: active\n")
    for unit in changes.get("stop", []):
        before.append(f"{unit}: active\n")
        after.append(f"{unit}: stopped\n")
    return "".join(before), "".join(after)


def diff_entries(plan, unit_dir=None, tenants_file=None):
    """Ansible's `diff` list: the tenants file, every unit file, then live properties."""
    entries = []
    if tenants_file and tenants_file.get("changed"):
        entries.append(_entry(tenants_file["path"], tenants_file.get("before"),
                              tenants_file["after"]))
    changes = (plan or {}).get("changes") or {}
    contents = changes.get("files", {}).get("contents", {})
    for rel in sorted(contents):
        entries.append(_entry(os.path.join(unit_dir or DEFAULT_UNIT_DIR, rel),
                              contents[rel]["before"], contents[rel]["after"]))
    before, after = live_lines(changes)
    if before or after:
        entries.append(_entry("systemd: live properties", before, after))
    return entries
