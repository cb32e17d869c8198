"""The demo agent and the demo fleet, on real tmux (each test gets a private server)."""

from __future__ import annotations

import base64
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from libtmux.server import Server

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.demo.launcher import DemoFleet, make_project
from nbs_tui.files.chat_io import read_chat

SPINNER = re.compile(r"^[·✢✳✶✻✽] \w+… ")
WAIT = 20.0


def wait_for(what: str, check: Callable[[], bool], timeout: float = WAIT) -> None:
    """A bounded poll: fail with ``what`` if ``check`` is not true within ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Pane:
    """One pane running the demo agent, with the few operations the tests need."""

    def __init__(self, server: Server, pane_id: str) -> None:
        self.server = server
        self.id = pane_id

    def tmux(self, *args: str) -> list[str]:
        result = self.server.cmd(*args)
        assert not result.stderr, result.stderr
        return list(result.stdout)

    def lines(self) -> list[str]:
        return self.tmux("capture-pane", "-p", "-t", self.id)

    def text(self) -> str:
        return "\n".join(self.lines())

    def show(self, name: str) -> str:
        return self.tmux("display-message", "-p", "-t", self.id, name)[0]

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.id, "-l", text)

    def press(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.id, *keys)

    def wait_text(self, needle: str, timeout: float = WAIT) -> None:
        wait_for(f"{needle!r} on screen", lambda: needle in self.text(), timeout)

    def input_line(self) -> str | None:
        """The text of the input box: the ``❯`` line between two rules, or None."""
        lines = self.lines()
        for index in range(1, len(lines) - 1):
            if lines[index].startswith("❯") and lines[index - 1].startswith("────") and lines[index + 1].startswith("────"):
                return lines[index][1:].strip()
        return None

    def footer(self) -> str:
        lines = [line for line in self.lines() if line.strip()]
        return lines[-1].strip() if lines else ""

    def working(self) -> bool:
        return any(SPINNER.match(line) for line in self.lines()) and "esc to interrupt" in self.footer()

    def idle(self) -> bool:
        """The box is shown, nothing spins, and the footer has no ``esc to interrupt``.

        (The footer says ``? for shortcuts`` only in the default permission mode.)"""
        return (
            self.input_line() is not None
            and "esc to interrupt" not in self.footer()
            and not any(SPINNER.match(line) for line in self.lines())
        )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path, "proj")


@pytest.fixture
def start_agent(server: Server, project: Path) -> Iterator[Callable[..., Pane]]:
    def start(*args: str, width: int = 120, height: int = 40) -> Pane:
        argv = [sys.executable, "-m", "nbs_tui.demo.agent", "--name", "tester", "--proc-name", "claude", *args]
        result = server.cmd(
            "new-session", "-d", "-P", "-F", "#{pane_id}", "-x", str(width), "-y", str(height),
            "-c", str(project), "exec " + shlex.join(argv),
        )
        assert not result.stderr, result.stderr
        pane = Pane(server, result.stdout[0])
        wait_for("the agent's first frame", lambda: pane.show("#{pane_title}").startswith(("✳", "⠂", "⠐")))
        return pane

    yield start


def test_idle_screen_has_the_input_box_between_rules(start_agent: Callable[..., Pane]) -> None:
    pane = start_agent("--script", "idle")
    wait_for("the idle screen", pane.idle)
    assert pane.input_line() == ""
    assert "? for shortcuts · ← for agents" in pane.footer() and pane.footer().endswith("● high · /effort")
    text = pane.text()
    assert "Claude Code" in text and "▐▛███▜▌" in text
    assert pane.show("#{pane_title}") == "✳ Claude Code"
    assert pane.show("#{pane_current_command}") == "claude"


def test_typed_text_shows_in_the_box_and_enter_runs_a_turn(start_agent: Callable[..., Pane]) -> None:
    pane = start_agent("--script", "idle", "--seed", "3")
    wait_for("the idle screen", pane.idle)
    pane.type("hello demo 日本x")
    wait_for("typed text in the box", lambda: pane.input_line() == "hello demo 日本x")
    pane.press("BSpace")
    wait_for("backspace", lambda: pane.input_line() == "hello demo 日本")
    pane.press("Enter")
    wait_for("the spinner and esc to interrupt", pane.working)
    assert pane.input_line() == ""  # the box stays while working
    assert pane.show("#{pane_title}")[:1] in ("⠂", "⠐")
    pane.wait_text("Worked for")
    wait_for("idle again", pane.idle)
    assert "❯ hello demo 日本" in pane.text()  # the prompt stays in the transcript


def test_escape_interrupts_a_turn(start_agent: Callable[..., Pane]) -> None:
    pane = start_agent("--script", "idle")
    wait_for("the idle screen", pane.idle)
    pane.type("something long")
    pane.press("Enter")
    wait_for("working", pane.working)
    pane.press("Escape")
    pane.wait_text("Interrupted · What should Claude do instead?")
    wait_for("idle after the interrupt", pane.idle)


def test_permission_menu_answered_with_1_proceeds(start_agent: Callable[..., Pane]) -> None:
    pane = start_agent("--script", "idle", "--seed", "1")
    wait_for("the idle screen", pane.idle)
    pane.type("run the tests in bash")
    pane.press("Enter")
    pane.wait_text("Do you want to proceed?")
    lines = pane.lines()
    assert any(line.strip() == "Bash command" for line in lines)
    assert any(line.strip() == "❯ 1. Yes" for line in lines)
    assert any(line.strip().startswith("2. Yes, and always allow access to proj/") for line in lines)
    assert any(line.strip() == "3. No" for line in lines)
    assert "Esc to cancel" in pane.text()
    assert pane.input_line() is None  # the menu replaces the input box
    pane.press("1")
    wait_for("the menu to go", lambda: "Do you want to proceed?" not in pane.text())
    pane.wait_text("passed")
    pane.wait_text("Worked for")
    wait_for("idle", pane.idle)


def test_permission_menu_arrows_and_escape(start_agent: Callable[..., Pane]) -> None:
    pane = start_agent("--script", "idle", "--seed", "1")
    wait_for("the idle screen", pane.idle)
    pane.type("run it in bash")
    pane.press("Enter")
    pane.wait_text("Do you want to proceed?")
    pane.press("Down")
    wait_for("the selection to move", lambda: any(line.strip().startswith("❯ 2.") for line in pane.lines()))
    pane.press("Escape")
    pane.wait_text("Interrupted · What should Claude do instead?")
    wait_for("idle", pane.idle)


def test_plan_menu(start_agent: Callable[..., Pane]) -> None:
    pane = start_agent("--script", "idle", "--seed", "2")
    wait_for("the idle screen", pane.idle)
    pane.type("make a plan for it")
    pane.press("Enter")
    pane.wait_text("Would you like to proceed?")
    text = pane.text()
    assert "Ready to code?" in text
    assert "❯ 1. Yes, and use auto mode" in text
    assert "2. Yes, manually approve edits" in text
    assert "3. Tell Claude what to change" in text
    assert "plan mode on" not in pane.footer()  # the menu hides the footer
    pane.press("2")
    pane.wait_text("User approved Claude's plan")
    pane.wait_text("Worked for")
    wait_for("idle", pane.idle)


def test_question_menu(start_agent: Callable[..., Pane]) -> None:
    pane = start_agent("--script", "idle", "--seed", "2")
    wait_for("the idle screen", pane.idle)
    pane.type("ask me a question")
    pane.press("Enter")
    pane.wait_text("Enter to select · ↑/↓ to navigate · Esc to cancel")
    assert any(line.startswith("❯ 1. ") for line in pane.lines())
    pane.press("Down")
    pane.press("Enter")
    pane.wait_text("User answered Claude's questions:")
    wait_for("idle", pane.idle)


def _decode_chat(path: Path) -> list[tuple[str, int, str]]:
    """Decode an nbs-chat file independently of the package's own reader."""
    data = path.read_bytes()
    lines = data.decode().split("\n")
    assert lines[0] == "=== nbs-chat ==="
    assert lines[1].startswith("last-writer: ")
    assert re.fullmatch(r"last-write: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}", lines[2])
    assert lines[3] == f"file-length: {len(data)}"
    assert lines[4].startswith("participants: ")
    assert lines[5] == "---"
    messages = []
    for line in lines[6:]:
        if line:
            handle_epoch, _, text = base64.b64decode(line, validate=True).decode().partition(": ")
            handle, _, epoch = handle_epoch.partition("|")
            messages.append((handle, int(epoch), text))
    counts = {h: sum(1 for m in messages if m[0] == h) for h in dict.fromkeys(m[0] for m in messages)}
    assert lines[4] == "participants: " + ", ".join(f"{h}({n})" for h, n in counts.items())
    return messages


