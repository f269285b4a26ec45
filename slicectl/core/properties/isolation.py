"""Host noise kept off the CPUs of isolated partitions (pure): which IRQ affinities and which
unbound-workqueue mask change, irqbalance's drop-in, and the record that lets apply put every
value back byte for byte.

An `isolated` partition takes its CPUs out of the scheduler's load balancing, but the kernel
still sends device interrupts wherever their affinity says, and (before Linux 6.8) still runs
unbound work items there. slicectl steers both off the isolated CPUs live, at apply, and puts
them back when the tenant is a member again or the apply rolls back:

- IRQs: through irqbalance's banned CPUs where irqbalance runs (it would move IRQs back onto
  the CPUs otherwise), else by writing `/proc/irq/N/smp_affinity_list` without the isolated
  CPUs. An IRQ left with no online CPU is left as it is; one the kernel refuses to move
  (per-CPU and managed IRQs answer EIO or EINVAL) is reported, not fatal.
- The unbound workqueues' mask, `/sys/devices/virtual/workqueue/cpumask`: Linux 6.8 takes the
  CPUs of isolated partitions out of it itself ("cgroup/cpuset: Take isolated CPUs out of
  workqueue unbound cpumask"; cgroup-v2.rst, `cpuset.cpus.isolated` and
  `cpuset.cpus.partition`), so slicectl writes it only on older kernels.

Each value is recorded (`IsolationRecord`) before it is changed; restoring writes back the
recorded bytes and checks they read back the same (`restore_problems`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from slicectl.core.config.jsoninput import JsonReader
from slicectl.core.cpulist import format_cpulist, parse_cpulist, parse_cpumask
from slicectl.core.errors import StateError
from slicectl.core.frozen import frozen
from slicectl.core.properties.partition import ISOLATED

# Linux excludes the CPUs of isolated partitions from the unbound workqueues' mask itself
# from this release on (workqueue_unbound_exclude_cpumask, called by cpuset).
WORKQUEUE_EXCLUDES_ISOLATED = (6, 8)
IRQBALANCE = "irqbalance.service"
BANNED = "IRQBALANCE_BANNED_CPULIST"
DROPIN_NAME = "50-slicectl-isolated.conf"
FORMAT = "slicectl-isolation/1"
_IRQ_MAX = 1 << 20  # above any NR_IRQS
_HINT = ("slicectl writes it before it steers IRQs off isolated CPUs; if it is damaged, "
         "restore the IRQ affinities by hand (or reboot) and remove it")


def isolated_cpus(partitions: Iterable[tuple[str, frozenset[int]]]) -> frozenset[int]:
    """The CPUs of every isolated partition, from (root|isolated, its CPUs) pairs."""
    out: frozenset[int] = frozenset()
    for value, cpus in partitions:
        if value == ISOLATED:
            out |= cpus
    return out


@frozen
class Steering:
    """What changes to keep noise off isolated CPUs: IRQ -> its new `smp_affinity_list`,
    the workqueue mask to write (None: leave it), and why anything is left."""

    irqs: Mapping[int, str]
    workqueue: str | None
    notes: tuple[str, ...] = ()


def steer_irqs(affinities: Mapping[int, str], isolated: frozenset[int],
               online: frozenset[int]) -> tuple[dict[int, str], list[str]]:
    """The affinity lists without the isolated CPUs, for each IRQ that has some; an IRQ that
    would keep no online CPU is left as it is (the kernel would refuse an empty or offline
    mask, and the IRQ must go somewhere), with a note."""
    writes: dict[int, str] = {}
    notes: list[str] = []
    for irq, text in sorted(affinities.items()):
        try:
            cpus = parse_cpulist(text)
        except ValueError:
            notes.append(f"IRQ {irq}: left as it is, its smp_affinity_list {text.strip()!r} "
                         "is not a CPU list")
            continue
        if not cpus & isolated:
            continue
        kept = cpus - isolated
        if not kept & online:
            notes.append(f"IRQ {irq}: left on CPUs {format_cpulist(cpus)}, it has no online "
                         "CPU outside the isolated ones")
            continue
        writes[irq] = format_cpulist(kept)
    return writes, notes


def format_cpumask(cpus: Iterable[int], like: str) -> str:
    """A kernel CPU mask laid out as the mask `like` is: the kernel prints as many hex digits
    as it has CPU ids (nr_cpu_ids), in 32-bit words, most significant first ("ff" for 8,
    "ff,ffffffff" for 40); {0, 2, 3, 4, 6, 7}, "ff" -> "dd"."""
    words = like.strip().split(",")
    digits = len(words[0]) + 8 * (len(words) - 1)
    hexed = f"{sum(1 << c for c in set(cpus)):0{digits}x}"
    head = len(hexed) - 8 * (len(words) - 1)
    return ",".join([hexed[:head], *(hexed[i:i + 8] for i in range(head, len(hexed), 8))])


def steer_workqueue(mask: str | None, isolated: frozenset[int], online: frozenset[int],
                    kernel: tuple[int, int] | None) -> tuple[str | None, list[str]]:
    """The unbound workqueues' mask without the isolated CPUs (None: leave it), and notes.
    Left alone where the kernel already does it (Linux 6.8 or later), where there is no such
    file, or where no online CPU would remain."""
    if mask is None:
        return None, []
    if kernel is not None and kernel >= WORKQUEUE_EXCLUDES_ISOLATED:
        return None, []
    try:
        cpus = parse_cpumask(mask)
    except ValueError:
        return None, [f"workqueue cpumask: left as it is, {mask.strip()!r} is not a CPU mask"]
    if not cpus & isolated:
        return None, []
    kept = cpus - isolated
    if not kept & online:
        return None, [f"workqueue cpumask: left on CPUs {format_cpulist(cpus)}, it has no "
                      "online CPU outside the isolated ones"]
    return format_cpumask(kept, mask) + "\n", []


def steer(affinities: Mapping[int, str], workqueue: str | None, isolated: frozenset[int],
          online: frozenset[int], kernel: tuple[int, int] | None) -> Steering:
    """Everything that changes to keep IRQs and unbound work off the isolated CPUs."""
    irqs, notes = steer_irqs(affinities, isolated, online)
    mask, more = steer_workqueue(workqueue, isolated, online, kernel)
    return Steering({n: text + "\n" for n, text in irqs.items()}, mask, (*notes, *more))


def irqbalance_dropin(isolated: frozenset[int], source: str) -> str:
    """irqbalance.service's drop-in banning the isolated CPUs, as slicectl writes it."""
    # systemd.exec(5): "Settings from these files [EnvironmentFile=] override settings made
    # with Environment=". Debian's irqbalance.service reads /etc/default/irqbalance that way,
    # so a line there setting the same variable wins over this one: apply reads irqbalance's
    # own environment after the restart (banned_cpus) and refuses to go on when it does.
    return ("# Generated by slicectl: irqbalance keeps IRQs off the CPUs of isolated cpuset "
            f"partitions ({source}).\n"
            "# Removed when no tenant is isolated any more.\n"
            "[Service]\n"
            f"Environment={BANNED}={format_cpulist(isolated)}\n")


