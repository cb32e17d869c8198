"""Did a prompt reach the agent, and how did its turn end: read from Claude Code's transcript.

The work queue's feeder asks this of the agent a task was handed to (docs/queue.md): a prompt
is *in* once the transcript holds a user record with that text, written at or after the
hand-out began (Claude Code writes the prompt there when it submits it); the turn is *over*
once the records after it fold (`nbs_tui.claude.transcript.apply_record`, as the meters reader
folds them) to an idle agent, or the next prompt comes (a poll, the operator's: the turn ended
before it), and the last assistant text before that is the task's result.

Read from an offset (the transcript's size when the hand-out began), at most `MAX_READ` bytes
from the end, and only again when the file's size changed (`TurnReader`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

from nbs_tui.claude.transcript import (
    TranscriptFacts,
    _content_blocks,
    _timestamp,
    apply_record,
    find_transcript,
)
from nbs_tui.core.fleet.model import AgentState

MAX_READ = 8 * 1024 * 1024
CLOCK_SLACK = 2.0
"""Seconds a prompt's timestamp may be before the hand-out's (Claude Code's clock is ours, but
its timestamps are milliseconds and the hand-out's time is taken before typing)."""


@dataclass(frozen=True, slots=True)
class PromptTurn:
    """What the transcript says of one prompt."""

    found: bool = False
    """The prompt is in the transcript (it was submitted)."""
    prompt_at: float | None = None
    state: AgentState = AgentState.UNKNOWN
    """The agent's state after the records that follow the prompt (idle: the turn is over)."""
    reply: str | None = None
    """The last assistant text after the prompt."""
    error: str = ""
    """An API error the turn ended on."""

    @property
    def over(self) -> bool:
        return self.found and self.state in (AgentState.IDLE, AgentState.ERROR)


def same_prompt(recorded: str, typed: str) -> bool:
    """A transcript's prompt is the typed text (whitespace runs compared as one space: a paste's
    line ends may come back as typed)."""
    return " ".join(recorded.split()) == " ".join(typed.split())


def prompt_text(record: dict[str, object]) -> str | None:
    """The text of a user prompt record (None for tool results, interruptions, meta records)."""
    if (
        record.get("type") != "user"
        or record.get("isMeta") is True
        or record.get("isSidechain") is True
    ):
        return None
    message = record.get("message")
    blocks = _content_blocks(message) if isinstance(message, dict) else []
    if not blocks or any(block.get("type") == "tool_result" for block in blocks):
        return None
    return "\n".join(str(block.get("text", "")) for block in blocks if block.get("type") == "text")


def read_turn(path: Path, prompt: str, since: float, offset: int = 0) -> PromptTurn:
    """The turn of ``prompt`` submitted at or after ``since`` (wall time) in the transcript,
    reading from ``offset`` (module docstring). An unreadable file is a prompt not found."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            start = max(offset if offset <= size else 0, size - MAX_READ)
            handle.seek(start)
            data = handle.read(size - start)
    except OSError:
        return PromptTurn()
    facts: TranscriptFacts | None = None
    prompt_at: float | None = None
    ended = False
    for raw in data.split(b"\n"):
        try:
            record = json.loads(raw)
        except ValueError:
            continue  # a torn last line, or the cut at the read's start
        if not isinstance(record, dict):
            continue
        text = prompt_text(record)
        at = _timestamp(record, 0.0)
        if text is not None and at >= since - CLOCK_SLACK and same_prompt(text, prompt):
            prompt_at = at
            facts = TranscriptFacts(path, state=AgentState.WORKING)  # the latest such prompt's turn
            ended = False
            continue
        if facts is None or ended:
            continue
        if text is not None:  # the next prompt (a poll, the operator's): the task's turn ended before it
            ended = True
            if facts.state is AgentState.WORKING:
                facts = replace(facts, state=AgentState.IDLE)
            continue
        facts = apply_record(facts, record, at)
    if facts is None:
        return PromptTurn()
    error = facts.api_error.text if facts.api_error is not None else ""
    return PromptTurn(True, prompt_at, facts.state, facts.last_assistant_message, error)


class TurnReader:
    """`read_turn` for the agents the feeder follows, read again only when a file's size changed."""

    def __init__(self, claude_home: Path) -> None:
        self.claude_home = claude_home
        self._seen: dict[tuple[str, str, float], tuple[int, PromptTurn]] = {}

    def transcript(self, path: str, session_id: str) -> Path | None:
        """The transcript: the path the signals know, else found by session id."""
        if path:
            return Path(path)
        return find_transcript(self.claude_home, session_id) if session_id else None

    def turn(self, path: Path, prompt: str, since: float, offset: int = 0) -> PromptTurn:
        key = (str(path), prompt, since)
        try:
            size = path.stat().st_size
        except OSError:
            return PromptTurn()
        seen = self._seen.get(key)
        if seen is not None and seen[0] == size:
            return seen[1]
        turn = read_turn(path, prompt, since, offset)
        self._seen[key] = (size, turn)
        return turn

    def forget(self, keep: set[tuple[str, str, float]] | None = None) -> None:
        """Drop what is cached (all, or all but ``keep``'s keys)."""
        self._seen = {k: v for k, v in self._seen.items() if keep is not None and k in keep}
