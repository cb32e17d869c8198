"""A fleet without tmux, for tests of the app's wiring that need exact control over timing."""

from __future__ import annotations

from collections.abc import Sequence

from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.tmux.commands import Guard
from nbs_tui.tmux.port import FleetListener, FleetPort, PaneGone


def pane_info(pane_id: str, index: int, *, agent: bool = True, title: str = "", path: str = "/work/proj") -> PaneInfo:
    return PaneInfo(
        pane_id=pane_id,
        session_name="fleet",
        window_index=index,
        window_name=f"w{index}",
        pane_index=0,
        title=title or f"agent {index}",
        current_command="claude" if agent else "bash",
        current_path=f"{path}{index}",
        pid=1000 + index,
        width=100,
        height=30,
        is_agent=agent,
    )


class FakeFleet(FleetPort):
    """Screens you feed by hand; callbacks are called synchronously from the test's thread."""

    def __init__(self, listener: FleetListener, panes: Sequence[PaneInfo] = ()) -> None:
        self.listener = listener
        self._panes = list(panes)
        self.screens: dict[PaneId, PaneScreen] = {p.pane_id: PaneScreen(p.width, p.height) for p in panes}
        self.started = False
        self.sent: list[tuple[PaneId, str]] = []

    def start(self) -> None:
        self.started = True
        self.listener.connection_changed(True, "")
        self.listener.fleet_changed(list(self._panes))

    def stop(self) -> None:
        self.started = False

    def panes(self) -> list[PaneInfo]:
        return list(self._panes)

    def screen(self, pane_id: PaneId) -> PaneScreen | None:
        return self.screens.get(pane_id)

    def capture_text(self, pane_id: PaneId) -> str:
        screen = self.screens.get(pane_id)
        if screen is None:
            raise PaneGone(pane_id)
        return "\n".join(screen.text_lines())

    def send_text(self, pane_id: PaneId, text: str, *, guard: Guard | None = None) -> bool:
        assert guard is None, "this fake has no tmux to guard typing in"
        self.sent.append((pane_id, text))
        return True

    def send_keys(self, pane_id: PaneId, *keys: str, guard: Guard | None = None) -> bool:
        assert guard is None, "this fake has no tmux to guard typing in"
        self.sent.append((pane_id, " ".join(keys)))
        return True

    # test controls
    def feed(self, pane_id: PaneId, data: str) -> None:
        self.screens[pane_id].feed(data.encode())
        self.listener.screens_changed(frozenset({pane_id}))

    def set_panes(self, panes: Sequence[PaneInfo]) -> None:
        self._panes = list(panes)
        for pane in panes:
            self.screens.setdefault(pane.pane_id, PaneScreen(pane.width, pane.height))
        self.listener.fleet_changed(list(self._panes))