def banned_cpus(environ: bytes) -> frozenset[int] | None:
    """The CPUs a process environment (`/proc/PID/environ`: NUL-separated) bans through
    IRQBALANCE_BANNED_CPULIST; None when it does not set it or it is no CPU list."""
    for entry in environ.split(b"\0"):
        name, eq, value = entry.partition(b"=")
        if eq and name.decode(errors="replace") == BANNED:
            try:
                return parse_cpulist(value.decode())
            except (UnicodeDecodeError, ValueError):
                return None
    return None


@frozen
class IsolationRecord:
    """What slicectl changed to keep noise off isolated CPUs, recorded before the change:
    the isolated CPUs it was done for, each IRQ's `smp_affinity_list` and the workqueue mask
    before (exact text; only those slicectl writes), and irqbalance's drop-in when it wrote
    one (`restart`: irqbalance was running, and is restarted when the drop-in goes)."""

    isolated: frozenset[int]
    irqs: Mapping[int, str]
    workqueue: str | None = None
    dropin: str | None = None  # the drop-in's path
    restart: bool = False

    def to_json(self) -> dict[str, Any]:
        """The record file's document."""
        return {"format": FORMAT, "isolated": format_cpulist(self.isolated),
                "irqs": {str(n): text for n, text in sorted(self.irqs.items())},
                "workqueue": self.workqueue,
                "irqbalance": None if self.dropin is None else {"dropin": self.dropin,
                                                                "restart": self.restart}}

    @classmethod
    def from_json(cls, data: Any, where: str) -> IsolationRecord:
        """Read back a record; StateError names the file and the JSON path."""
        r = JsonReader(where, _HINT, StateError)
        doc = r.document(data, FORMAT)
        irqs = {}
        for key, text in r.mapping(r.field(doc, "irqs", ""), "irqs").items():
            if not (key.isascii() and key.isdigit() and len(key) <= 7):
                raise r.fail(f"irqs.{key}", "is not an IRQ number")
            irqs[r.integer(int(key), f"irqs.{key}", 0, _IRQ_MAX)] = r.text(text, f"irqs.{key}")
        workqueue = doc.get("workqueue")
        balance = doc.get("irqbalance")
        dropin, restart = None, False
        if balance is not None:
            b = r.mapping(balance, "irqbalance")
            dropin = r.text(r.field(b, "dropin", "irqbalance"), "irqbalance.dropin")
            restart = b.get("restart") is True
        return cls(r.cpulist(r.field(doc, "isolated", ""), "isolated"), irqs,
                   None if workqueue is None else r.text(workqueue, "workqueue"),
                   dropin, restart)


def restore_problems(record: IsolationRecord, irqs: Mapping[int, str | None],
                     workqueue: str | None) -> list[str]:
    """What reads back otherwise than `record` says after a restore: the IRQs' lists as
    read now (None: the IRQ is gone, which is no problem) and the workqueue mask."""
    problems = [f"/proc/irq/{n}/smp_affinity_list: reads {irqs[n]!r}, was {text!r}"
                for n, text in sorted(record.irqs.items())
                if irqs.get(n) is not None and irqs[n] != text]
    if record.workqueue is not None and workqueue is not None \
            and workqueue != record.workqueue:
        problems.append(f"workqueue cpumask: reads {workqueue!r}, was {record.workqueue!r}")
    return problems
