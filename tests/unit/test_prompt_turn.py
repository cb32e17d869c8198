"""A queue task's prompt found in a Claude Code transcript, and how its turn ended
(`nbs_tui.claude.prompt_turn`): the records as Claude Code 2.1.332 writes them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nbs_tui.claude.prompt_turn import TurnReader, read_turn
from nbs_tui.core.fleet.model import AgentState


def stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def user(text: str, at: float) -> dict[str, Any]:
    return {"type": "user", "timestamp": stamp(at), "message": {"role": "user", "content": text}}


def tool_result(at: float) -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]
    return {"type": "user", "timestamp": stamp(at), "message": {"role": "user", "content": content}}


def assistant(at: float, text: str = "", tool: str = "") -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    if tool:
        blocks.append({"type": "tool_use", "id": "t1", "name": tool, "input": {}})
    return {"type": "assistant", "timestamp": stamp(at), "message": {"role": "assistant", "content": blocks}}


def write(path: Path, *records: dict[str, Any], torn: bool = False) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in records)
    path.write_text(text + ('{"type": "assist' if torn else ""))
    return path


def test_the_prompt_its_tool_calls_and_the_reply_make_a_turn_over(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        user("fix the bug", 100.0),
        assistant(101.0, "Looking.", tool="Bash"),
        tool_result(102.0),
        assistant(103.0, "Fixed it."),
        torn=True,
    )
    turn = read_turn(path, "fix the bug", since=99.0)
    assert turn.found and turn.over and turn.reply == "Fixed it." and turn.prompt_at == 100.0


def test_a_turn_under_way_is_not_over(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", user("fix the bug", 100.0), assistant(101.0, "Looking.", tool="Bash"))
    turn = read_turn(path, "fix the bug", since=99.0)
    assert turn.found and not turn.over and turn.state is AgentState.WORKING


def test_a_prompt_before_the_handout_began_is_someone_elses(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", user("fix the bug", 100.0), assistant(101.0, "Done."))
    assert not read_turn(path, "fix the bug", since=110.0).found
    assert read_turn(path, "fix the bug", since=101.5).found, "within the clock slack"
    assert not read_turn(path, "fix another bug", since=90.0).found
    assert read_turn(path, "fix   the\nbug", since=90.0).found, "whitespace runs compare as one"


def test_the_next_prompt_ends_the_turn_and_its_reply_is_not_the_tasks(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        user("fix the bug", 100.0),
        assistant(101.0, "Fixed it."),
        user("/nbs-poll", 130.0),
        assistant(131.0, "Nothing in the inbox."),
    )
    turn = read_turn(path, "fix the bug", since=99.0)
    assert turn.over and turn.reply == "Fixed it."


def test_an_api_error_ends_the_turn_as_an_error(tmp_path: Path) -> None:
    error = {**assistant(101.0, "API Error: 500"), "isApiErrorMessage": True, "error": "server_error"}
    path = write(tmp_path / "t.jsonl", user("fix the bug", 100.0), error)
    turn = read_turn(path, "fix the bug", since=99.0)
    assert turn.found and turn.state is AgentState.ERROR and "500" in turn.error


def test_read_from_the_offset_and_again_only_when_the_file_grew(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", user("fix the bug", 100.0), assistant(101.0, "Old answer."))
    offset = path.stat().st_size
    assert not read_turn(path, "fix the bug", since=50.0, offset=offset).found
    reader = TurnReader(tmp_path)
    assert not reader.turn(path, "fix the bug", 50.0, offset).found
    with path.open("a") as handle:
        handle.write(json.dumps(user("fix the bug", 200.0)) + "\n" + json.dumps(assistant(201.0, "New answer.")) + "\n")
    turn = reader.turn(path, "fix the bug", 50.0, offset)
    assert turn.over and turn.reply == "New answer."
    assert reader.transcript("", "") is None and not read_turn(tmp_path / "none.jsonl", "x", 0.0).found