def test_nbs_poll_registers_chats_and_posts(start_agent: Callable[..., Pane], project: Path) -> None:
    inbox = project / ".nbs" / "control-inbox"
    chat = project / ".nbs" / "chat" / "proj.chat"
    inbox_before = inbox.read_text()
    seeded = len(_decode_chat(chat))
    pane = start_agent("--script", "idle", "--seed", "5")
    wait_for("the idle screen", pane.idle)

    pane.type("/nbs-poll")
    pane.press("Enter")
    wait_for("working", pane.working)
    pane.wait_text("Worked for")
    lines = pane.lines()
    registered = [line.strip() for line in lines if line.strip().startswith("\\nbs-register-chat ")]
    assert len(registered) == 1, lines
    new_chat = project / registered[0].split()[1]
    assert new_chat.is_file() and _decode_chat(new_chat) == []
    messages = _decode_chat(chat)
    assert len(messages) == seeded + 1
    handle, epoch, text = messages[-1]
    assert handle == "tester" and abs(epoch - time.time()) < 120 and text
    assert read_chat(chat).messages[-1].text == text
    assert inbox.read_text() == inbox_before  # the first poll only prints the \nbs- line

    wait_for("idle", pane.idle)
    pane.type("/nbs-poll")
    pane.press("Enter")
    wait_for("an inbox append", lambda: inbox.read_text() != inbox_before)
    added = inbox.read_text()[len(inbox_before):]
    assert re.fullmatch(r"register-chat \.nbs/chat/\w+\.chat\n", added), added
    wait_for("the second post", lambda: len(_decode_chat(chat)) == seeded + 2)


