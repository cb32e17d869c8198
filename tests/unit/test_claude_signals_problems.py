"""ClaudeSignals reports its problems to a sink (not a list no one reads): an unreadable spool
once per episode, each bad spool line, a listener that raises."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from nbs_tui.claude.watcher import PROBLEM_SOURCE, ClaudeFacts, ClaudeSignals
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import PaneId
from tests.unit.test_claude_status import SOCKET, _pane, _spool_line


class Sink:
    def __init__(self) -> None:
        self.reports: list[tuple[str, str]] = []

    def __call__(self, source: str, message: str) -> None:
        self.reports.append((source, message))


def test_an_unreadable_spool_is_reported_once_until_it_heals(tmp_path: Path) -> None:
    spool = tmp_path / "hooks.jsonl"
    spool.mkdir()  # a directory where the file should be: unreadable, also for root
    (spool / "x").write_text("keeps the directory's size above zero")
    sink = Sink()
    signals = ClaudeSignals(Settings(hook_spool=spool, claude_home=tmp_path), tmux_socket=SOCKET, problems=sink)
    for _ in range(3):
        signals.poll_once()
    assert len(sink.reports) == 1, sink.reports
    source, message = sink.reports[0]
    assert source == PROBLEM_SOURCE and f"cannot read {spool}" in message and "directory" in message
    (spool / "x").unlink()
    spool.rmdir()
    spool.write_bytes(_spool_line("Stop", pane="%9"))
    signals.poll_once()
    assert len(sink.reports) == 1, "healed: nothing new"
    spool.unlink()
    spool.mkdir()
    (spool / "x").write_text("again")
    signals.poll_once()
    assert len(sink.reports) == 2, "broken again: news again"


def test_a_bad_spool_line_and_a_failing_listener_are_reported(tmp_path: Path) -> None:
    spool = tmp_path / "hooks.jsonl"
    spool.write_bytes(b"{not json\n" + _spool_line("UserPromptSubmit", pane="%4", prompt="hi"))

    class Raising:
        def claude_facts_changed(self, facts: Mapping[PaneId, ClaudeFacts]) -> None:
            raise RuntimeError("listener broke")

    sink = Sink()
    signals = ClaudeSignals(
        Settings(hook_spool=spool, claude_home=tmp_path), Raising(), tmux_socket=SOCKET, problems=sink
    )
    signals.set_panes([_pane(999_999_999, "%4")])
    signals.poll_once()
    messages = [m for _, m in sink.reports]
    assert any(m.startswith("hook spool: bad spool line at byte 0") for m in messages), messages
    assert "claude facts listener: RuntimeError: listener broke" in messages
    assert not hasattr(signals, "errors"), "no list that no one reads"
