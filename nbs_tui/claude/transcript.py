"""Tail a Claude Code transcript (``<config>/projects/<slug>/<session-id>.jsonl``) from an offset.

The transcript is append-only JSONL. Records that matter here (seen on 2.1.332): ``user``
(a prompt, a ``tool_result``, or ``[Request interrupted by user]``), ``assistant`` (one record
per content block: ``text``, ``tool_use``, ``thinking``; ``message.model``; API errors are
synthetic assistant records with ``isApiErrorMessage``, ``error`` and ``apiErrorStatus``) and
``system`` (``turn_duration`` closes a turn). As oj does, the last of these says whether the
agent is working, waiting for input, or failed; the file's growth says whether anything happens.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from nbs_tui.core.fleet.model import AgentState
from nbs_tui.core.screen.text import loads_json
from nbs_tui.core.sidecar.meters import MeterAccount, Meters, usage_of_record
from nbs_tui.files.tail import TailLine, TailNotice, TailReader

MAX_READ = 8 * 1024 * 1024
START_TAIL = 2 * 1024 * 1024
"""At first read only the end of a long transcript is parsed: the last messages are what count."""
MAX_LINE = 64 * 1024 * 1024
"""Longest record kept (a pasted image is one base64 line); a longer one counts as a bad line."""

INTERRUPTED = "[Request interrupted by user"


@dataclass(frozen=True, slots=True)
class ApiError:
    """An API failure the agent reported in its transcript."""

    kind: str
    """``unauthorized``, ``out_of_credits``, ``rate_limited``, ``network``, ``overloaded`` or ``api_error``."""
    text: str
    status: int | None
    at: float


@dataclass(frozen=True, slots=True)
class TranscriptFacts:
    """What the transcript says so far; a new value after every read that found something."""

    path: Path
    size: int = 0
    grew_at: float | None = None
    """When the file last grew (mtime seen at the read that found new bytes)."""
    state: AgentState = AgentState.UNKNOWN
    state_at: float | None = None
    state_why: str = ""
    last_assistant_message: str | None = None
    last_assistant_at: float | None = None
    model: str | None = None
    last_tool: str | None = None
    last_tool_at: float | None = None
    api_error: ApiError | None = None
    session_id: str | None = None
    cwd: str | None = None
    version: str | None = None
    records: int = 0
    bad_lines: int = 0
    meters: Meters = field(default_factory=Meters)
    """Tokens and context from the usage records, each API response counted once."""


def _timestamp(record: Mapping[str, Any], fallback: float) -> float:
    value = record.get("timestamp")
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return fallback


_ERROR_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("out_of_credits", re.compile(r"credit balance|billing|quota|insufficient.?funds|usage limit", re.I)),
    ("unauthorized", re.compile(r"invalid api key|x-api-key|unauthori[sz]ed|authentication|/login|oauth token", re.I)),
    ("rate_limited", re.compile(r"rate.?limit|too many requests|\b429\b", re.I)),
    ("overloaded", re.compile(r"overloaded|\b529\b", re.I)),
    ("network", re.compile(r"connection error|econnrefused|enotfound|etimedout|network|timed out|fetch failed|socket", re.I)),
)

_ERROR_CODES = {
    "authentication_failed": "unauthorized",
    "billing_error": "out_of_credits",
    "rate_limit": "rate_limited",
    "overloaded": "overloaded",
    "server_error": "api_error",
    "invalid_request": "api_error",
}


def classify_api_error(text: str, code: str | None = None, status: int | None = None) -> str:
    """The kind of an API error, from Claude Code's ``error`` code, the HTTP status and the text."""
    if code in _ERROR_CODES:
        return _ERROR_CODES[code]
    if status in (401, 403):
        return "unauthorized"
    if status == 429:
        return "rate_limited"
    if status == 529:
        return "overloaded"
    for kind, pattern in _ERROR_PATTERNS:
        if pattern.search(text):
            return kind
    return "api_error"


