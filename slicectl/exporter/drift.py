"""Drift for the exporter: which live properties differ from tenants.yaml (an edge).

The comparison is the one `slicectl plan --exit-code` makes (`slicectl.apply.host_diff`): systemd's
live properties over D-Bus against the plan, the files slicectl owns against the rendered
plan, and the slices that should run. D-Bus, not the cgroup files: systemd's properties are
what `systemctl set-property` changes and what survives a daemon-reload, and only they say
"unset" apart from a value equal to the default; apply verifies the cgroup files itself.

Placing is the costly part (the whole placement and rendering), so the plan is made once, and
again only when the tenants file changes (its mtime or size); each scrape asks systemd only.
The D-Bus connection is kept open in a thread of its own running an asyncio loop, because
prometheus_client collects in its HTTP server's threads.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from slicectl.apply.host_diff import host_diff, managed_units, unit_of
from slicectl.core.errors import SlicectlError
from slicectl.core.properties.live_values import desired
from slicectl.host.files.balance_state_file import state_or_none
from slicectl.host.files.unitdir import UnitDir

if TYPE_CHECKING:
    from slicectl.apply.applier import ApplyOptions
    from slicectl.core.placement.topology import Topology
    from slicectl.core.plan import Plan
    from slicectl.host.systemd.systemd import Systemd

T = TypeVar("T")
# A scrape waits this long for systemd at most; Prometheus' default scrape timeout is 10 s.
DBUS_TIMEOUT_S = 5.0
# Pseudo-properties for what `plan --exit-code` counts besides properties.
ACTIVE = "ActiveState"  # a planned slice not running, or an unplanned one still running
FILE = "UnitFile"  # a file slicectl owns differs from the plan (or is missing or extra)


@dataclass(frozen=True)
class Placed:
    """The plan made from one version of the tenants file."""

    stamp: tuple[int, int]  # mtime_ns, size
    plan: Plan
    files: dict[str, str]


class DriftWatch:
    """Drift rows (unit, property) -> 0/1 for the exporter's `slicectl_drift`."""

    def __init__(self, tenants: Path, topology: Topology, options: ApplyOptions,
                 profile: str | None = None) -> None:
        """Places once; raises the config's errors (the exporter does not start)."""
        self.tenants_path = Path(tenants)
        self.topology = topology
        self.options = options
        self.profile = profile
        self.placed = self._place()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="slicectl-dbus",
                                        daemon=True)
        self._thread.start()
        self._sd: Systemd | None = None

    def _stamp(self) -> tuple[int, int]:
        st = os.stat(self.tenants_path)
        return st.st_mtime_ns, st.st_size

    def _place(self) -> Placed:
        from slicectl.apply.applier import load_plan
        from slicectl.host.planning import load_tenants

        stamp = self._stamp()
        config = load_tenants(str(self.tenants_path), self.profile)
        plan, files = load_plan(config, self.topology, self.options)
        return Placed(stamp, plan, files)

    def refresh(self) -> None:
        """Place again if the tenants file changed; on an error keep the last plan and raise."""
        try:
            changed = self._stamp() != self.placed.stamp
        except OSError as e:
            raise SlicectlError(f"{self.tenants_path}: {e.strerror}", "") from e
        if changed:
            self.placed = self._place()

    def tenants(self) -> dict[str, str]:
        """Unit name -> tenant, for the `tenant` label."""
        return {u.unit: u.tenant for u in self.placed.plan.units if u.tenant}

    def rows(self) -> list[tuple[tuple[str, str], float]]:
        """((unit, property), 1 or 0) for every managed property; raises SlicectlError when
        systemd cannot be asked."""
        return self._run(self._rows())

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(DBUS_TIMEOUT_S)
        except TimeoutError as e:
            future.cancel()
            raise SlicectlError(f"systemd did not answer within {DBUS_TIMEOUT_S:g} s", "") from e

    async def _rows(self) -> list[tuple[tuple[str, str], float]]:
        from slicectl.host.systemd.systemd import Systemd

        placed = self.placed
        try:
            if self._sd is None:
                self._sd = await Systemd.connect(self.options.bus_address)
            diff, states = await host_diff(self._sd, placed.plan, placed.files,
                                           UnitDir(self.options.unit_dir),
                                           self.options.cgroup_root, force=True,
                                           balance=state_or_none(self.options.balance_state))
        except (SlicectlError, OSError, EOFError):
            await self._disconnect()  # ask again over a new connection next time
            raise
        return drift_rows(placed.plan, diff, {u: st.control_group for u, st in states.items()})

    async def _disconnect(self) -> None:
        sd, self._sd = self._sd, None
        if sd is not None:
            try:
                await sd.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to close too
                pass

    def close(self) -> None:
        """Close the D-Bus connection and stop its thread."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._disconnect(), self._loop).result(5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        self._loop.close()


def drift_rows(plan: Plan, diff: Any, control_groups: dict[str, str]
               ) -> list[tuple[tuple[str, str], float]]:
    """Rows of `slicectl_drift` from `plan --exit-code`'s Diff: every property slicectl
    manages on a running unit (1 where it differs), ActiveState of slicectl's slices and of
    slices to stop, UnitFile of units whose files differ."""
    changed = {(c.unit, c.prop) for c in diff.props}
    rows: dict[tuple[str, str], float] = {}
    for u, owned in managed_units(plan):
        if owned:
            rows[(u.unit, ACTIVE)] = float(u.unit in diff.start)
        if control_groups.get(u.unit):
            for prop in desired(u, owned, plan.limits):
                rows[(u.unit, prop)] = float((u.unit, prop) in changed)
    for unit in diff.stop:
        rows[(unit, ACTIVE)] = 1.0
    for unit in {u.unit for u in plan.units}:
        rows.setdefault((unit, FILE), 0.0)
    files = diff.files
    for rel in files.created + files.updated + files.removed:
        rows[(unit_of(rel), FILE)] = 1.0
    return sorted(rows.items())
