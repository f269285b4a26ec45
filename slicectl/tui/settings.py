"""What the TUI needs from the command line, resolved before the app starts (no textual)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from slicectl.core import defaults

if TYPE_CHECKING:
    from slicectl.apply.applier import ApplyOptions
    from slicectl.core.config.config import Config
    from slicectl.core.placement.topology import Topology


@dataclass
class TuiSettings:
    """Everything the app needs from the command line, resolved before it starts."""

    cgroup_root: Path
    interval: float = defaults.MONITOR_INTERVAL_S
    tenants: str | None = None
    config: Config | None = None
    topology: Topology | None = None
    topology_error: str = ""
    options: ApplyOptions | None = None
    proc_root: Path = Path(defaults.PROC)
    host_memory: int = 0  # bytes of RAM: the scale of a memory sparkline without a limit
    readonly: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The target's systemd release and where it was learnt ("recorded in host.json"): the
    # edit form holds back keys it cannot take. None: unknown, every key is offered.
    systemd_version: int | None = None
    systemd_source: str = ""
