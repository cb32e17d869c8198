"""The one-line header: which server, whether it is connected, and how many agents are in each state."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from rich.text import Text
from textual.widgets import Static

from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import AgentState
from nbs_tui.core.screen.text import printable
from nbs_tui.widgets.pane_text import STATE_STYLES


class StatusBar(Static):
    """Server, connection and counts; updated by the app, never by a thread."""

    DEFAULT_CSS = """
    StatusBar {
        dock: top;
        height: 1;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    """

    def __init__(self, server: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.server = server
        self.connected: bool | None = None
        self.view_name = "dashboard"
        self._counts: tuple[int, int, tuple[tuple[AgentState, int], ...]] = (0, 0, ())
        self.problems = 0
        self.lease: tuple[str, bool] | None = None
        """(who holds the sidecar lease, whether it is this dashboard); None: no lease in use."""
        self.hosts: tuple[HostState, ...] = ()
        """Several hosts watched: each one's connection (and whether this dashboard acts there)."""
        self.paused = False
        """The server-wide sidecar pause (``@nbs_pause``) is on."""
        self.usage: tuple[str, str] = ("", "")
        """Each account's 5-hour and 7-day use (the usage meter, issue 37), long and short; ""
        when none is recorded."""
        self.meters: tuple[str, str] = ("", "")
        """The fleet's totals, formatted long (cost and tokens) and short (cost): "" when none."""

    def on_mount(self) -> None:
        self._redraw()

    def set_server(self, label: str) -> None:
        self.server = label
        self._redraw()

    def set_connection(self, connected: bool | None) -> None:
        self.connected = connected
        self._redraw()

    def set_view(self, name: str) -> None:
        self.view_name = name
        self._redraw()

    def set_counts(self, panes: int, agents: int, states: Iterable[AgentState]) -> None:
        counted = Counter(states)
        order = [s for s in AgentState if counted.get(s)]
        counts = (panes, agents, tuple((s, counted[s]) for s in order))
        if counts != self._counts:
            self._counts = counts
            self._redraw()

    def set_problems(self, count: int) -> None:
        """How many distinct backend problems the problems screen lists (0: nothing shown)."""
        if count != self.problems:
            self.problems = count
            self._redraw()

    def set_lease(self, text: str, acting: bool) -> None:
        if (text, acting) != self.lease:
            self.lease = (text, acting)
            self._redraw()

    def set_hosts(self, states: tuple[HostState, ...]) -> None:
        if states != self.hosts:
            self.hosts = states
            self._redraw()

    def set_meters(self, text: str, short: str = "") -> None:
        """``text``: the fleet's totals; ``short``: what to show when the bar is too narrow."""
        if (text, short) != self.meters:
            self.meters = (text, short or text)
            self._redraw()

    def set_usage(self, text: str, short: str = "") -> None:
        if (text, short) != self.usage:
            self.usage = (text, short or text)
            self._redraw()

    def set_paused(self, paused: bool) -> None:
        if paused != self.paused:
            self.paused = paused
            self._redraw()

    def on_resize(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        width = self.content_size.width
        # when the bar is too narrow, first the view's name goes, then the meters' tokens
        for view, long_meters in ((True, True), (False, True), (False, False)):
            text = self._line(view=view, long_meters=long_meters)
            if not width or text.cell_len <= width:
                break
        self.update(text, layout=False)  # docked, one row high: its size never changes

    def _line(self, *, view: bool, long_meters: bool) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("nbs-tui", style="bold")
        text.append("  ")
        text.append(self.server, style="italic")
        text.append("  ")
        if self.connected is None:
            text.append("◌ connecting", style="yellow")
        elif self.connected:
            text.append("● connected", style="green")
        else:
            text.append("✖ disconnected", style="bold red")
        for host in self.hosts:
            mark, style = ("◌", "yellow") if host.connected is None else ("●", "green") if host.connected else ("✖", "bold red")
            text.append("  ")
            text.append(f"{mark} {host.name}" + ("" if host.connected is not False else " offline"), style=style)
            if host.acting:
                text.append(" ⚑", style="green")
        if self.problems:  # next to the connection: an ellipsis must not hide it
            text.append("  ")
            text.append(f" ⚠ {self.problems} problem{'' if self.problems == 1 else 's'} ", style="bold white on red")
        if self.lease is not None:
            who, acting = self.lease
            text.append("  ")
            text.append(f"⚑ {printable(who)}", style="green" if acting else "yellow" if "no sidecar" in who else "dim")
        if self.paused:
            text.append("  ")
            text.append(" ⏸ sidecar paused ", style="bold black on yellow")
        panes, agents, states = self._counts
        text.append(f"   {panes} panes · {agents} agents", style="")
        for state, count in states:
            text.append("  ")
            text.append(f" {count} {state.value} ", style=STATE_STYLES.get(state, ""))
        meters = self.meters[0 if long_meters else 1]
        if meters:
            text.append(f"  Σ {meters}", style="")
        usage = self.usage[0 if long_meters else 1]
        if usage:
            text.append(f"  usage {printable(usage)}", style="")
        if view:
            text.append(f"   [{self.view_name}]", style="dim")
        return text
