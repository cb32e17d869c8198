"""When the review's actions on an agent are allowed: sending comments, merge and discard.

Typing into an agent is only for an idle agent (the holder's delivery checks again on the live
screen, and refuses under its own rules too); merge and discard change the agent's worktree
under it, so they also wait for an idle agent, and need the agent to be in a worktree of its
own (a shared folder's branch is not one agent's to merge or throw away).
"""

from __future__ import annotations

from nbs_tui.core.fleet.model import AgentState

_WHY_NOT = {
    AgentState.WORKING: "it is working",
    AgentState.PERMISSION: "it waits on a permission prompt",
    AgentState.PLAN: "it waits on a plan menu",
    AgentState.QUESTION: "it waits on a question",
    AgentState.DIALOG: "it waits on a dialog",
    AgentState.ERROR: "it shows an error",
    AgentState.LIMITED: "it waits for a usage limit's reset",
    AgentState.UNKNOWN: "its state is not known",
}


def send_refusal(state: AgentState | None) -> str | None:
    """Why comments cannot be typed into the agent now, or None."""
    if state is None:
        return "its state is not known yet"
    return _WHY_NOT.get(state)


def worktree_refusal(state: AgentState | None, own_worktree: bool, action: str) -> str | None:
    """Why ``action`` (merge, discard) is not allowed now, or None."""
    if not own_worktree:
        return f"{action} is only for an agent in a worktree of its own (this folder is not one)"
    why = send_refusal(state)
    return f"{action} waits until the agent is idle: {why}" if why else None
