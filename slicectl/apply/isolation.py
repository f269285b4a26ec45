"""Host noise off isolated CPUs on apply: IRQ affinities and the unbound workqueues' mask,
steered when a tenant is `cpuset_partition: isolated` and put back when none is.

What changes is decided purely (slicectl.core.properties.isolation) from what the kernel
files say (slicectl.host.isolation.kernelfiles); every change goes through the apply's
transaction, which records each file's bytes before its first change, so a failed apply
puts them back like the partition's `cpuset.cpus.exclusive` (slicectl.apply.transaction).
Across applies the isolation record (slicectl.host.files.isolation_record), written
before anything is changed, keeps the values from before: an apply whose isolated CPUs differ
from the record's (back to `member`, or other CPUs) first writes the recorded bytes back and
reads them again, then steers anew for the CPUs isolated now.

Where irqbalance runs (or is enabled: it would start later and spread IRQs again), IRQs are
irqbalance's to place: slicectl writes a drop-in of its own for irqbalance.service banning
the isolated CPUs (never /etc/default/irqbalance, which is not slicectl's), reloads, restarts
irqbalance if it runs, and reads the environment the new irqbalance got; elsewhere it writes
each IRQ's affinity itself.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from slicectl.apply.partitions import partitions
from slicectl.core.cpulist import format_cpulist
from slicectl.core.errors import ApplyError
from slicectl.core.frozen import frozen
from slicectl.core.plan import Plan
from slicectl.core.properties.isolation import (
    BANNED,
    DROPIN_NAME,
    IRQBALANCE,
    IsolationRecord,
    banned_cpus,
    irqbalance_dropin,
    isolated_cpus,
    restore_problems,
    steer,
)
from slicectl.core.properties.versions import parse_kernel
from slicectl.host.files.isolation_record import read_record, record_bytes
from slicectl.host.isolation.kernelfiles import (
    affinity_path,
    read_affinities,
    read_affinity,
    read_environ,
    read_online,
    read_workqueue_mask,
    workqueue_path,
)

if TYPE_CHECKING:
    from slicectl.apply.transaction import Transaction

# Per-CPU IRQs (timers, IPIs) and managed ones (a device's per-queue IRQs) refuse a new
# affinity: EIO or, on newer kernels, EPERM (irq_can_set_affinity_usr fails: Linux 7.2 in the
# testbed answered EPERM), or EINVAL.
_REFUSALS = (errno.EIO, errno.EPERM, errno.EINVAL)


@frozen
class IsolationPaths:
    """Where apply reads and writes for isolation (the host's by default; tests: a tree)."""

    proc: Path
    sysfs: Path
    record: Path
    runtime_units: Path  # /run/systemd/system: irqbalance's drop-in, forgotten at reboot

    @property
    def dropin(self) -> Path:
        return self.runtime_units / f"{IRQBALANCE}.d" / DROPIN_NAME


@frozen
class Irqbalance:
    """irqbalance.service on this host: whether it runs, and whether it is enabled."""

    active: bool
    enabled: bool

    @property
    def used(self) -> bool:
        return self.active or self.enabled


async def steer_isolation(tx: Transaction, plan: Plan, where: IsolationPaths, kernel: str,
                          say: Callable[[str], None]) -> list[str]:
    """Steer IRQs and unbound work off the plan's isolated CPUs, or put back what an earlier
    apply steered when they changed; returns notes for the user (what was left, and why)."""
    isolated = isolated_cpus(partitions(plan).values())
    record = read_record(where.record)
    if (record.isolated if record is not None else frozenset()) == isolated:
        return []
    if record is not None:
        say(f"restoring the IRQ affinities and the workqueue mask recorded in {where.record}")
        await _restore(tx, record, where)
    if not isolated:
        return []
    say(f"steering IRQs and unbound work off isolated CPUs {format_cpulist(isolated)}")
    return await _steer(tx, isolated, where, kernel)


async def _irqbalance(tx: Transaction) -> Irqbalance:
    (row,) = await tx.sd.list_units_by_names([IRQBALANCE])
    if row.load_state != "loaded":
        return Irqbalance(False, False)
    state = await tx.sd.unit_file_state(IRQBALANCE)
    return Irqbalance(row.active_state in ("active", "activating", "reloading"),
                      state in ("enabled", "enabled-runtime", "linked", "linked-runtime"))


async def _steer(tx: Transaction, isolated: frozenset[int], where: IsolationPaths,
                 kernel: str) -> list[str]:
    balance = await _irqbalance(tx)
    # With irqbalance running, the IRQs are its to place (it would undo a write of ours).
    affinities = {} if balance.active else read_affinities(where.proc)
    workqueue = read_workqueue_mask(where.sysfs)
    steering = steer(affinities, workqueue, isolated, read_online(where.sysfs),
                     parse_kernel(kernel))
    if balance.used and where.dropin.exists():
        raise ApplyError(f"{where.dropin} exists, and slicectl's record does not name it",
                         "slicectl writes only files it generated: remove it (or rename it) "
                         "and apply again")
    record = IsolationRecord(isolated, {n: affinities[n] for n in steering.irqs},
                             workqueue if steering.workqueue is not None else None,
                             str(where.dropin) if balance.used else None, balance.active)
    tx.replace_file(where.record, record_bytes(record))  # before anything changes
    notes = list(steering.notes)
    if balance.used:
        await _ban(tx, isolated, where, balance)
        notes.append(f"IRQs: irqbalance places them, banned from CPUs "
                     f"{format_cpulist(isolated)} by {where.dropin}")
    for irq, text in steering.irqs.items():
        try:
            tx.write_kernel(affinity_path(where.proc, irq), text.encode())
        except FileNotFoundError:
            continue  # the IRQ went away meanwhile
        except OSError as e:
            if e.errno not in _REFUSALS:
                raise ApplyError(f"the kernel refused CPUs {text.strip()} in "
                                 f"{affinity_path(where.proc, irq)}: {e.strerror or e}",
                                 "see the kernel log (dmesg) for why") from e
            notes.append(f"IRQ {irq}: left on CPUs {affinities[irq].strip()}, the kernel "
                         f"refuses to move it ({e.strerror}: a per-CPU or managed IRQ)")
    if steering.workqueue is not None:
        try:
            tx.write_kernel(workqueue_path(where.sysfs), steering.workqueue.encode())
        except OSError as e:
            raise ApplyError(f"the kernel refused {steering.workqueue.strip()} in "
                             f"{workqueue_path(where.sysfs)}: {e.strerror or e}",
                             "leave more CPUs outside isolated partitions") from e
    return notes


async def _ban(tx: Transaction, isolated: frozenset[int], where: IsolationPaths,
               balance: Irqbalance) -> None:
    """irqbalance's drop-in, a reload, a restart if it runs; then check what the new
    irqbalance was given (an EnvironmentFile= setting the same variable wins over the
    drop-in's Environment=, systemd.exec(5))."""
    text = irqbalance_dropin(isolated, "cpuset_partition: isolated")
    tx.replace_file(where.dropin, text.encode())
    if balance.active:
        tx.restart.append(IRQBALANCE)  # a rollback reloads and restarts it
    await tx.sd.reload()
    if not balance.active:
        return
    await tx.sd.restart_unit(IRQBALANCE)
    pid = await tx.sd.main_pid(IRQBALANCE)
    environ = read_environ(where.proc, pid) if pid else None
    banned = banned_cpus(environ) if environ is not None else None
    if banned is None or not isolated <= banned:
        got = "nothing" if banned is None else format_cpulist(banned) or "(none)"
        raise ApplyError(
            f"irqbalance (PID {pid}) runs with {BANNED}={got}, not the isolated CPUs "
            f"{format_cpulist(isolated)} slicectl's drop-in {where.dropin} sets",
            "a file irqbalance.service reads with EnvironmentFile= (such as "
            "/etc/default/irqbalance) sets the same variable, and systemd gives such files "
            f"precedence over a drop-in's Environment=: add {format_cpulist(isolated)} to "
            "that line or remove it, then apply again")


async def _restore(tx: Transaction, record: IsolationRecord, where: IsolationPaths) -> None:
    """Write back every value the record holds (where it differs), remove irqbalance's
    drop-in, then read everything again: any difference fails the apply (rolled back)."""
    for irq, text in sorted(record.irqs.items()):
        now = read_affinity(where.proc, irq)
        if now is not None and now != text:
            _write_back(tx, affinity_path(where.proc, irq), text)
    if record.workqueue is not None and read_workqueue_mask(where.sysfs) != record.workqueue:
        _write_back(tx, workqueue_path(where.sysfs), record.workqueue)
    if record.dropin is not None:
        dropin = Path(record.dropin)
        tx.replace_file(dropin, None)
        await tx.sd.reload()
        if (await _irqbalance(tx)).active:  # it runs with the ban: restart it without
            tx.restart.append(IRQBALANCE)
            await tx.sd.restart_unit(IRQBALANCE)
    problems = restore_problems(record, {n: read_affinity(where.proc, n) for n in record.irqs},
                                read_workqueue_mask(where.sysfs))
    if problems:
        raise ApplyError("the values recorded before isolation did not read back: "
                         + "; ".join(problems),
                         "something else changes IRQ affinities (irqbalance, a tuned profile): "
                         f"see {where.record}")
    tx.replace_file(where.record, None)


def _write_back(tx: Transaction, path: Path, text: str) -> None:
    try:
        tx.write_kernel(path, text.encode())
    except FileNotFoundError:
        pass  # gone meanwhile
    except OSError as e:
        raise ApplyError(f"writing {text.strip()!r} back to {path}: {e.strerror or e}",
                         f"write it by hand: echo {text.strip()} > {path}") from e
