"""The `?` screen: every key binding on one page."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
[b]slicectl tui[/b] — per-slice CPU, memory and pressure, live
[b]Overview[/b]
  ↑/↓        move            enter  slice detail (processes, history)
  ←/→        scroll the other columns by group (the slice column stays)
  space      fold/unfold     x      fold all / unfold all
  /          filter by name (keeps parents of matches; escape clears it)
  s          sort siblings by cpu, memory, pressure, throttled or name
  r          reverse sort    m      NUMA map
  e          edit tenant     p      switch profile  R re-pack a split
  a parent's figures include its subtree; ↑ marks a limit set by a parent
[b]Everywhere[/b]
  + / -      refresh slower / faster (never below 30 ms, Togashi et al.)
  ?          this help       escape back     q quit
[b]Columns[/b] (each over the last refresh)
  throttled  share of CPU periods in which the quota stopped the slice
  psi        share of time some of its tasks waited for cpu, memory or io
  events     memory.events since the last refresh: high +N = N times over
             memory.high, max +N = N times at memory.max, oom, oom_kill
[b]Colours[/b]  [bold red]oom kill[/]  [red]near memory limit[/]  [yellow]pressure[/]
  [magenta]throttled[/]  [cyan]NUMA-bound, under 90 % of its memory local[/]
[b]Editing[/b] (TENANTS, root, the system bus, cgroup v2): change CPUs, weight,
  quota or memory → review the plan → apply live (comments kept)
"""


class HelpScreen(ModalScreen[None]):
    """Key bindings; any of escape, ? or q closes it."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static(HELP.rstrip("\n"), id="help-text")