def test_markers_from_a_fifo_and_sigusr1(start_agent: Callable[..., Pane], tmp_path: Path) -> None:
    fifo, log = tmp_path / "m.fifo", tmp_path / "m.log"
    pane = start_agent("--busy", "--rate", "20", "--marker-fifo", str(fifo), "--marker-file", str(log))
    wait_for("busy output", pane.working)
    wait_for("the FIFO", fifo.exists)
    with open(fifo, "w") as handle:
        handle.write("MARK-fifo-42\n")
    pane.wait_text("MARK-fifo-42")
    pid = int(pane.show("#{pane_pid}"))
    os.kill(pid, signal.SIGUSR1)
    pane.wait_text(f"NBS-MARK-{pid}-1")
    wait_for("two marker records", lambda: log.exists() and len(log.read_text().splitlines()) == 2)
    records = [line.split("\t") for line in log.read_text().splitlines()]
    assert [r[0] for r in records] == ["MARK-fifo-42", f"NBS-MARK-{pid}-1"]
    assert all(len(r) == 3 and r[1].isdigit() and r[2].isdigit() for r in records)


def test_busy_mode_keeps_printing(start_agent: Callable[..., Pane]) -> None:
    pane = start_agent("--busy", "--rate", "40")
    wait_for("working", pane.working)
    wait_for("a few hundred lines", lambda: "[   100]" in pane.text())
    assert pane.input_line() == ""
    raw = "\n".join(pane.tmux("capture-pane", "-p", "-e", "-t", pane.id))
    assert "38;2;" in raw and "38;5;" in raw  # truecolour and 256 colours


