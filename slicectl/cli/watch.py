"""The verbs that watch the host: status, top, tui and record (DESIGN §7).

Each samples cgroupfs through `slicectl.host.cgroup.sampler`, computes with
`slicectl.core.monitor.metrics` and prints through `slicectl.views.monitor`'s render layer (status,
top), the TUI, or SQLite (record).
"""

from __future__ import annotations

import sys
import time

from slicectl.cli.common import EXIT_OK, apply_options, require_unified
from slicectl.core import defaults

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any, TextIO

    from rich.live import Live

    from slicectl.core.monitor.metrics import MetricsMemo, NodeCpus
    from slicectl.host.cgroup.sampler import Sampler


def _warn_too_deep(sampler: Sampler) -> None:
    """Say once, on stderr, which cgroups discovery left out for their path length."""
    from slicectl.host.cgroup.sampler import too_deep_warning

    if sampler.too_deep:
        print(f"warning: {too_deep_warning(sampler.root, sampler.too_deep)}", file=sys.stderr)


def run_status(
    cgroup_root: Path,
    as_json: bool,
    interval: float = defaults.MONITOR_INTERVAL_S,
    out: TextIO | None = None,
    *,
    sleep: Callable[[float], None] = time.sleep,
    node_cpus: NodeCpus | None = None,
) -> int:
    """`slicectl status`: two samples `interval` apart, printed once; raises SamplerError.
    `node_cpus`: the host's NUMA nodes and their CPUs, for memory locality."""
    from slicectl.core.monitor.metrics import MetricsMemo
    from slicectl.views.monitor import render_table, status_json

    out = out or sys.stdout  # looked up now: tests (and callers) may have replaced it
    from slicectl.host.cgroup.sampler import Sampler

    with Sampler(cgroup_root) as sampler:
        _warn_too_deep(sampler)
        first = sampler.sample()
        sleep(interval)
        second = sampler.sample()
    metrics = MetricsMemo(node_cpus).compute(first, second)
    dt = second.time - first.time
    if as_json:
        import json

        json.dump(status_json(metrics, dt), out, indent=2, allow_nan=False)
        out.write("\n")
        return EXIT_OK
    from rich.text import Text

    from slicectl.views.monitor import alerts
    from slicectl.views.page import output_width, show

    by_unit = sorted(metrics, key=lambda m: (m.unit, m.cgroup))
    show(render_table(by_unit, title=f"{cgroup_root} over {dt:.2f}s", width=output_width(out)),
         *(Text(line, style="bold red" if line.startswith("alert:") else "")
           for line in alerts(by_unit)), out=out)
    return EXIT_OK


def _top_loop(sampler: Sampler, memo: MetricsMemo, cgroup_root: Path, interval: float,
              iterations: int | None, out: TextIO, live: Live | None,
              pause: Callable[[float], bool]) -> None:
    from slicectl.views.monitor import render_table
    from slicectl.views.page import output_width, show

    prev = sampler.sample()
    done = 0
    while iterations is None or done < iterations:
        if pause(interval):
            return
        cur = sampler.sample()
        metrics = memo.compute(prev, cur)
        prev = cur
        done += 1
        metrics.sort(key=lambda m: (-(m.cpu_cores or 0.0), m.unit))
        title = f"{time.strftime('%H:%M:%S')}  {cgroup_root}  every {interval:g}s"
        if live is not None:
            # The terminal's width now (a resize takes effect at once), not COLUMNS: an
            # exported COLUMNS is often stale in a terminal (rich would prefer it).
            import os

            from rich.text import Text

            live.console.width = os.get_terminal_size(out.fileno()).columns
            # One line: the keys and the interval first, a long cgroup root shortened.
            head = Text(f"{time.strftime('%H:%M:%S')}  every {interval:g}s  (q: quit)  "
                        f"{cgroup_root}", no_wrap=True, overflow="ellipsis")
            live.update(render_table(metrics, title=head, width=live.console.width),
                        refresh=True)
        else:
            show(render_table(metrics, title=title, width=output_width(out)), out=out)


class _Keys:
    """The keys typed while `top` runs: the terminal in cbreak mode (keys arrive at once and
    are not echoed; Ctrl-C still interrupts), restored on exit."""

    QUIT = frozenset("qQ")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.saved: list[Any] = []

    def __enter__(self) -> _Keys:
        import termios
        import tty

        self.saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd)
        return self

    def __exit__(self, *exc: object) -> None:
        import termios

        termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)

    def wait(self, seconds: float) -> bool:
        """Wait `seconds` (other keys are ignored); True as soon as q is typed."""
        import os
        import select

        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                typed = os.read(self.fd, 64).decode(errors="replace")
                if not typed or self.QUIT & set(typed):  # q, or end of input
                    return True
        return False


