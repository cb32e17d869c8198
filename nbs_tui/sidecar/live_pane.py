"""The live pane: what the sidecar reads and touches right before it acts. Every action is
re-checked on the pane's screen read straight from tmux (`LivePane.read`: the same agent, its
screen now), refused when that screen forbids it (`nbs_tui.core.sidecar.live_safety.live_refusal`),
and text typed (`LivePane.type`), pasted (`LivePane.paste`: a caller's text) or a key pressed
(`LivePane.press`) only while this process may act: one path with a lease or without, the lease
giving the guard (fenced by its token in tmux, typed text marked in flight), and a send's own
``fence`` joined to it (a tmux request's: still standing, and marked typed in the same step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbs_tui.core.fleet.model import Detection, PaneId
from nbs_tui.core.screen.screen_rows import screen_lines_and_faint
from nbs_tui.sidecar.watched_panes import TrackedPane, WatchedPanes
from nbs_tui.tmux.commands import Guard
from nbs_tui.tmux.port import FleetPort, PaneGone

if TYPE_CHECKING:
    from nbs_tui.sidecar.sidecar_lease import SidecarLease


class LivePane:
    """Reading a pane's live screen and pressing its keys, through the fleet."""

    def __init__(self, fleet: FleetPort, lease: SidecarLease | None, panes: WatchedPanes) -> None:
        self.fleet = fleet
        self.lease = lease
        self.panes = panes

    def read(self, tracked: TrackedPane) -> Detection:
        """The pane's screen straight from tmux, with faint rows taken from the mirror; its
        detection is the tick's when the screen is the one the tick read (`WatchedPanes.detect`)."""
        info = tracked.info
        assert info is not None, "a tracked pane is given its info before it is ticked"
        current = {p.pane_id: p for p in self.fleet.panes()}.get(info.pane_id)
        if current is None or current.pid != info.pid or not current.is_agent or current.dead:
            raise PaneGone(f"{info.pane_id} is no longer the same agent pane")
        text = self.fleet.capture_text(info.pane_id)
        lines = text.split("\n")
        faint: list[int] = []
        screen = self.fleet.screen(info.pane_id)
        if screen is not None:
            mirror, mirror_faint = screen_lines_and_faint(screen, tracked.rows)
        else:
            seen = self.fleet.captured(info.pane_id)  # unwatched: the faint rows of its capture
            mirror, mirror_faint = (list(seen.lines), list(seen.faint_rows)) if seen else ([], [])
        faint = [y for y in mirror_faint if y < len(lines) and lines[y].rstrip() == mirror[y]]
        return self.panes.detect(tracked, lines, faint)

    def type(self, pane_id: PaneId, text: str) -> bool:
        """Type text for the sidecar (False: not typed, the lease is someone else's)."""
        return self.fleet.send_text(pane_id, text, guard=self._guard(pane_id, text))

    def paste(self, pane_id: PaneId, text: str, mark: str, fence: Guard | None = None) -> bool:
        """Paste a caller's text whole (bracketed, as `nbs-tui new` pastes a prompt), its
        in-flight mark ``mark`` set in the same step (False: not pasted, a guard refused). A
        fleet that is not one tmux server (a test's) types it instead."""
        guard = joined(self._guard(pane_id, mark), fence)
        commands = self.fleet.commands
        if commands is None:
            return self.fleet.send_text(pane_id, text, guard=guard)
        return commands.paste(pane_id, text, guard=guard)

    def press(self, pane_id: PaneId, key: str) -> bool:
        """Press a key for the sidecar (False: not pressed, the lease is someone else's)."""
        return self.fleet.send_keys(pane_id, key, guard=self._guard(pane_id))

    def _guard(self, pane_id: PaneId, typing: str | None = None) -> Guard | None:
        """What the sidecar's keys go through, one path either way: with a lease, only while
        tmux still has our token (typed text marked in flight in the same step); without one,
        nothing."""
        return self.lease.guard(pane_id, typing) if self.lease is not None else None


def joined(guard: Guard | None, more: Guard | None) -> Guard | None:
    """Both guards as one: both conditions, both lists of commands run first (on the pane)."""
    if guard is None or more is None:
        return guard or more
    return Guard(
        f"#{{&&:{guard.condition},{more.condition}}}",
        (*guard.before, *more.before),
        target=guard.target or more.target,
    )
