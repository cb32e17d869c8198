"""The review screen's actions on one agent: read its changes, send it the operator's comments,
merge its branch into the base, discard its work. No Textual: the dashboard calls these from a
thread worker (every one blocks on git or on the holder's delivery) and shows what they say.

Each action is one line in the action log (``review-comments``, ``merge``, ``discard``), done
or refused, with the reason. Comments go to the agent through the holder's delivery (`Deliver`:
typed once, whole, under the sidecar's rules, which refuse while the agent works or waits on a
dialog); merge and discard only for an agent idle in a worktree of its own
(`nbs_tui.core.review.review_rules`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.review.agent_base import AgentBase
from nbs_tui.core.review.agent_changes import AgentChanges, FileChange
from nbs_tui.core.review.review_comments import ReviewComment, comments_prompt
from nbs_tui.core.review.review_rules import send_refusal, worktree_refusal
from nbs_tui.core.review.unified_diff import ParsedDiff, parse_file_diff
from nbs_tui.files.git_changes import GitError, file_diff, read_agent_changes
from nbs_tui.files.review_git import (
    WorktreeFacts,
    discard_worktree,
    merge_into_base,
    worktree_facts,
)
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome

WHY = "review"


@dataclass(frozen=True, slots=True)
class Said:
    """What an action did, or why it did nothing, for the operator."""

    ok: bool
    text: str


Deliver = Callable[[PaneInfo, str], Said]
"""Types a prompt into the agent's pane once, whole, and submits it, under the sidecar's rules
(the holder's in-process delivery); says whether it went through and why not."""


@dataclass(frozen=True, slots=True)
class ReviewLoad:
    """An agent's worktree as the review opened it."""

    pane: PaneInfo
    facts: WorktreeFacts | None
    """None: the folder is not in git (then ``message`` says so)."""
    files: tuple[FileChange, ...]
    against: str | None = None
    """The commit the files are counted from (the agent's base)."""
    message: str = ""

    @property
    def own_worktree(self) -> bool:
        return self.facts is not None and self.facts.own_worktree


class ReviewActions:
    """One per dashboard (see the module docstring)."""

    def __init__(
        self, log: ActionLog, deliver: Deliver, state_of: Callable[[PaneId], AgentState | None],
        base_of: Callable[[PaneInfo], AgentBase | None], *, local: Callable[[PaneInfo], bool] = lambda _pane: True,
        counted: Callable[[PaneInfo], AgentChanges | None] = lambda _pane: None, wall: Callable[[], float] = time.time,
    ) -> None:  # fmt: skip
        self._log = log
        self._deliver = deliver
        self._state_of = state_of
        self._base_of = base_of
        """The base remembered when nbs-tui started the agent (``@nbs_base``), or None."""
        self._counted = counted
        """The change column's own reading of the agent (its own files where agents share a
        worktree, by the hooks), when the counter has read it; else the folder is read here."""
        self._local = local
        """Whether the agent's folder is on this machine (git runs here; another host's is not reviewed yet)."""
        self._wall = wall

    def load(self, pane: PaneInfo) -> ReviewLoad:
        """The agent's changes against its base (`nbs_tui.files.git_changes.read_agent_changes`),
        and its worktree's facts for merge and discard."""
        if not self._local(pane):
            return ReviewLoad(pane, None, (), message="the review reads git on this machine: an agent on another host is not reviewed yet")
        base = self._base_of(pane)
        try:
            changes = self._counted(pane) or read_agent_changes(pane.target, pane.current_path, base.commit if base else None)
            if changes.repository is None:
                return ReviewLoad(pane, None, (), message=changes.message or "not in a git repository: nothing to review")
            facts = worktree_facts(Path(changes.repository), base.branch if base else None)
        except GitError as error:
            return ReviewLoad(pane, None, (), message=str(error))
        return ReviewLoad(pane, facts, changes.files, changes.base, changes.message or "")

    def file_diff(self, load: ReviewLoad, change: FileChange) -> ParsedDiff:
        """One file's diff, read into hunks (cut where git's output was)."""
        if load.facts is None:
            return ParsedDiff(change.path, ())
        diff = file_diff(str(load.facts.root), load.against, change)
        parsed = parse_file_diff(change.path, diff.text)
        return parsed if not diff.truncated else replace(parsed, cut=max(parsed.cut, 1))

    def send_comments(self, pane: PaneInfo, comments: Sequence[ReviewComment]) -> Said:
        """The comments as one prompt, typed once; refused while the agent is not idle."""
        if not comments:
            return Said(False, "no comments to send")
        prompt = comments_prompt(comments)
        why_not = send_refusal(self._state_of(pane.pane_id))
        said = Said(False, f"not sent: {why_not}") if why_not else self._deliver(pane, prompt)
        self._record(pane, "review-comments", prompt, said)
        return said

    def merge(self, load: ReviewLoad) -> Said:
        refused = self._worktree_refusal(load, "merge")
        facts = load.facts
        if refused is not None or facts is None:
            said = Said(False, refused or "not in git")
        else:
            try:
                result = merge_into_base(facts)
                said = Said(result.merged, result.said)
            except GitError as error:
                said = Said(False, f"not merged: {error}")
        what = f"merge {facts.branch} into {facts.base}" if facts else "merge"
        self._record(load.pane, "merge", what, said)
        return said

    def discard(self, load: ReviewLoad) -> Said:
        refused = self._worktree_refusal(load, "discard")
        facts = load.facts
        if refused is not None or facts is None:
            said = Said(False, refused or "not in git")
        else:
            stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self._wall()))
            try:
                said = Said(True, discard_worktree(facts, stamp).said)
            except GitError as error:
                said = Said(False, f"not discarded: {error}")
        what = f"discard {facts.branch}" if facts else "discard"
        self._record(load.pane, "discard", what, said)
        return said

    def _worktree_refusal(self, load: ReviewLoad, action: str) -> str | None:
        return worktree_refusal(self._state_of(load.pane.pane_id), load.own_worktree, action)

    def _record(self, pane: PaneInfo, action: str, sent: str, said: Said) -> None:
        outcome = Outcome.SENT if said.ok else Outcome.SKIPPED
        self._log.append(ActionRecord(self._wall(), action, pane.pane_id, pane.target, sent, WHY, outcome, said.text))
