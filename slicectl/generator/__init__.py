"""`slicectl-generator NORMAL_DIR [EARLY_DIR LATE_DIR]`: a systemd generator (systemd.generator(7))
that places the tenants of /etc/slicectl/tenants.yaml on the live topology at every boot and
every `systemctl daemon-reload`, and writes the same units and drop-ins as `slicectl generate`
into NORMAL_DIR (/run/systemd/generator), where a file in /etc/systemd/system still wins.

What a generator must never do, and this one does not: fail a boot (it exits 0 whatever
happens, and logs), write a partial set of units, write outside its output folders (no cache,
no lock file, no HOME needed), talk to D-Bus, or take long. It runs as root, so it also never
crashes on what it reads and never acts on what another user could have written: tenants.yaml
is read only when it is a regular file of bounded size that only root can write (with its
folders: slicectl.host.files.trust), the record only once its files match its own manifest's
digests, and placing runs in a child process stopped after PLAN_TIMEOUT, so that a crash
there (even by a signal) still leaves the fallback written and a line in the kernel log. Its
output is written through fresh temporary files renamed into place: a link in the output
folder is replaced, never followed. Keys this host's systemd or kernel cannot take are
refused as `plan` refuses them. Its inputs:

- tenants.yaml: `$SLICECTL_TENANTS`, else /etc/slicectl/tenants.yaml;
- the topology: the sysfs tree `$SLICECTL_SYSFS`, else /sys;
- the last good placement recorded beside tenants.yaml (slicectl.host.files.placement_record):
  tenants keep their CPUs from boot to boot, and when nothing changed since it was recorded
  (the common case) its files are copied without planning at all.

When tenants.yaml is missing, invalid or does not fit the topology, or the host runs cgroup v1
or the hybrid hierarchy (slicectl.host.cgroup.mounts; read from the mount table of the proc beside
the sysfs root), the recorded placement is written whole (a slice whose unit disappears on a
reload stays active with its cpuset gone, so a typo must not unpin running tenants), the
located error goes to the kernel log (a generator's stderr is lost; `journalctl -b` shows
/dev/kmsg), and `.slicectl-generator-error` in NORMAL_DIR says why, for `slicectl status` and
`plan`. With no record (a first boot) it writes no tenant units.
"""

from __future__ import annotations

import os
import sys

TENANTS = "/etc/slicectl/tenants.yaml"
ERROR_FILE = ".slicectl-generator-error"
KMSG = "/dev/kmsg"
NAME = "slicectl-generator"
# How long placing may take before the generator stops it and falls back (systemd stops
# generators that run past 90 s; `$SLICECTL_GENERATOR_TIMEOUT` sets another bound).
PLAN_TIMEOUT = 45.0


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
    from slicectl.core.errors import SlicectlError
    from slicectl.host.files import placement_record as record
    from slicectl.host.files.owned import write_tree

    last = _last_record(tenants)
    try:
        _require_unified(sysfs)
    except SlicectlError as e:  # cgroup v1 or hybrid: nothing slicectl writes would hold
        return _fallback(out, last, f"{_describe(e)} ({e.hint})")
    try:
        text = _tenants_bytes(tenants)
    except SlicectlError as e:
        return _fallback(out, last, _describe(e))
    if last is not None and text is not None and \
            record.fingerprint(tenants, sysfs, text) == last[2]:
        write_tree(out, last[1], sync=False)
        return "recorded"
    if text is None and last is None:
        return "nothing"  # not in generator mode: no tenants file, nothing recorded
    try:
        files = _placed_apart(tenants, sysfs, last[1] if last else None)
    except _Failed as e:  # any failure, a crash included: the whole fallback, logged
        return _fallback(out, last, str(e))
    try:
        write_tree(out, files, sync=False)
    except OSError as e:
        _remove(out, files)
        return _fallback(out, last, f"cannot write {out}: {e.strerror}")
    return "placed"


def _require_unified(sysfs: str) -> None:
    """HierarchyError when this host runs cgroup v1 or the hybrid hierarchy: the cgroup mount
    beside `sysfs` (its fs/cgroup), as the mount table of the proc beside it (/proc for /sys)
    has it. systemd mounts it before it runs generators."""
    from pathlib import Path

    from slicectl.host.cgroup.mounts import unified_mount

    root = Path(sysfs)
    unified_mount(root / "fs" / "cgroup", root.parent / "proc", refuse_empty=False)


