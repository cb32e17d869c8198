"""The live pane: what the sidecar checks and touches right before it acts. Every action is
re-checked on the pane's screen read straight from tmux (`_live`: the same agent, its screen
now), refused when that screen forbids it (`_refusal`), and text typed (`_type`) or a key
pressed (`_press`) only while this process may act: one path with a lease or without, the lease
giving the guard (`_guard`: fenced by its token in tmux, typed text marked in flight).
"""

from __future__ import annotations

from nbs_tui.core.detection.detect import FLAG_CONTEXT_PRESSURE, detect_lines
from nbs_tui.core.fleet.model import AgentState, Detection, PaneId, PaneInfo
from nbs_tui.core.screen.screen_rows import screen_lines_and_faint
from nbs_tui.core.sidecar.pane_sidecar import Action, InjectPoll, SelectPlanOption, SubmitPoll
from nbs_tui.sidecar.state import RunnerState
from nbs_tui.tmux.commands import Guard
from nbs_tui.tmux.port import PaneGone


class LivePane(RunnerState):
    """Reading a pane's live screen, the rules it must pass, and pressing its keys."""

    def _live(self, info: PaneInfo) -> Detection:
        """The pane's screen straight from tmux, with faint rows taken from the mirror."""
        current = {p.pane_id: p for p in self.fleet.panes()}.get(info.pane_id)
        if current is None or current.pid != info.pid or not current.is_agent or current.dead:
            raise PaneGone(f"{info.pane_id} is no longer the same agent pane")
        text = self.fleet.capture_text(info.pane_id)
        lines = text.split("\n")
        faint: list[int] = []
        screen = self.fleet.screen(info.pane_id)
        if screen is not None:
            mirror, mirror_faint = screen_lines_and_faint(screen)
        else:
            seen = self.fleet.captured(info.pane_id)  # unwatched: the faint rows of its capture
            mirror, mirror_faint = (list(seen.lines), list(seen.faint_rows)) if seen else ([], [])
        faint = [y for y in mirror_faint if y < len(lines) and lines[y].rstrip() == mirror[y]]
        return detect_lines(lines, faint_rows=faint)

    def _type(self, pane_id: PaneId, text: str) -> bool:
        """Type text for the sidecar (False: not typed, the lease is someone else's)."""
        return self.fleet.send_text(pane_id, text, guard=self._guard(pane_id, text))

    def _press(self, pane_id: PaneId, key: str) -> bool:
        """Press a key for the sidecar (False: not pressed, the lease is someone else's)."""
        return self.fleet.send_keys(pane_id, key, guard=self._guard(pane_id))

    def _guard(self, pane_id: PaneId, typing: str | None = None) -> Guard | None:
        """What the sidecar's keys go through, one path either way: with a lease, only while
        tmux still has our token (typed text marked in flight in the same step); without one,
        nothing."""
        return self.lease.guard(pane_id, typing) if self.lease is not None else None

    @staticmethod
    def _refusal(live: Detection, action: Action) -> str | None:
        """Why the live screen forbids ``action`` now (None: go ahead)."""
        if isinstance(action, InjectPoll) and action.purpose == "resume":
            if live.state is not AgentState.LIMITED:
                return f"live screen is no longer limited ({live.state.value}: {live.reason})"
            if live.limit is not None and live.limit.auto_resume:
                return "Claude Code continues by itself (live screen)"
            if live.input_text != "":
                return f"the live input box is not free ({live.input_text!r})"
            return None
        if isinstance(action, InjectPoll):
            if not live.safe_to_inject or live.state is not AgentState.IDLE:
                return (
                    f"live screen is not an empty idle prompt ({live.state.value}: {live.reason})"
                )
            if FLAG_CONTEXT_PRESSURE in live.flags:
                return "context pressure on the live screen"
            return None
        if isinstance(action, SubmitPoll):
            if live.input_text != action.text:
                return f"the input box holds {live.input_text!r}, not {action.text!r}"
            if live.state not in (AgentState.IDLE, AgentState.WORKING, AgentState.LIMITED):
                return f"a {live.state.value} screen is showing"
            return None
        if isinstance(action, SelectPlanOption):
            if live.state is not AgentState.PLAN:
                return f"the plan menu is gone ({live.state.value})"
            if action.options and tuple(o.label for o in live.options) != tuple(
                o.label for o in action.options
            ):
                return "the plan menu changed"
            return None
        return None
