"""`slicectl exporter`: serve every slice's metrics to Prometheus, or write them for
node_exporter's textfile collector (slicectl.exporter.server, docs/metrics.md)."""

from __future__ import annotations

import sys
import time

from slicectl.cli.common import EXIT_OK, apply_options, load_topology, require_unified

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable

    from slicectl.core.monitor.metrics import NodeCpus
    from slicectl.core.placement.topology import Topology


def cmd_exporter(args: Namespace) -> int:
    """`slicectl exporter`: until stopped (or once / N times with --textfile)."""
    from functools import partial
    from pathlib import Path

    from slicectl.exporter.server import (
        Exposition,
        SliceCollector,
        manifest_tenants,
        parse_listen,
        serve,
        write_textfile,
    )
    from slicectl.host.cgroup.sampler import Sampler

    web = None
    if args.web_config and args.textfile:
        from slicectl.core.errors import UsageError

        raise UsageError("--web-config is for the HTTP server, not --textfile",
                         "node_exporter serves the textfile: give it the web config")
    if not args.textfile:
        parse_listen(args.listen)  # a bad address fails before anything is read
    if args.web_config:
        from slicectl.exporter.webconfig import load_web_config

        web = load_web_config(Path(args.web_config))
    require_unified(args)
    topo = _topology(args)
    node_cpus: NodeCpus | None = None if topo is None else topo.cpus_by_node
    options = apply_options(args)
    drift = None
    if args.tenants:
        from slicectl.exporter.drift import DriftWatch

        assert topo is not None
        drift = DriftWatch(Path(args.tenants), topo, options, args.profile)
    try:
        with Sampler(Path(args.cgroup_root)) as sampler:
            collector = SliceCollector(sampler, node_cpus=node_cpus, drift=drift,
                                       tenants=partial(manifest_tenants, options.unit_dir),
                                       balance_state=options.balance_state)
            exposition = Exposition(collector)
            if args.textfile:
                return _textfiles(args, partial(write_textfile, exposition,
                                                Path(args.textfile)))
            return _serve(args, partial(serve, exposition, args.listen, web),
                          tls=web is not None and web.tls is not None)
    finally:
        if drift is not None:
            drift.close()


def _topology(args: Namespace) -> Topology | None:
    """The host's topology: needed for --tenants (placing); else only for the locality ratio,
    so without a readable sysfs the exporter goes on without it."""
    from slicectl.core.errors import SlicectlError

    if args.tenants:
        return load_topology(args)
    try:
        return load_topology(args)
    except SlicectlError as e:
        print(f"warning: {e.message}; slicectl_memory_local_ratio is left out", file=sys.stderr)
        return None


def _textfiles(args: Namespace, write: Callable[[], None]) -> int:
    rounds = args.iterations if args.interval is not None else 1
    done = 0
    next_at = time.monotonic()
    while True:
        write()
        done += 1
        if rounds is not None and done >= rounds:
            return EXIT_OK
        next_at += args.interval
        time.sleep(max(0.0, next_at - time.monotonic()))


def _serve(args: Namespace, start: Callable[[], tuple[Callable[[], None], int]],
           tls: bool) -> int:
    import signal
    import threading

    stop, port = start()
    host = args.listen.rpartition(":")[0] or "0.0.0.0"
    scheme = "https" if tls else "http"
    print(f"slicectl exporter: serving {scheme}://{host}:{port}/metrics", file=sys.stderr,
          flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    finally:
        stop()
    return EXIT_OK
