"""The balancer's state file (an edge): read it, write it atomically.

/run/slicectl/balance.json by default (tmpfs: a reboot forgets it, as systemd forgets the
runtime properties the balancer set); tests and other roots pass their own path. What it holds
is slicectl.core.balance.balance_state.
"""

from __future__ import annotations

import json
from pathlib import Path

from slicectl.core.balance.balance import ElasticRange
from slicectl.core.balance.balance_state import BalanceState
from slicectl.core.errors import StateError, shown
from slicectl.host.files.owned import write_atomically


def read_state(path: Path) -> BalanceState | None:
    """The state in `path`; None when there is none (no balancer has run since boot).
    StateError, naming the file, when it cannot be read or is not a state document."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise StateError(f"{shown(path)}: cannot read: {e.strerror}",
                         "run as root, or point --balance-state at a readable file") from None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError: ValueError
        raise StateError(f"{shown(path)}: not JSON ({e})",
                         "remove it: the balancer writes a new one after its next move"
                         ) from None
    return BalanceState.from_json(data, shown(path))


def write_state(path: Path, state: BalanceState) -> None:
    """Replace `path` with `state` atomically (readers see the old file or the new one),
    making its folder if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(state.to_json(), indent=2) + "\n", 0o644)


def state_or_none(path: Path) -> BalanceState | None:
    """The state in `path` for telling the balancer's moves from drift: None when there is
    none or it is unreadable (then a moved tenant shows as drift, which is the safe side)."""
    try:
        return read_state(path)
    except StateError:
        return None


def reset_state(path: Path, ranges: tuple[ElasticRange, ...]) -> None:
    """After `apply` made every tenant its declared size: record that in `path`, if there
    is a state file (an unreadable one is replaced; counters are kept where readable)."""
    if not path.exists():
        return
    old = state_or_none(path) or BalanceState({})
    new = old.declared(ranges)
    if new != old:
        write_state(path, new)