def test_resize_redraws_at_the_new_width(start_agent: Callable[..., Pane]) -> None:
    pane = start_agent("--script", "idle")
    wait_for("the idle screen", pane.idle)
    pane.tmux("resize-window", "-t", pane.id, "-x", "90", "-y", "30")
    wait_for(
        "rules as wide as the pane",
        lambda: any(line == "─" * 90 for line in pane.lines()) and pane.idle(),
    )


def _socket_gone(address: ServerAddress) -> bool:
    done = subprocess.run(["tmux", *address.tmux_args(), "has-session"], capture_output=True, check=False)
    return done.returncode != 0


def test_demo_fleet_shows_varied_states_and_cleans_up() -> None:
    fleet = DemoFleet.start(agents=6)
    try:
        assert fleet.server.socket_name and fleet.server.socket_name.startswith("nbs-demo-")
        assert fleet.sessions == ["alpha", "beta"]
        assert len(fleet.projects) >= 3 and all((p / ".nbs" / "control-inbox").is_file() for p in fleet.projects)
        rows = fleet.tmux("list-panes", "-a", "-F", "#{pane_id}\t#{@nbs_demo_agent}\t#{pane_current_command}").splitlines()
        marks = {r.split("\t")[0]: r.split("\t")[1:] for r in rows}
        assert {a.pane_id for a in fleet.agents} == {p for p, (mark, _) in marks.items() if mark == "1"}
        assert all(marks[a.pane_id][1] == "claude" for a in fleet.agents)
        assert len(fleet.shell_panes) == 1 and marks[fleet.shell_panes[0]][0] == ""

        def screen(name: str) -> str:
            return fleet.tmux("capture-pane", "-p", "-t", fleet.agent(name).pane_id)

        wait_for("a permission menu", lambda: "Do you want to proceed?" in screen("web-claude"))
        wait_for("a plan menu", lambda: "Would you like to proceed?" in screen("planner"))
        wait_for("a question", lambda: "Enter to select" in screen("review-claude"))
        wait_for(
            "an idle agent in accept-edits mode",
            lambda: "⏵⏵ accept edits on (shift+tab to cycle) · ← for agents" in screen("docs-claude"),
        )
        wait_for("a \\nbs- line", lambda: "\\nbs-register-chat" in screen("team-lead"))
        sizes = fleet.tmux("list-windows", "-a", "-F", "#{window_width}x#{window_height}").split()
        assert set(sizes) == {"160x48"}
    finally:
        fleet.stop()
    assert not fleet.root.exists()
    assert _socket_gone(fleet.server)
    assert not (Path(f"/tmp/tmux-{os.getuid()}") / str(fleet.server.socket_name)).exists()


def test_demo_fleet_on_a_given_server_removes_only_its_sessions(server: Server) -> None:
    server.new_session(session_name="mine")
    address = ServerAddress(socket_name=server.socket_name)
    fleet = DemoFleet.start(agents=2, server=address)
    try:
        names = set(fleet.tmux("list-sessions", "-F", "#{session_name}").split())
        assert names == {"mine", "alpha"}
    finally:
        fleet.stop()
    assert [s.name for s in server.sessions] == ["mine"]
    assert not fleet.root.exists()


def test_busy_fleet_for_benchmarks(tmp_path: Path) -> None:
    fleet = DemoFleet.start_busy(panes=6, busy_fraction=0.5, rate=5, panes_per_window=4, marker_dir=tmp_path / "m")
    try:
        assert [a.script for a in fleet.agents] == ["busy"] * 3 + ["idle"] * 3
        windows = fleet.tmux("list-windows", "-a", "-F", "#{session_name}:#{window_name}:#{window_panes}").split()
        assert windows == ["bench-0:w0:4", "bench-0:w1:2"]
        first = fleet.agents[0]
        assert first.marker_fifo is not None and first.marker_file is not None
        with open(first.marker_fifo, "w") as handle:
            handle.write("BENCH-MARK-1\n")
        wait_for("the marker", lambda: "BENCH-MARK-1" in fleet.tmux("capture-pane", "-p", "-t", first.pane_id))
        wait_for("the marker record", lambda: first.marker_file is not None and first.marker_file.exists())
    finally:
        fleet.stop()
    assert _socket_gone(fleet.server)


