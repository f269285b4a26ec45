"""What the screens read of the app's state (slicectl.tui.state): the app provides every member
of the read-only TuiState protocol the screens are written against."""

from __future__ import annotations

from paths import TESTS

from slicectl.tui import tui_sampler
from slicectl.tui.app import SlicectlApp
from slicectl.tui.settings import TuiSettings
from slicectl.tui.state import TuiState

CGROUP = TESTS / "fixtures" / "cgroup"


def members() -> set[str]:
    return {name for name in vars(TuiState) if not name.startswith("_")}


def test_the_protocol_names_what_screens_read() -> None:
    assert members() == {"settings", "metrics", "history", "sort_key", "sort_reverse",
                         "interval", "config", "profile", "readonly", "tenant_of",
                         "cpu_shares", "balance"}


def test_the_app_provides_every_member() -> None:
    with tui_sampler(CGROUP) as sampler:
        app = SlicectlApp(TuiSettings(cgroup_root=CGROUP), sampler)
        missing = [name for name in sorted(members()) if not hasattr(app, name)]
        assert missing == []
        state: TuiState = app  # mypy checks the app against the protocol here
        assert state.tenant_of(None) is None and state.readonly == []
