"""``nbs-tui new``'s bad inputs on a real tmux server: each exits 4, names what is wrong, and
leaves nothing behind (no window, no session, no server started). No Claude Code needed: every
refusal comes before the agent would start (the real start: tests/realclaude/test_new_e2e.py)."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import libtmux
import pytest

from tests.tmux.cli_process import run_nbs_tui


def nbs_new(tmp: Path, socket: str, *args: str, claude_command: str = "cat") -> subprocess.CompletedProcess[str]:
    return run_nbs_tui(tmp, socket, "new", *args, config=f"claude_command = {json.dumps(claude_command)}\n")


def layout(server: libtmux.Server) -> list[str]:
    return list(server.cmd("list-windows", "-a", "-F", "#{session_name}:#{window_name}").stdout)


@pytest.fixture
def running(server: libtmux.Server, tmp_path: Path) -> libtmux.Server:
    server.new_session(session_name="agents", window_name="api", start_directory=str(tmp_path))
    return server


def refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 4, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    for word in words:
        assert word in done.stderr, done.stderr


def test_a_missing_folder(running: libtmux.Server, tmp_path: Path) -> None:
    before = layout(running)
    done = nbs_new(tmp_path, str(running.socket_name), str(tmp_path / "nowhere"), "--prompt", "hi")
    refused(done, f"DIR {tmp_path / 'nowhere'} does not exist")
    assert layout(running) == before


def test_a_name_already_used_on_that_server(running: libtmux.Server, tmp_path: Path) -> None:
    before = layout(running)
    done = nbs_new(tmp_path, str(running.socket_name), str(tmp_path), "--name", "api", "--session", "other")
    refused(done, "NAME 'api' is already used on", "(window agents:0)")
    assert layout(running) == before


def test_claude_code_not_found(running: libtmux.Server, tmp_path: Path) -> None:
    before = layout(running)
    done = nbs_new(tmp_path, str(running.socket_name), str(tmp_path), claude_command="/nonexistent/claude --x")
    refused(done, "Claude Code not found: '/nonexistent/claude' is not on PATH")
    assert layout(running) == before


@pytest.mark.parametrize("kind", ["missing", "folder", "fifo", "empty", "binary"])
def test_a_prompt_file_that_cannot_be_read(running: libtmux.Server, tmp_path: Path, kind: str) -> None:
    bad = tmp_path / f"prompt-{kind}"
    if kind == "folder":
        bad.mkdir()
    elif kind == "fifo":
        os.mkfifo(bad)
    elif kind == "empty":
        bad.write_text("\n")
    elif kind == "binary":
        bad.write_bytes(b"\xff\xfe\x00task")
    before = layout(running)
    done = nbs_new(tmp_path, str(running.socket_name), str(tmp_path), "--prompt-file", str(bad))
    refused(done, f"--prompt-file {bad}")
    assert layout(running) == before


def test_another_host_is_refused_and_nothing_is_made(running: libtmux.Server, tmp_path: Path) -> None:
    before = layout(running)
    done = nbs_new(tmp_path, str(running.socket_name), str(tmp_path), "--host", "no-such-host.invalid")
    refused(done, "no-such-host.invalid")
    assert layout(running) == before


def test_every_problem_at_once_and_no_server_started(tmp_path: Path) -> None:
    socket = f"nbs-new-bad-{uuid.uuid4().hex[:8]}"
    done = nbs_new(tmp_path, socket, str(tmp_path / "gone"), "--name", "a:b", "--prompt-file", str(tmp_path / "y"))
    refused(done, "DIR", "--name 'a:b'", "--prompt-file")
    assert len(done.stderr.strip().splitlines()) >= 2
    alive = subprocess.run(["tmux", "-L", socket, "list-sessions"], capture_output=True, check=False)
    assert alive.returncode != 0  # no server was started


def test_the_hosts_check_script_reads_a_folder_under_the_hosts_home(tmp_path: Path) -> None:
    """``new --host``'s checks run as a shell script there; a ``~/`` folder is the host's HOME's
    (run here by sh with another HOME, as ssh would run it there)."""
    from nbs_tui.core.fleet.agent_spec import NewAgent
    from nbs_tui.lifecycle.remote_agent import _script

    (tmp_path / "my proj").mkdir()
    script = _script(NewAgent("~/my proj", name="x"), "sh", "true")
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env={"HOME": str(tmp_path), "PATH": os.environ["PATH"]}, check=True)
    facts = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert facts["DIR"] == str((tmp_path / "my proj").resolve()) and facts["HOME"] == str(tmp_path) and facts["CLAUDE"] == "1"