def _content_blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def apply_record(facts: TranscriptFacts, record: Mapping[str, Any], fallback_time: float) -> TranscriptFacts:
    """Fold one transcript record into the facts (pure)."""
    kind = record.get("type")
    at = _timestamp(record, fallback_time)
    changes: dict[str, Any] = {"records": facts.records + 1}
    for key, field_name in (("sessionId", "session_id"), ("cwd", "cwd"), ("version", "version")):
        value = record.get(key)
        if isinstance(value, str) and value:
            changes[field_name] = value
    if record.get("isSidechain") is True:
        return replace(facts, **changes)
    message = record.get("message")
    message = message if isinstance(message, dict) else {}
    if kind == "assistant":
        blocks = _content_blocks(message)
        texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text" and b.get("text")]
        if record.get("isApiErrorMessage") is True:
            text = " ".join(texts) or str(record.get("error") or "API error")
            status = record.get("apiErrorStatus")
            status = status if isinstance(status, int) else None
            code = record.get("error")
            error = ApiError(classify_api_error(text, code if isinstance(code, str) else None, status), text, status, at)
            changes.update(api_error=error, state=AgentState.ERROR, state_at=at, state_why=f"API error: {text}")
            return replace(facts, **changes)
        model = message.get("model")
        if isinstance(model, str) and model and not model.startswith("<"):
            changes["model"] = model
        tools = [str(b.get("name", "")) for b in blocks if b.get("type") == "tool_use"]
        if texts:
            changes.update(last_assistant_message="\n".join(texts), last_assistant_at=at)
        changes["api_error"] = None
        if tools:
            changes.update(
                last_tool=tools[-1], last_tool_at=at, state=AgentState.WORKING, state_at=at,
                state_why=f"assistant called {tools[-1]}",
            )
        elif any(b.get("type") in ("thinking", "redacted_thinking") for b in blocks):
            changes.update(state=AgentState.WORKING, state_at=at, state_why="assistant is thinking")
        elif texts:
            stop = message.get("stop_reason")
            if stop in ("tool_use", "pause_turn"):
                changes.update(state=AgentState.WORKING, state_at=at, state_why="assistant text before a tool call")
            else:
                changes.update(state=AgentState.IDLE, state_at=at, state_why="assistant replied")
        return replace(facts, **changes)
    if kind == "user":
        blocks = _content_blocks(message)
        if any(b.get("type") == "tool_result" for b in blocks):
            changes.update(state=AgentState.WORKING, state_at=at, state_why="tool result")
        elif any(str(b.get("text", "")).startswith(INTERRUPTED) for b in blocks):
            changes.update(state=AgentState.IDLE, state_at=at, state_why="interrupted by the user")
        elif record.get("isMeta") is True:
            pass
        elif blocks:
            changes.update(state=AgentState.WORKING, state_at=at, state_why="user prompt", api_error=None)
        return replace(facts, **changes)
    if kind == "system" and record.get("subtype") == "turn_duration" and facts.state == AgentState.WORKING:
        changes.update(state=AgentState.IDLE, state_at=at, state_why="turn ended")
    return replace(facts, **changes)


class TranscriptTail:
    """Forward-only reader of one transcript; not thread-safe (one owner calls :meth:`read`).

    The reading is :class:`~nbs_tui.files.tail.TailReader`'s; this class folds records into
    :class:`TranscriptFacts` and starts them afresh when the transcript is replaced or truncated."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.facts = TranscriptFacts(path=path)
        self._tail: TailReader[TailLine] = TailReader(path, TailLine, max_line=MAX_LINE, start_tail=START_TAIL)
        self._account = MeterAccount()
        self._head: TailReader[TailLine] | None = None
        """Reads, MAX_READ per call, the lines the tail skipped at first, for their usage only:
        the meters count the whole session while states come from its end."""
        self._head_end = 0

    def _read_head(self) -> None:
        head = self._head
        if head is None:
            return
        for item in head.read(MAX_READ):
            if isinstance(item, TailNotice):
                self._head = None  # replaced or gone: the tail starts again from the top anyway
                return
            if item.offset > self._head_end:
                self._head = None
                return
            self._account_line(item)
        if head.offset > self._head_end or not head.grew:
            self._head = None

    def _account_line(self, item: TailLine) -> None:
        if item.too_long or b'"usage"' not in item.raw:  # cheap filter before parsing
            return
        try:
            record = loads_json(item.raw)
        except ValueError:
            return
        if isinstance(record, dict):
            usage = usage_of_record(record)
            if usage is not None:
                self._account.add(usage)

    def read(self) -> bool:
        """Consume what was appended; True when :attr:`facts` changed."""
        tail = self._tail
        first = tail.size is None
        items = tail.read(MAX_READ)
        if tail.size is None:
            return False  # not there (yet)
        if first and tail.skipped:
            self._head = TailReader(self.path, TailLine, max_line=MAX_LINE)
            self._head_end = tail.skipped
        facts = self.facts
        account = self._account
        for item in items:
            if isinstance(item, TailNotice):
                if item.restarted:
                    facts = TranscriptFacts(path=self.path)
                    account.reset()
                    self._head = None
                continue
            if item.too_long:
                facts = replace(facts, bad_lines=facts.bad_lines + 1)
                continue
            if not item.raw.strip():
                continue
            try:
                record = loads_json(item.raw)
            except ValueError:
                facts = replace(facts, bad_lines=facts.bad_lines + 1)
                continue
            if isinstance(record, dict):
                facts = apply_record(facts, record, tail.mtime)
                usage = usage_of_record(record)
                if usage is not None:
                    account.add(usage)
        self._read_head()
        if account.meters != facts.meters:
            facts = replace(facts, meters=account.meters)
        if tail.grew:
            facts = replace(facts, size=tail.size, grew_at=tail.mtime)
        elif facts.size != tail.size:
            facts = replace(facts, size=tail.size)
        changed = facts != self.facts
        self.facts = facts
        return changed


def find_transcript(config_dir: Path, session_id: str) -> Path | None:
    """``<config>/projects/*/<session_id>.jsonl`` (the slug rule is Claude Code's, so search)."""
    projects = config_dir / "projects"
    try:
        for folder in projects.iterdir():
            candidate = folder / f"{session_id}.jsonl"
            if candidate.is_file():
                return candidate
    except OSError:
        return None
    return None
