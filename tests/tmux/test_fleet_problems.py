"""The fleet's own failures reach the problem sink (`nbs_tui.core.fleet.problems`: the E screen, the
log, ``--headless``'s error lines), each once while it repeats, not only the module's log."""

from __future__ import annotations

from collections.abc import Sequence

import libtmux

from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.tmux.fleet import TmuxFleet

from .fleet_helpers import Recorder, address, new_session, wait_for


class BrokenView(Recorder):
    """A listener whose every fleet and screen update raises, and which keeps the problems."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[tuple[str, str]] = []

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        super().fleet_changed(panes)
        raise RuntimeError("the fleet list broke")

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        super().screens_changed(pane_ids)
        raise RuntimeError("the pane view broke")

    def problem(self, source: str, message: str) -> None:
        with self.lock:
            self.problems.append((source, message))

    def said(self, words: str) -> list[tuple[str, str]]:
        with self.lock:
            return [p for p in self.problems if words in p[1]]


def test_a_listener_that_raises_is_a_problem_reported_once_while_it_repeats(server: libtmux.Server) -> None:
    session = new_session(server, "broken", 80, 24)
    view = BrokenView()
    fleet = TmuxFleet(address(server), (), view)
    fleet.start()
    try:
        wait_for(lambda: bool(view.said("the fleet list broke")))
        pane = session.active_window.active_pane
        assert pane is not None
        for n in range(3):  # more fleet changes and more output: each call raises again
            session.new_window(window_name=f"w{n}", attach=False)
            pane.send_keys(f"echo out{n}", enter=True)
            wait_for(lambda n=n: len(view.fleets) >= n + 2)  # type: ignore[misc]
        wait_for(lambda: view.screen_calls >= 2 and bool(view.said("the pane view broke")))
    finally:
        fleet.stop()
    assert view.said("the fleet list broke") == [("tmux", "showing the changed fleet failed: RuntimeError('the fleet list broke')")]
    assert len(view.said("the pane view broke")) == 1, view.problems