def test_status_file_and_hook_spool_like_claude_code(start_agent: Callable[..., Pane], tmp_path: Path) -> None:
    from nbs_tui.claude.spool import parse_line
    from nbs_tui.claude.status import proc_info, read_status_file
    from nbs_tui.claude.transcript import TranscriptTail
    from nbs_tui.core.fleet.model import AgentState

    config, spool = tmp_path / "cc", tmp_path / "hooks.jsonl"
    pane = start_agent("--script", "idle", "--seed", "1", "--claude-config", str(config), "--hook-spool", str(spool))
    pid = int(pane.show("#{pane_pid}"))
    status_path = config / "sessions" / f"{pid}.json"

    def status() -> tuple[str, str | None] | None:
        found = read_status_file(status_path)
        return (found.status, found.waiting_for) if found else None

    def events() -> list[str]:
        if not spool.exists():
            return []
        return [parse_line(line, 0.0).event for line in spool.read_bytes().splitlines()]

    wait_for("status idle", lambda: status() == ("idle", None))
    found = read_status_file(status_path)
    info = proc_info(pid)
    assert found is not None and info is not None and found.proc_start == info.start and found.cwd
    pane.type("run the tests in bash")
    pane.press("Enter")
    wait_for("status waiting", lambda: status() == ("waiting", "permission prompt"))
    pane.press("1")
    wait_for("the Stop hook", lambda: "Stop" in events())
    wait_for("status idle again", lambda: status() == ("idle", None))
    names = events()
    assert names[:2] == ["SessionStart", "UserPromptSubmit"]
    assert "PermissionRequest" in names and names.index("PermissionRequest") < names.index("Stop")
    record = next(parse_line(line, 0.0) for line in spool.read_bytes().splitlines() if b"PermissionRequest" in line)
    assert record.pane_id == pane.id and record.text("tool_name") == "Bash"
    assert record.session_id == found.session_id
    transcripts = list((config / "projects").glob(f"*/{found.session_id}.jsonl"))
    assert len(transcripts) == 1 and record.transcript_path == str(transcripts[0])
    tail = TranscriptTail(transcripts[0])
    tail.read()
    facts = tail.facts
    assert facts.state is AgentState.IDLE and facts.last_tool == "Bash" and facts.session_id == found.session_id
    assert facts.last_assistant_message and facts.last_assistant_message in pane.text().replace("\n  ", " ")
    # each response reports its usage, as Claude Code's do: the meters count them (README, Meters)
    assert facts.meters.responses >= 2 and facts.meters.tokens.output > 0 and facts.meters.tokens.cache_read > 18_000
    pane.tmux("kill-pane", "-t", pane.id)
    wait_for("the status file to go", lambda: not status_path.exists())
    wait_for("SessionEnd", lambda: events()[-1:] == ["SessionEnd"])


def test_bigger_demo_fleet_adds_a_third_session() -> None:
    with DemoFleet.start(agents=9) as fleet:
        assert fleet.sessions == ["alpha", "beta", "gamma"]
        assert len(fleet.agents) == 9 and len({a.pane_id for a in fleet.agents}) == 9
        crew = [a for a in fleet.agents if a.session == "gamma"]
        assert [a.script for a in crew] == ["cycle"] * 3
        layout = fleet.tmux("list-windows", "-t", "gamma", "-F", "#{window_name}:#{window_panes}").split()
        assert layout == ["crew-1:3"]
    assert not fleet.root.exists() and _socket_gone(fleet.server)
