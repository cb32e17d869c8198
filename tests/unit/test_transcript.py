"""Transcript tailing and classification, on records shaped like Claude Code 2.1.332's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nbs_tui.claude.transcript import TranscriptTail, classify_api_error, find_transcript
from nbs_tui.core.fleet.model import AgentState

SID = "e2aea7bf-67d2-4b1d-9c63-08c462dd429c"


def _rec(kind: str, t: int, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "timestamp": f"2026-11-25T23:24:{t:02d}.000Z", "sessionId": SID, "cwd": "/w", "version": "2.1.332", **extra}


def _user(t: int, content: Any, **extra: Any) -> dict[str, Any]:
    return _rec("user", t, message={"role": "user", "content": content}, **extra)


def _assistant(t: int, blocks: list[dict[str, Any]], stop: str | None = "end_turn", model: str = "claude-opus-5-5", **extra: Any) -> dict[str, Any]:
    return _rec("assistant", t, message={"role": "assistant", "model": model, "stop_reason": stop, "content": blocks}, **extra)


def _write(path: Path, *records: dict[str, Any], partial: bytes = b"") -> None:
    with path.open("ab") as handle:
        for record in records:
            handle.write(json.dumps(record).encode() + b"\n")
        handle.write(partial)


def test_a_turn_with_a_tool_call(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.jsonl"
    _write(path, _rec("permission-mode", 0, permissionMode="default"), _user(1, "run it"))
    tail = TranscriptTail(path)
    assert tail.read()
    assert tail.facts.state == AgentState.WORKING and tail.facts.session_id == SID and tail.facts.cwd == "/w"
    _write(path, _assistant(2, [{"type": "text", "text": "Running."}], stop="tool_use"),
           _assistant(3, [{"type": "tool_use", "name": "Bash", "input": {}}], stop="tool_use"))
    tail.read()
    facts = tail.facts
    assert facts.state == AgentState.WORKING and facts.last_tool == "Bash"
    assert facts.last_assistant_message == "Running." and facts.model == "claude-opus-5-5"
    _write(path, _user(4, [{"type": "tool_result", "content": "ok"}]), _assistant(5, [{"type": "text", "text": "After bash."}]))
    tail.read()
    assert tail.facts.state == AgentState.IDLE and tail.facts.last_assistant_message == "After bash."
    assert tail.facts.state_at is not None and tail.facts.last_assistant_at == tail.facts.state_at
    size = tail.facts.size
    assert size == path.stat().st_size and tail.facts.grew_at is not None
    assert not tail.read()  # nothing new


def test_interrupt_and_partial_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    second = json.dumps(_user(2, [{"type": "text", "text": "[Request interrupted by user]"}])).encode() + b"\n"
    _write(path, _user(0, "slow"), _assistant(1, [{"type": "text", "text": "Still thinking"}], stop=None), partial=second[:15])
    tail = TranscriptTail(path)
    tail.read()
    assert tail.facts.state == AgentState.IDLE  # text with no stop reason yet, as the stream was cut
    with path.open("ab") as handle:
        handle.write(second[15:])
    tail.read()
    assert tail.facts.state == AgentState.IDLE and tail.facts.state_why == "interrupted by the user"


def test_api_errors_are_classified_and_cleared_by_the_next_prompt(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    synthetic = {"isApiErrorMessage": True, "error": "billing_error", "apiErrorStatus": 400}
    _write(path, _user(0, "one"), _assistant(1, [{"type": "text", "text": "Credit balance is too low"}], model="<synthetic>", stop="stop_sequence", **synthetic))
    tail = TranscriptTail(path)
    tail.read()
    facts = tail.facts
    assert facts.state == AgentState.ERROR and facts.api_error is not None
    assert facts.api_error.kind == "out_of_credits" and facts.api_error.status == 400
    assert facts.model is None  # "<synthetic>" is not a model
    _write(path, _user(2, "two"))
    tail.read()
    assert tail.facts.api_error is None and tail.facts.state == AgentState.WORKING


def test_classify_api_error() -> None:
    assert classify_api_error("Invalid API key · Fix external API key", "authentication_failed", 401) == "unauthorized"
    assert classify_api_error("Invalid API key · Please run /login") == "unauthorized"
    assert classify_api_error("x", None, 429) == "rate_limited"
    assert classify_api_error("API Error: Connection error.") == "network"
    assert classify_api_error("Request timed out") == "network"
    assert classify_api_error("Your credit balance is too low") == "out_of_credits"
    assert classify_api_error("Overloaded", None, 529) == "overloaded"
    assert classify_api_error("something else") == "api_error"


def test_truncation_restarts_and_bad_lines_count(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write(path, _user(0, "a"))
    path.open("ab").write(b"{broken\n")
    tail = TranscriptTail(path)
    tail.read()
    assert tail.facts.bad_lines == 1
    path.write_bytes(b"")
    tail.read()  # the shrink is seen: start again from byte 0
    _write(path, _assistant(1, [{"type": "text", "text": "fresh"}]))
    tail.read()
    assert tail.facts.last_assistant_message == "fresh" and tail.facts.bad_lines == 0


def test_find_transcript(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-w"
    folder.mkdir(parents=True)
    (folder / f"{SID}.jsonl").write_text("")
    assert find_transcript(tmp_path, SID) == folder / f"{SID}.jsonl"
    assert find_transcript(tmp_path, "other") is None
    assert find_transcript(tmp_path / "nowhere", SID) is None
