"""Claude Code's own background sessions (issue 29 item 5; docs/lifecycle.md, "Background sessions").

On the real CLI against the scripted API: a session started with ``claude --bg`` is listed in the
dashboard's fleet (Pilot) with the state it reports, ``o`` opens it in a new tmux window with
``claude attach ID``, the row goes and the window's pane is watched as any other (its state read
from its screen, its prompt reaching the API). A version without ``agents --json`` (2.1.120) lists
nothing and says nothing; a reply that is not JSON is one problem line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest

from nbs_tui.app import create_app
from nbs_tui.core.fleet.background import NO_SUPPORT, BackgroundSession
from nbs_tui.core.fleet.model import AgentState
from nbs_tui.lifecycle.background_poll import PROBLEM_SOURCE, BackgroundPoller
from tests.app.helpers import wait_for
from tests.realclaude.harness import ClaudeFleet, Text, find_claude
from tests.realclaude.new_world import NewAgentWorld, make_world, wait_until

OLDER_VERSION = "2.1.120"
"""A version without ``agents --json``; scripts/test installs it (keep the two in step)."""
_BACKGROUNDED = re.compile(r"backgrounded · ([0-9a-f]+) · ")


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "CLAUDE", "NBS_"))}


def start_background(world: NewAgentWorld, name: str, prompt: str) -> str:
    """``claude --bg -n NAME PROMPT`` in the world's folder; the short id it prints."""
    done = subprocess.run(
        [str(world.wrapper), "--bg", "-n", name, prompt], cwd=world.workdir, env=_clean_env(),
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    found = _BACKGROUNDED.search(done.stdout)
    assert done.returncode == 0 and found, (done.returncode, done.stdout, done.stderr)
    return found.group(1)


@contextlib.contextmanager
def background_daemon(world: NewAgentWorld, server: libtmux.Server) -> Iterator[None]:
    """``claude --bg`` starts a supervisor of its own (one per config folder, outliving the
    command): stopped at the end, with its sessions, so no test leaves a process behind. The tmux
    server goes first: a ``claude attach`` left running there starts a new supervisor when its
    own goes away."""
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            server.kill()
        subprocess.run(
            [str(world.wrapper), "daemon", "stop", "--any"], env=_clean_env(), capture_output=True, timeout=30,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        status = world.home / ".claude" / "daemon.status.json"
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            pid = int(json.loads(status.read_text())["supervisorPid"])
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
                time.sleep(0.1)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # the supervisor this test started, by its pid


@pytest.mark.timeout(240)
async def test_a_background_session_is_listed_opened_in_tmux_and_then_watched(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    if tuple(int(n) for n in claude_fleet.binary.version.split(".")) < (2, 1, 265):
        pytest.skip(f"a --bg session reaches the scripted API from 2.1.265 (2.1.197: ConnectionRefused); this is {claude_fleet.binary.version}")
    server.new_session(session_name="work", start_directory=str(tmp_path))
    world = make_world(claude_fleet, tmp_path, "bgw", [Text("Hello from the background."), Text("Second answer.")], trust=True)
    log = world.action_log
    with background_daemon(world, server):
        short = start_background(world, "bgjob", "say hello")
        wait_until(lambda: world.api.prompts() == ["say hello"], 60, "the background prompt at the API")
        app = create_app(world.dashboard_settings(server, poll=False))
        row = "bg " + short
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_for(pilot, lambda: row in app.dashboard.fleet_list.row_keys, 60, what="the background session listed")
            cells = [cell.plain for cell in app.dashboard.fleet_list.get_row(row)]
            assert cells[0] == f"◇ bg {short}"
            assert cells[1] in ("idle", "busy")  # what it reports (`status`)
            assert cells[4:7] == ["work", "bgjob", "claude --bg"]  # its folder, its name
            assert row == app.dashboard.fleet_list.row_keys[-1]  # after the panes
            palette = [command.title for command in app.get_system_commands(app.screen)]
            assert "Open background session bgjob in tmux" in palette
            app.dashboard.fleet_list.move_cursor(app.dashboard.fleet_list.row_keys.index(row))
            assert app.dashboard.fleet_list.selected_background is not None
            assert app.dashboard.fleet_list.selected_pane_id is None
            await pilot.press("o")

            def opened_pane() -> str | None:
                return next((p.pane_id for p in app.state.panes if p.window_name == "bgjob"), None)

            await wait_for(pilot, lambda: opened_pane() is not None, 60, what="the window of claude attach")
            pane_id = opened_pane()
            assert pane_id is not None
            await wait_for(pilot, lambda: row not in app.dashboard.fleet_list.row_keys, 30, what="the row gone (its pane stands for it)")
            await wait_for(pilot, lambda: app.state.pane_by_id[pane_id].is_agent, 30, what="the pane seen as an agent")
            await wait_for(
                pilot, lambda: (s := app.state.statuses.get(pane_id)) is not None and s.state is AgentState.IDLE, 60,
                what="the attached session read idle from its screen",
            )  # fmt: skip
            # an ordinary pane: what is typed there reaches the background session's conversation
            server.cmd("send-keys", "-t", pane_id, "-l", "and again")
            await wait_for(pilot, lambda: "and again" in "\n".join(server.cmd("capture-pane", "-p", "-t", pane_id).stdout), 20, what="typed")
            server.cmd("send-keys", "-t", pane_id, "Enter")
            await wait_for(pilot, lambda: world.api.prompts() == ["say hello", "and again"], 60, what="the second prompt")
            await wait_for(pilot, lambda: log.exists() and '"action":"attach"' in log.read_text(), 20, what="the log line")
            start = server.cmd("list-panes", "-a", "-F", "#{pane_id} #{pane_start_command} #{pane_current_path}").stdout
            assert any(line.startswith(f"{pane_id} ") and f"attach {short}" in line and str(world.workdir) in line for line in start), start
        record = json.loads(log.read_text().splitlines()[-1])
        assert (record["action"], record["outcome"], record["pane_id"]) == ("attach", "sent", pane_id)
        assert record["sent"] == f"claude attach {short}"


def _wrapper_for(binary: Path, tmp: Path) -> Path:
    """A claude_command of that binary with a throw-away HOME (no API: only its help is asked)."""
    home = tmp / "home"
    home.mkdir()
    wrapper = tmp / "claude-old"
    wrapper.write_text(f"#!/bin/bash\nexport HOME={shlex.quote(str(home))}\nexec {shlex.quote(str(binary))} \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper


class _Heard:
    def __init__(self) -> None:
        self.lists: list[tuple[BackgroundSession, ...]] = []
        self.problems: list[tuple[str, str]] = []

    def sessions(self, sessions: tuple[BackgroundSession, ...]) -> None:
        self.lists.append(sessions)

    def problem(self, source: str, message: str) -> None:
        self.problems.append((source, message))


def _asked_once(claude_command: str) -> tuple[BackgroundPoller, _Heard]:
    heard = _Heard()
    poller = BackgroundPoller(claude_command, heard.sessions, heard.problem, first_after=0)
    poller.start()
    try:
        assert poller.wait_detected(60)
    finally:
        poller.stop()
    return poller, heard


@pytest.mark.realclaude
def test_a_version_without_background_sessions_lists_nothing_and_says_nothing(tmp_path: Path) -> None:
    # scripts/test installs 2.1.120 beside the primary version, so under CI this runs, never skips
    found = find_claude(OLDER_VERSION)
    if isinstance(found, str):
        if os.environ.get("NBS_REQUIRE_CLAUDE"):
            pytest.fail(f"NBS_REQUIRE_CLAUDE is set but {found}")
        pytest.skip(found)
    poller, heard = _asked_once(str(_wrapper_for(found.path, tmp_path)))
    assert poller.support == NO_SUPPORT
    assert (heard.lists, heard.problems) == ([], [])


def test_the_recorded_help_of_2_1_100_lists_nothing_and_says_nothing(tmp_path: Path) -> None:
    # a stand-in printing what 2.1.100 printed (tests/corpus/claude/2.1.100): runs everywhere
    corpus = Path(__file__).resolve().parents[1] / "corpus" / "claude" / "2.1.100"
    calls = tmp_path / "calls"
    script = tmp_path / "claude-2.1.100"
    script.write_text(
        "#!/bin/bash\n"
        f'echo "$1 $2" >> {shlex.quote(str(calls))}\n'
        f'case "$1" in agents) tail -n +2 {shlex.quote(str(corpus / "agents-help.txt"))};;\n'
        f'  attach) tail -n +2 {shlex.quote(str(corpus / "attach-help.txt"))};; esac\n'
    )
    script.chmod(0o755)
    poller, heard = _asked_once(str(script))
    assert poller.support == NO_SUPPORT
    assert (heard.lists, heard.problems) == ([], [])
    assert sorted(calls.read_text().splitlines()) == ["agents --help", "attach --help"]  # never agents --json


def test_a_reply_that_is_not_json_is_one_problem_line(tmp_path: Path) -> None:
    # a stand-in for the CLI: the help of a version that has both, and a broken reply
    script = tmp_path / "claude-broken"
    calls = tmp_path / "calls"
    script.write_text(
        "#!/bin/bash\n"
        f'echo "$1 $2" >> {shlex.quote(str(calls))}\n'
        'case "$1 $2" in\n'
        '  "agents --help") echo "  --json   Print active sessions as a JSON array and exit";;\n'
        '  "attach --help") echo "Usage: claude attach <id>";;\n'
        '  "agents --json") echo "[{\\"id\\": \\"ab12\\", \\"kind\\": \\"background\\"";;\n'
        "esac\n"
    )
    script.chmod(0o755)
    heard = _Heard()
    poller = BackgroundPoller(str(script), heard.sessions, heard.problem, first_after=0, every=0.2)
    poller.start()
    try:
        wait_until(lambda: calls.exists() and calls.read_text().count("agents --json") >= 5, 30, "five replies")
    finally:
        poller.stop()
    assert poller.support.list_json and poller.support.attach
    assert len(heard.problems) == 1  # five broken replies, one line: the same trouble is said once
    source, message = heard.problems[0]
    assert source == PROBLEM_SOURCE and "claude agents --json printed no JSON" in message
    assert heard.lists == []