def run_top(
    cgroup_root: Path,
    interval: float = defaults.MONITOR_INTERVAL_S,
    iterations: int | None = None,
    out: TextIO | None = None,
    *,
    sleep: Callable[[float], None] = time.sleep,
    node_cpus: NodeCpus | None = None,
) -> int:
    """`slicectl top`: a table per interval, busiest slices first, as wide as the terminal
    (columns left out by priority); q or Ctrl-C ends it."""
    out = out or sys.stdout
    from contextlib import ExitStack

    from rich.console import Console
    from rich.live import Live

    from slicectl.core.monitor.metrics import MetricsMemo
    from slicectl.host.cgroup.sampler import Sampler

    def pause(seconds: float) -> bool:
        sleep(seconds)
        return False

    with Sampler(cgroup_root) as sampler, ExitStack() as stack:
        _warn_too_deep(sampler)
        live = None
        try:
            if out.isatty():
                if sys.stdin.isatty():
                    pause = stack.enter_context(_Keys(sys.stdin.fileno())).wait
                live = Live(console=Console(file=out), auto_refresh=False, transient=False)
                stack.callback(live.stop)
                live.start()
            _top_loop(sampler, MetricsMemo(node_cpus), cgroup_root, interval, iterations,
                      out, live, pause)
        except KeyboardInterrupt:
            pass
    return EXIT_OK


def run_record(
    cgroup_root: str,
    db: str,
    interval: float,
    retention_days: float,
    once: bool,
    iterations: int | None = None,
    *,
    node_cpus: NodeCpus | None = None,
) -> int:
    """`slicectl record`: sample every `interval` s (or once) into `db`; returns 0.
    `node_cpus`: the host's NUMA nodes and their CPUs, for memory locality."""
    from pathlib import Path

    from slicectl.host.cgroup.recorder import open_db, record_round
    from slicectl.host.cgroup.sampler import Sampler

    rounds = 1 if once else iterations
    conn = open_db(db)
    try:
        with Sampler(Path(cgroup_root)) as sampler:
            _warn_too_deep(sampler)
            done = 0
            next_at = time.monotonic()
            while rounds is None or done < rounds:
                count = record_round(conn, sampler, time.time(), retention_days,
                                     node_cpus=node_cpus)
                done += 1
                if once:
                    print(f"{db}: recorded {count} cgroup(s)")
                if rounds is not None and done >= rounds:
                    break
                # A fixed schedule (not sleep(interval) after work) keeps rounds evenly spaced.
                next_at += interval
                time.sleep(max(0.0, next_at - time.monotonic()))
    finally:
        conn.close()
    return EXIT_OK


def host_node_cpus(sysfs: str | None = None, proc_root: str | None = None
                   ) -> dict[int, frozenset[int]] | None:
    """The host's NUMA nodes and their CPUs, for memory locality: from `sysfs` (--sysfs ROOT:
    a TopologyError when it cannot be read, a mistake to report), else from /sys (None when
    it cannot be read: status and top then show no local share)."""
    from slicectl.core.defaults import SYSFS
    from slicectl.core.errors import TopologyError
    from slicectl.host.topology.sysfs import read_topology

    try:
        return read_topology(sysfs or SYSFS, proc_root).cpus_by_node
    except TopologyError:
        if sysfs is not None:
            raise
        return None


def cmd_status(args: Namespace) -> int:
    """`slicectl status`."""
    from pathlib import Path

    from slicectl.cli.generator import generator_note

    require_unified(args)
    generator_note(args)
    return run_status(Path(args.cgroup_root), args.json, args.interval,
                      node_cpus=host_node_cpus(args.sysfs, args.proc_root))


def cmd_top(args: Namespace) -> int:
    """`slicectl top`."""
    from pathlib import Path

    require_unified(args)
    return run_top(Path(args.cgroup_root), args.interval, args.iterations,
                   node_cpus=host_node_cpus(args.sysfs, args.proc_root))


def cmd_tui(args: Namespace) -> int:
    """`slicectl tui`; refuses to start without a terminal on stdin and stdout."""
    from pathlib import Path

    from slicectl.core.errors import UsageError

    # Without a terminal Textual never stops drawing (a core busy writing escape codes).
    missing = [name for name, stream in (("standard input", sys.stdin),
                                         ("standard output", sys.stdout))
               if not stream.isatty()]
    if missing:
        raise UsageError(
            f"slicectl tui needs a terminal: {' and '.join(missing)} "
            f"{'is not a terminal' if len(missing) == 1 else 'are not terminals'}",
            "for output to a pipe or a file use `slicectl status` (once, `--json` for "
            "programs) or `slicectl top -n N`")

    require_unified(args)
    from slicectl.tui import run_tui

    return run_tui(args.tenants, Path(args.cgroup_root), args.interval, args.sysfs,
                   args.topology, options=apply_options(args),
                   proc_root=Path(args.proc_root) if args.proc_root else None,
                   # The system bus needs root; a bus named with --bus is a private one
                   # (the demo's, the tests'), where the user may change what they own.
                   needs_root=args.bus is None, systemd_version=args.systemd_version)


def cmd_record(args: Namespace) -> int:
    """`slicectl record`."""
    require_unified(args)
    return run_record(args.cgroup_root, args.db, args.interval, args.retention, args.once,
                      args.iterations, node_cpus=host_node_cpus(args.sysfs, args.proc_root))
