"""`slicectl-generator NORMAL_DIR [EARLY_DIR LATE_DIR]`: a systemd generator (systemd.generator(7))
that places the tenants of /etc/slicectl/tenants.yaml on the live topology at every boot and
every `systemctl daemon-reload`, and writes the same units and drop-ins as `slicectl generate`
into NORMAL_DIR (/run/systemd/generator), where a file in /etc/systemd/system still wins.

What a generator must never do, and this one does not: fail a boot (it exits 0 whatever
happens, and logs), write a partial set of units, write outside its output folders (no cache,
no lock file, no HOME needed), talk to D-Bus, or take long. Its inputs:

- tenants.yaml: `$SLICECTL_TENANTS`, else /etc/slicectl/tenants.yaml;
- the topology: the sysfs tree `$SLICECTL_SYSFS`, else /sys;
- the last good placement recorded beside tenants.yaml (slicectl.host.placement_record):
  tenants keep their CPUs from boot to boot, and when nothing changed since it was recorded
  (the common case) its files are copied without planning at all.

When tenants.yaml is missing, invalid or does not fit the topology, the recorded placement is
written whole (a slice whose unit disappears on a reload stays active with its cpuset gone, so
a typo must not unpin running tenants), the located error goes to the kernel log (a
generator's stderr is lost; `journalctl -b` shows /dev/kmsg), and `.slicectl-generator-error`
in NORMAL_DIR says why, for `slicectl status` and `plan`. With no record (a first boot) it
writes no tenant units.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from slicectl.core.plan import ScheduleCommand

TENANTS = "/etc/slicectl/tenants.yaml"
ERROR_FILE = ".slicectl-generator-error"
KMSG = "/dev/kmsg"
NAME = "slicectl-generator"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `slicectl-generator` console script: exits 0 whatever happens (a
    generator that fails makes systemd log an error at every boot and reload)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 3) or args[0].startswith("-"):
        print(f"usage: {NAME} NORMAL_DIR [EARLY_DIR LATE_DIR]\n(a systemd generator: "
              "systemd runs it at boot and at every daemon-reload)", file=sys.stderr)
        return 2
    from slicectl.host.oneshot import one_shot

    # Without the cyclic garbage collector: start-up (slicectl.host.oneshot).
    with one_shot(exiting=argv is None):
        try:
            generate_into(args[0], os.environ.get("SLICECTL_TENANTS") or TENANTS,
                          os.environ.get("SLICECTL_SYSFS") or "/sys")
        except BaseException as e:  # never fail a boot, whatever went wrong
            log(f"internal error: {type(e).__name__}: {e}")
    return 0


def generate_into(out: str, tenants: str, sysfs: str) -> str:
    """Write the units for `tenants` on the topology of `sysfs` into `out`; returns what was
    written: "recorded" (nothing changed since the record), "placed", "fallback" or
    "nothing"."""
    from slicectl.host import placement_record as record

    last = record.recorded(tenants)
    exists = os.path.exists(tenants)
    if last is not None and exists and record.fingerprint(tenants, sysfs) == last[1]:
        record.write_files(out, record.recorded_files(last[0]), sync=False)
        return "recorded"
    if not exists and last is None:
        return "nothing"  # not in generator mode: no tenants file, nothing recorded
    try:
        files = _placed(tenants, sysfs, last[0] if last else None)
    except Exception as e:  # any failure: the whole fallback, logged
        return _fallback(out, last[0] if last else None, _describe(e))
    try:
        record.write_files(out, files, sync=False)
    except OSError as e:
        _remove(out, files)
        return _fallback(out, last[0] if last else None, f"cannot write {out}: {e.strerror}")
    return "placed"


def _placed(tenants: str, sysfs: str, last: str | None) -> dict[str, bytes]:
    """The files `generate` would write for `tenants` on this topology, the manifest
    included, keeping tenants where the record placed them."""
    from pathlib import Path

    from slicectl.core.render import render
    from slicectl.host.planning import load_tenants, plan_for_host
    from slicectl.host.sysfs import read_topology
    from slicectl.host.unitdir import MANIFEST_NAME, Manifest, manifest_text

    # No calendar check: it runs systemd-analyze, and the timers check their own calendars.
    config = load_tenants(tenants, check_schedule=False)
    topology = read_topology(sysfs)
    previous = Manifest.load(Path(last) / MANIFEST_NAME) if last else None
    plan = plan_for_host(config, topology, None, _schedule_command(tenants), shares=False,
                         manifest=previous)
    texts = render(plan)
    files = {rel: text.encode() for rel, text in texts.items()}
    files[MANIFEST_NAME] = manifest_text(texts, Manifest(placements=plan.placements(),
                                                         source=Path(config.path).name))
    return files


def _schedule_command(tenants: str) -> ScheduleCommand:
    """The schedule's timers run the slicectl installed beside this generator."""
    from slicectl.core.plan import ScheduleCommand

    here = os.path.dirname(os.path.realpath(sys.argv[0]))
    beside = os.path.join(here, "slicectl")
    executable = (beside,) if os.path.isfile(beside) else (sys.executable, "-m", "slicectl")
    return ScheduleCommand(executable, os.path.abspath(tenants))


def _fallback(out: str, last: str | None, why: str) -> str:
    """The recorded placement, whole, or nothing without one; the reason logged and kept."""
    from slicectl.host import placement_record as record

    if last is not None:
        record.write_files(out, record.recorded_files(last), sync=False)
        what = "wrote the last good placement instead"
    else:
        what = "no placement recorded: no tenant units written"
    message = f"{why}; {what}"
    log(message)
    try:
        record.write_files(out, {ERROR_FILE: f"{message}\n".encode()}, sync=False)
    except OSError:
        pass
    return "fallback" if last is not None else "nothing"


def _describe(e: BaseException) -> str:
    from slicectl.core.errors import SlicectlError

    if isinstance(e, SlicectlError):
        return e.message.replace("\n", "; ")
    return f"internal error: {type(e).__name__}: {e}"


def _remove(out: str, files: dict[str, bytes]) -> None:
    for rel in files:
        try:
            os.unlink(os.path.join(out, rel))
        except OSError:
            pass


def log(message: str) -> None:
    """One line in the kernel log (`journalctl -b`, priority err), as systemd's own generators
    log; on stderr where /dev/kmsg cannot be written (`$SLICECTL_KMSG` names another file)."""
    line = f"<3>{NAME}[{os.getpid()}]: {message}\n"
    try:
        fd = os.open(os.environ.get("SLICECTL_KMSG") or KMSG,
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "backslashreplace")[:1000])
        finally:
            os.close(fd)
    except OSError:
        print(line[3:], end="", file=sys.stderr)
