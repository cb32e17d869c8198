"""An agent's base: the commit (and the branch it was on) its folder stood at when nbs-tui
started the agent, against which its changes are counted.

``nbs-tui new`` (and ``--worktree``, and a restore) writes it on the agent's pane as the tmux
option ``@nbs_base`` (`BASE_OPTION`: ``COMMIT BRANCH``, the branch left out when HEAD was
detached), so every process reads it from tmux as it reads ``@nbs_worker``; the fleet memory
keeps it with the agent (`nbs_tui.core.fleet.fleet_memory.RememberedAgent.base`) so a restored
agent is put back on the same base. An agent nbs-tui did not start has none: its base is then
found from git (`nbs_tui.files.git_changes.fallback_base`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BASE_OPTION = "@nbs_base"

_COMMIT = re.compile(r"[0-9a-f]{7,64}")


@dataclass(frozen=True, slots=True)
class AgentBase:
    commit: str
    branch: str | None = None
    """The branch checked out at the start; None when HEAD was detached."""

    def render(self) -> str:
        """The pane option's value (a branch name never holds a space: git refuses one)."""
        return f"{self.commit} {self.branch}" if self.branch else self.commit

    def as_json(self) -> dict[str, str | None]:
        return {"commit": self.commit, "branch": self.branch}


def parse_base(value: str) -> AgentBase | None:
    """``@nbs_base``'s value read back; None when empty or not a commit (set by hand)."""
    commit, _, branch = value.strip().partition(" ")
    if not _COMMIT.fullmatch(commit):
        return None
    return AgentBase(commit, branch.strip() or None)
