"""Session-status files, the pane -> Claude process walk over /proc, and ClaudeSignals put
together on real processes (no tmux: a pane is a PaneInfo whose pid is a real shell)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from nbs_tui.claude.spool import parse_line
from nbs_tui.claude.status import (
    find_claude_process,
    is_alive,
    proc_info,
    process_table,
    read_status_file,
)
from nbs_tui.claude.watcher import ClaudeFacts, ClaudeSignals, hook_reading
from nbs_tui.config import Settings
from nbs_tui.core.detection.fusion import Source
from nbs_tui.core.fleet.model import AgentState, PaneInfo
from nbs_tui.core.fleet.process_tree import descendants
from nbs_tui.core.sidecar.stuck_agents import Liveness

SOCKET = "/tmp/nbs-test-tmux-socket"
SID = "fec664d9-dbab-4a3a-84db-35b023e9b68c"


def _status(pid: int, start: str | None, status: str = "idle", waiting: str | None = None, t: float = 1_795_648_990.243) -> dict:
    data = {"pid": pid, "sessionId": SID, "cwd": "/w", "version": "2.1.332", "status": status, "updatedAt": int(t * 1000), "statusUpdatedAt": int(t * 1000)}
    if start is not None:
        data["procStart"] = start
    if waiting:
        data["waitingFor"] = waiting
    return data


@pytest.fixture
def tree() -> Iterator[tuple[int, int]]:
    """A shell (the "pane") running a child (the "claude" process): (shell pid, child pid)."""
    shell = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE, text=True)
    assert shell.stdout is not None
    child = int(shell.stdout.readline())
    yield shell.pid, child
    shell.kill()
    subprocess.run(["kill", str(child)], check=False, capture_output=True)
    shell.wait()


def test_read_status_file(tmp_path: Path) -> None:
    path = tmp_path / "123.json"
    path.write_text(json.dumps(_status(123, "36293", "waiting", "permission prompt")))
    status = read_status_file(path)
    assert status is not None
    assert (status.pid, status.status, status.waiting_for, status.session_id, status.version) == (123, "waiting", "permission prompt", SID, "2.1.332")
    assert status.updated_at == pytest.approx(1_795_648_990.243)
    path.write_text('{"pid": 1, "stat')  # half-written
    assert read_status_file(path) is None
    assert read_status_file(tmp_path / "missing.json") is None


def test_proc_walk_finds_the_claude_process_below_the_pane(tree: tuple[int, int], tmp_path: Path) -> None:
    shell, child = tree
    table = process_table()
    assert child in descendants(shell, table)
    info = proc_info(child)
    assert info is not None and info.ppid == shell
    config = tmp_path / "config"
    (config / "sessions").mkdir(parents=True)
    assert find_claude_process(shell, table, [config]) is None
    (config / "sessions" / f"{child}.json").write_text(json.dumps(_status(child, info.start)))
    found = find_claude_process(shell, table, [config])
    assert found is not None and found.pid == child and found.status is not None and found.status.status == "idle"
    # A leftover file from an earlier process with the same pid (other start time) is ignored.
    (config / "sessions" / f"{child}.json").write_text(json.dumps(_status(child, "1")))
    assert find_claude_process(shell, table, [config]) is None
    assert is_alive(child, info.start) and not is_alive(child, "1")


def test_the_process_environment_says_where_its_config_is(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude" / "sessions").mkdir(parents=True)
    shell = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE, text=True, env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    try:
        assert shell.stdout is not None
        child = int(shell.stdout.readline())
        info = proc_info(child)
        assert info is not None
        (home / ".claude" / "sessions" / f"{child}.json").write_text(json.dumps(_status(child, info.start)))
        found = find_claude_process(shell.pid, process_table(), [tmp_path / "elsewhere"])
        assert found is not None and found.config_dir == home / ".claude"
    finally:
        shell.kill()
        shell.wait()


def _pane(pid: int, pane_id: str = "%5") -> PaneInfo:
    return PaneInfo(pane_id, "s", 0, "w", 0, "", "claude", "/w", pid, 120, 40)


def _spool_line(event: str, pane: str = "%5", t: float | None = None, socket: str = SOCKET, **fields: object) -> bytes:
    payload = {"session_id": SID, "hook_event_name": event, "cwd": "/w", **fields}
    record = {"nbs_pane": pane, "nbs_tmux": socket, "nbs_time": t or time.time(), "payload": payload}
    return json.dumps(record).encode() + b"\n"


class _Listener:
    def __init__(self) -> None:
        self.calls: list[dict[str, ClaudeFacts]] = []

    def claude_facts_changed(self, facts: Mapping[str, ClaudeFacts]) -> None:
        self.calls.append(dict(facts))


def test_claude_signals_puts_the_sources_together(tree: tuple[int, int], tmp_path: Path) -> None:
    shell, child = tree
    config = tmp_path / "claude"
    (config / "sessions").mkdir(parents=True)
    info = proc_info(child)
    assert info is not None
    status_file = config / "sessions" / f"{child}.json"
    status_file.write_text(json.dumps(_status(child, info.start, "busy", t=time.time())))
    transcript = config / "projects" / "-w" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(json.dumps({"type": "assistant", "timestamp": "2026-11-25T23:00:00Z", "message": {"model": "claude-opus-5-5", "content": [{"type": "text", "text": "From the transcript."}]}}) + "\n")
    spool = tmp_path / "state" / "hooks.jsonl"
    spool.parent.mkdir()
    listener = _Listener()
    signals = ClaudeSignals(Settings(hook_spool=spool, claude_home=config), listener, tmux_socket=SOCKET)
    signals.set_panes([_pane(shell)])
    changed = signals.poll_once()
    facts = changed["%5"]
    assert facts.liveness == Liveness.RUNNING and facts.pid == child and facts.session_id == SID
    assert facts.status is not None and facts.status.state == AgentState.WORKING
    assert facts.project == "/w" and facts.version == "2.1.332"
    assert facts.transcript_path == str(transcript) and facts.model == "claude-opus-5-5"
    assert facts.last_assistant_message == "From the transcript."
    assert listener.calls and "%5" in listener.calls[-1]

    # Hook events for this pane arrive; one from another tmux server with the same pane id does not.
    spool.write_bytes(
        _spool_line("Stop", last_assistant_message="From the Stop hook.")
        + _spool_line("PermissionRequest", pane="%5", socket="/tmp/other-server", session_id="another-session", tool_name="Bash")
    )
    facts = signals.poll_once()["%5"]
    assert facts.hook is not None and facts.hook.state == AgentState.IDLE and facts.last_hook_event == "Stop"
    assert facts.last_assistant_message == "From the Stop hook."
    assert {r.source for r in facts.readings} == {Source.HOOK, Source.STATUS, Source.TRANSCRIPT}
    assert signals.poll_once() == {}  # nothing changed, nothing reported

    # The Claude process exits: the pane is reported as exited; then the pane goes: gone.
    subprocess.run(["kill", str(child)], check=True)
    deadline = time.monotonic() + 5
    while is_alive(child, info.start) and time.monotonic() < deadline:
        time.sleep(0.05)
    facts = signals.poll_once()["%5"]
    assert facts.liveness == Liveness.EXITED and "exited" in facts.liveness_why and facts.status is None
    signals.set_panes([])
    assert signals.poll_once()["%5"].liveness == Liveness.GONE
    assert signals.facts("%5") is None


def test_events_for_a_pane_seen_before_the_fleet_are_kept(tmp_path: Path) -> None:
    spool = tmp_path / "hooks.jsonl"
    spool.write_bytes(_spool_line("UserPromptSubmit", pane="%9", prompt="hi", permission_mode="plan"))
    signals = ClaudeSignals(Settings(hook_spool=spool, claude_home=tmp_path), tmux_socket=SOCKET)
    assert signals.poll_once() == {}
    signals.set_panes([_pane(999_999_999, "%9")])
    facts = signals.poll_once()["%9"]
    assert facts.hook is not None and facts.hook.state == AgentState.WORKING
    assert facts.liveness == Liveness.UNKNOWN
    assert facts.last_prompt == "hi" and facts.permission_mode == "plan"


def test_the_thread_delivers_hook_events(tmp_path: Path) -> None:
    spool = tmp_path / "hooks.jsonl"
    listener = _Listener()
    signals = ClaudeSignals(Settings(hook_spool=spool, claude_home=tmp_path), listener, tmux_socket=SOCKET, interval=0.05)
    signals.set_panes([_pane(999_999_999, "%3")])
    signals.start()
    try:
        spool.write_bytes(_spool_line("PermissionRequest", pane="%3", tool_name="ExitPlanMode"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            facts = signals.facts("%3")
            if facts is not None and facts.hook is not None:
                break
            time.sleep(0.02)
        assert facts is not None and facts.hook is not None and facts.hook.state == AgentState.PLAN
    finally:
        signals.stop()


def test_hook_reading_translation() -> None:
    def ev(name: str, **fields: object):  # type: ignore[no-untyped-def]
        line = json.dumps({"nbs_pane": "%1", "nbs_time": 10.0, "payload": {"hook_event_name": name, **fields}})
        return parse_line(line.encode(), 11.0)

    assert hook_reading(ev("SessionStart", source="startup"), None).state == AgentState.IDLE  # type: ignore[union-attr]
    assert hook_reading(ev("UserPromptSubmit"), None).state == AgentState.WORKING  # type: ignore[union-attr]
    assert hook_reading(ev("PermissionRequest", tool_name="Bash"), None).state == AgentState.PERMISSION  # type: ignore[union-attr]
    plan = hook_reading(ev("PermissionRequest", tool_name="ExitPlanMode"), None)
    assert plan is not None and plan.state == AgentState.PLAN
    later = hook_reading(ev("Notification", notification_type="permission_prompt"), plan)
    assert later is not None and later.state == AgentState.PLAN  # still the plan menu
    assert hook_reading(ev("Notification", notification_type="idle_prompt"), None).state == AgentState.IDLE  # type: ignore[union-attr]
    assert hook_reading(ev("Notification", notification_type="auth_success"), None) is None
    assert hook_reading(ev("Stop"), None).state == AgentState.IDLE  # type: ignore[union-attr]
    assert hook_reading(ev("SessionEnd", reason="exit"), None).state == AgentState.UNKNOWN  # type: ignore[union-attr]


def test_hook_events_of_an_earlier_session_in_the_pane_are_dropped(tree: tuple[int, int], tmp_path: Path) -> None:
    shell, child = tree
    config = tmp_path / "claude"
    (config / "sessions").mkdir(parents=True)
    info = proc_info(child)
    assert info is not None
    spool = tmp_path / "hooks.jsonl"
    spool.write_bytes(_spool_line("Stop", t=time.time() - 3600, session_id="yesterday", last_assistant_message="old"))
    (config / "sessions" / f"{child}.json").write_text(json.dumps(_status(child, info.start, "idle", t=time.time())))
    signals = ClaudeSignals(Settings(hook_spool=spool, claude_home=config), tmux_socket=SOCKET)
    signals.set_panes([_pane(shell)])
    facts = signals.poll_once()["%5"]
    assert facts.session_id == SID and facts.hook is None and facts.last_assistant_message is None
    assert facts.status is not None and facts.status.state == AgentState.IDLE


def test_the_newest_of_hook_and_status_file_names_the_session(tree: tuple[int, int], tmp_path: Path) -> None:
    """After ``/clear`` the SessionStart hook names the new session while the status file may
    still name the old one (2.1.100 does not rewrite it): the newer word wins, whichever source
    says it and in whatever order they are read; a later status file wins in turn."""
    shell, child = tree
    config = tmp_path / "claude"
    (config / "sessions").mkdir(parents=True)
    info = proc_info(child)
    assert info is not None
    now = time.time()
    status_file = config / "sessions" / f"{child}.json"
    status_file.write_text(json.dumps({**_status(child, info.start, "idle", t=now - 60), "sessionId": "before-clear"}))
    spool = tmp_path / "hooks.jsonl"
    spool.write_bytes(_spool_line("SessionStart", t=now - 10, session_id="after-clear", source="clear"))
    signals = ClaudeSignals(Settings(hook_spool=spool, claude_home=config), tmux_socket=SOCKET)
    signals.set_panes([_pane(shell)])
    for _ in range(3):  # read again and again: it does not flip back to the older status file
        signals.poll_once()
        facts = signals.facts("%5")
        assert facts is not None and facts.session_id == "after-clear"
    # the status file rewritten later, for yet another session: now it is the newest
    status_file.write_text(json.dumps({**_status(child, info.start, "busy", t=now), "sessionId": "later"}))
    signals.poll_once()
    facts = signals.facts("%5")
    assert facts is not None and facts.session_id == "later"
