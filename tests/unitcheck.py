"""Helpers for tests: parse generated unit files, and run the real `systemd-analyze verify`."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path


def parse_unit(text: str) -> dict[str, dict[str, str]]:
    """section → key → value (last assignment wins, as in systemd)."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"key outside a section: {raw!r}"
        key, _, value = line.partition("=")
        current[key.strip()] = value.strip()
    return sections


_UNKNOWN_KEY = re.compile(r".*: Unknown key '([A-Za-z]+)' in section \[[A-Za-z]+\], ignoring\.")


@functools.cache
def _verifier_version() -> int:
    """The release of the systemd-analyze that verifies ("systemd 252 (252.38-1~deb12u1)")."""
    from slicectl.core.properties.versions import parse_version

    out = subprocess.run(["systemd-analyze", "--version"], capture_output=True, text=True,
                         timeout=60).stdout
    return parse_version(out) or 0


def _newer_than_verifier(line: str) -> bool:
    """An "Unknown key" of a property the settings table dates after the verifier's release
    (CPUSetPartition=, 261, on a host with 252): that systemd cannot know it. Every other
    unknown key still fails."""
    from slicectl.core.properties.properties import PROP_BY_NAME

    m = _UNKNOWN_KEY.fullmatch(line.strip())
    prop = PROP_BY_NAME.get(m[1]) if m else None
    return prop is not None and prop.since > _verifier_version()


def systemd_verify(out: Path, tmp: Path) -> None:
    """Run `systemd-analyze verify` on every unit the directory defines or drops into.

    Units that only get drop-ins (member services, cron.service) are stubbed when the host does
    not have them, so their drop-ins are parsed too. init.scope cannot be loaded from disk
    (scopes are runtime units), so its drop-in's [Scope] keys are verified on a stand-in slice.
    Any output (e.g. "Unknown key", "Failed to parse") fails the check.
    """
    work = tmp / "verify"
    shutil.copytree(out, work)
    units: list[str] = []
    for entry in sorted(work.iterdir()):
        name = entry.name
        if name.startswith("."):
            continue
        if entry.is_file():
            units.append(name)
        elif name.endswith(".d"):
            unit = name[:-2]
            if unit.endswith(".scope"):
                stand_in = work / f"verify-{unit.replace('.', '-')}.slice"
                body = "".join(p.read_text().replace("[Scope]", "[Slice]")
                               for p in sorted(entry.iterdir()))
                stand_in.write_text(body)
                units.append(stand_in.name)
                continue
            if not (work / unit).exists() and unit.endswith(".service") and not any(
                    Path(d, unit).exists() for d in ("/lib/systemd/system", "/etc/systemd/system")):
                (work / unit).write_text("[Service]\nExecStart=/bin/true\n")
            units.append(unit)
    env = dict(os.environ, SYSTEMD_UNIT_PATH=f"{work}:", SYSTEMD_LOG_COLOR="0")
    proc = subprocess.run(["systemd-analyze", "verify", "--man=no", *units], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    output = "\n".join(line for line in (proc.stdout + proc.stderr).strip().splitlines()
                       if not _newer_than_verifier(line))
    assert proc.returncode == 0 and not output, (
        f"systemd-analyze verify {' '.join(units)} failed (rc={proc.returncode}):\n{output}")
