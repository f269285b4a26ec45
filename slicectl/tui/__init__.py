"""slicectl's terminal UI (Textual). `run_tui` is the entry point of `slicectl tui`.

Importing this package does not import textual: the app is loaded inside `run_tui`, after
the cgroup root, tenants.yaml and the topology have been checked, so a wrong path ends in
`error:`/`hint:` lines and exit status 1 rather than a traceback in a half-drawn screen.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from slicectl.core import defaults
from slicectl.core.errors import SlicectlError

if TYPE_CHECKING:
    from slicectl.apply.applier import ApplyOptions
    from slicectl.core.placement.topology import Topology
    from slicectl.host.cgroup.sampler import Sampler
    from slicectl.tui.settings import TuiSettings

__all__ = ["run_tui", "tui_sampler", "tui_settings"]

# Interface files no screen of the TUI shows a figure of (it has no IO column): its sampler
# leaves them unread, a read per cgroup per refresh (BENCHMARKS.md, tui.100.host).
UNSHOWN_FILES = frozenset({"io.stat"})


def tui_sampler(cgroup_root: Path) -> Sampler:
    """The sampler `slicectl tui` reads with: the slices and the services and scopes in them
    (the tree shows them), without `UNSHOWN_FILES`; raises SamplerError (no cgroup v2 root)."""
    from slicectl.host.cgroup.sampler import Sampler

    return Sampler(Path(cgroup_root), units=True, skip=UNSHOWN_FILES)


def tui_settings(tenants: str | None, cgroup_root: Path,
                 interval: float = defaults.MONITOR_INTERVAL_S,
                 sysfs: str | None = None, topology_file: str | None = None, *,
                 options: ApplyOptions | None = None, proc_root: Path | None = None,
                 euid: int | None = None, needs_root: bool = True,
                 systemd_version: int | None = None) -> TuiSettings:
    """Resolve the command line into settings; raises ConfigError/TopologyError for bad input.
    `needs_root`: False where changing the host does not need root (the demo's private bus).
    `systemd_version`: the target's release (--systemd-version), else the one the topology
    file records, else this host's."""
    from slicectl.apply.applier import ApplyOptions
    from slicectl.tui.model import readonly_reasons
    from slicectl.tui.settings import TuiSettings

    cgroup_root = Path(cgroup_root)
    options = options or ApplyOptions(cgroup_root=cgroup_root)
    config = None
    if tenants is not None:
        from slicectl.host.planning import load_tenants

        config = load_tenants(tenants)
    topology, topology_error = None, ""
    try:
        from slicectl.host.topology.sysfs import load_topology

        topology = load_topology(topology_file, sysfs, None if proc_root is None else
                                 str(proc_root))
    except SlicectlError as e:
        if sysfs is not None or topology_file is not None:
            raise  # asked for explicitly: a mistake to report, not to paper over
        topology_error = e.message
    readonly = readonly_reasons(tenants, options.cgroup_root, options.bus_address, euid,
                                needs_root=needs_root)
    if topology is None and tenants is not None:
        readonly.append(f"no topology ({topology_error})")
    proc = proc_root or Path(defaults.PROC)
    if topology is not None and topology.total_memory:
        memory = topology.total_memory
    else:
        from slicectl.host.topology.sysfs import host_memory

        memory = host_memory(proc)
    version, source = _target_systemd(systemd_version, topology, topology_file)
    return TuiSettings(cgroup_root=cgroup_root, interval=interval, tenants=tenants,
                       config=config, topology=topology, topology_error=topology_error,
                       options=options, proc_root=proc, host_memory=memory,
                       readonly=readonly, systemd_version=version, systemd_source=source)


def _target_systemd(asked: int | None, topology: Topology | None, topology_file: str | None
                    ) -> tuple[int | None, str]:
    """The target's systemd release and where it comes from (as `plan` learns it)."""
    if asked is not None:
        return asked, "--systemd-version"
    if topology is not None and topology.systemd_version is not None:
        return topology.systemd_version, f"recorded in {topology.source}"
    if topology_file is not None:
        return None, ""  # another host's topology that does not say: unknown
    from slicectl.host.systemd.hostinfo import systemd_version

    return systemd_version(), "systemd on this host"


def run_tui(tenants: str | None, cgroup_root: Path,
            interval: float = defaults.MONITOR_INTERVAL_S,
            sysfs: str | None = None, topology_file: str | None = None, *,
            options: ApplyOptions | None = None, proc_root: Path | None = None,
            needs_root: bool = True, systemd_version: int | None = None) -> int:
    """`slicectl tui`: raises SamplerError (no cgroup v2 root), ConfigError or TopologyError
    before the screen is taken over; returns the exit status. `needs_root`: as `tui_settings`."""
    # The cgroup root first: the likeliest mistake.
    with tui_sampler(cgroup_root) as sampler:
        settings = tui_settings(tenants, cgroup_root, interval, sysfs, topology_file,
                                options=options, proc_root=proc_root, needs_root=needs_root,
                                systemd_version=systemd_version)
        from slicectl.tui.app import SlicectlApp

        result = SlicectlApp(settings, sampler).run()
    return result or 0
