"""The files each agent's Claude Code wrote, read from a real hook spool file (issue 38)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nbs_tui.claude.hook_writes import read_writes

SOCKET = "/tmp/tmux-0/work"


def line(pane: str, at: float, payload: dict[str, Any], socket: str = SOCKET) -> str:
    return json.dumps({"nbs_pane": pane, "nbs_tmux": socket, "nbs_time": at, "payload": payload}) + "\n"


def post(tool: str, **tool_input: object) -> dict[str, Any]:
    return {"hook_event_name": "PostToolUse", "tool_name": tool, "tool_input": tool_input, "cwd": "/repo"}


def test_the_writes_of_this_servers_panes_and_nothing_else(tmp_path: Path) -> None:
    spool = tmp_path / "hooks.jsonl"
    spool.write_text(
        line("%1", 1.0, post("Write", file_path="/repo/a.py", content="x"))
        + line("%1", 2.0, post("Bash", command="make") | {"tool_response": {"stdout": "y" * 200_000, "note": '"tool_name":"Edit"'}})
        + line("%2", 3.0, post("Edit", file_path="/repo/b.py", old_string="a", new_string="b"))
        + line("%2", 4.0, post("NotebookEdit", notebook_path="nb.ipynb", new_source="1"))
        + line("%3", 5.0, post("MultiEdit", file_path="/repo/c.py", edits=[]), socket="/tmp/tmux-0/other")
        + line("%1", 6.0, {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"file_path": "/repo/d.py"}})
        + "not json\n"
    )
    written = read_writes(spool, SOCKET)
    assert written.panes() == {"%1", "%2"}  # %3 is another server's pane
    assert written.files_of("%1") == {"/repo/a.py"}  # the Bash line (with Edit in its output) and a PreToolUse: no write
    assert written.files_of("%2") == {"/repo/b.py", "/repo/nb.ipynb"}
    assert written.writers_under("/repo") == {"a.py": "%1", "b.py": "%2", "nb.ipynb": "%2"}
    assert read_writes(tmp_path / "none.jsonl", SOCKET).panes() == frozenset()
