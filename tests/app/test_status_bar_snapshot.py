"""The status bar of a viewer, as a snapshot: another process holds the sidecar lease (named with
its host, pid and since), and the server-wide pause is on."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App, ComposeResult

from nbs_tui.core.model import AgentState
from nbs_tui.widgets.status_bar import StatusBar


class ViewerBar(App[None]):
    def compose(self) -> ComposeResult:
        yield StatusBar("tmux server -L work", id="status")

    def on_mount(self) -> None:
        bar = self.query_one(StatusBar)
        bar.set_connection(True)
        bar.set_lease("sidecar: box pid 4242 since 05:25", False)
        bar.set_paused(True)
        bar.set_counts(7, 6, [AgentState.IDLE, AgentState.IDLE, AgentState.WORKING, AgentState.PLAN])


def test_viewer_status_bar_names_the_holder_and_the_pause(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(ViewerBar(), terminal_size=(150, 2))