def _last_record(tenants: str) -> tuple[str, dict[str, bytes], bytes] | None:
    """The recorded placement (its folder, its files, its fingerprint), once it has shown it
    is what slicectl recorded (placement_record.verified_files); a record that has not is
    logged and not used."""
    from slicectl.core.defaults import MANIFEST_NAME
    from slicectl.host.files import placement_record as record

    last = record.recorded(tenants)
    if last is None:
        return None
    try:
        return last[0], record.verified_files(last[0], MANIFEST_NAME), last[1]
    except OSError as e:
        log(f"the recorded placement in {last[0]}: {e.strerror or e}; planning without it")
        return None


def _tenants_bytes(tenants: str) -> bytes | None:
    """tenants.yaml's bytes, None when there is none; a file that is not regular, too large,
    or that another user could have written (run as root) raises ConfigError."""
    from slicectl.core.config.yamldoc import MAX_TEXT
    from slicectl.host.files.trust import read_bounded

    if not os.path.lexists(tenants):
        return None
    return read_bounded(tenants, "tenants.yaml", MAX_TEXT)


class _Failed(Exception):
    """Planning failed; the message says why, for the log. It never leaves this module (the
    generator catches it and writes its fallback), so it is not in slicectl.core.errors."""


def _placed_apart(tenants: str, sysfs: str, last: dict[str, bytes] | None
                  ) -> dict[str, bytes]:
    """_placed, run in a child process: whatever it meets (a crash by a signal in a C
    extension, memory running out, a plan that takes too long), this process still writes
    the fallback and logs why. Raises _Failed."""
    import marshal
    import select
    import signal
    import time

    limit = float(os.environ.get("SLICECTL_GENERATOR_TIMEOUT") or PLAN_TIMEOUT)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: plan, send the result, exit without cleaning up the parent's
        status = 0
        try:
            os.close(read_end)
            try:
                reply: tuple[str, dict[str, bytes] | str] = (
                    "files", _placed(tenants, sysfs, last))
            except BaseException as e:
                reply = ("error", _describe(e))
            data = memoryview(marshal.dumps(reply))
            while data:
                data = data[os.write(write_end, data):]
        except BaseException:
            status = 1
        os._exit(status)
    os.close(write_end)
    chunks = []
    deadline = time.monotonic() + limit
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise _Failed(f"placing the tenants took longer than {limit:g} s; stopped")
            chunk = os.read(read_end, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise _Failed(f"internal error: placing the tenants died of {name}")
    try:
        kind, payload = marshal.loads(b"".join(chunks))
    except (EOFError, ValueError, TypeError):
        raise _Failed("internal error: placing the tenants ended without a result "
                      f"(exit status {os.waitstatus_to_exitcode(status)})") from None
    if kind != "files":
        raise _Failed(str(payload))
    return dict(payload)


def _placed(tenants: str, sysfs: str, last: dict[str, bytes] | None) -> dict[str, bytes]:
    """The files `generate` would write for `tenants` on this topology, the manifest
    included, keeping tenants where the record (`last`: its files) placed them; refused as
    plan refuses it where this host's systemd or kernel cannot take a key."""
    from pathlib import Path

    from slicectl.core.properties.versions import check_version
    from slicectl.host.files.unitdir import MANIFEST_NAME, Manifest
    from slicectl.host.planning import generator_command, generator_files, load_tenants
    from slicectl.host.systemd.hostinfo import systemd_version
    from slicectl.host.topology.sysfs import read_topology

    # No calendar check: it runs systemd-analyze, and the timers check their own calendars.
    config = load_tenants(tenants, check_schedule=False)
    check_version(config, systemd_version(), "systemd on this host", os.uname().release)
    topology = read_topology(sysfs)
    previous = None
    if last is not None and MANIFEST_NAME in last:
        previous = Manifest.parse(last[MANIFEST_NAME], Path(MANIFEST_NAME))
    # At boot nothing runs yet: a tenant that no longer fits its node beside the others
    # moves them (the fewest), and a tenant no node can hold any more (CPUs gone) spans
    # nodes rather than fail the boot; each move and each split is logged.
    return generator_files(config, topology, previous, generator_command(sys.argv[0], tenants),
                           repack=True, said=log, may_split=True)


def _fallback(out: str, last: tuple[str, dict[str, bytes], bytes] | None, why: str) -> str:
    """The recorded placement, whole, or nothing without one; the reason logged and kept."""
    from slicectl.host.files.owned import write_tree

    if last is not None:
        write_tree(out, last[1], sync=False)
        what = "wrote the last good placement instead"
    else:
        what = "no placement recorded: no tenant units written"
    message = f"{why}; {what}"
    log(message)
    try:
        write_tree(out, {ERROR_FILE: f"{message}\n".encode()}, sync=False)
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
