"""The operator's one-off tmux commands (identity check, paste) run on a host through ssh."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.port import TmuxUnavailable
from tests.remote.conftest import SshLab
from tests.remote.helpers import new_session, runner_for
from tests.tmux.fleet_helpers import wait_for


def test_identity_and_paste_on_a_remote_pane(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    out = tmp_path / "pasted.txt"
    pane = new_session(a, "paste", f"sh -c 'stty -echoctl; exec cat > {shlex.quote(str(out))}'")
    runner = runner_for(ssh_lab, "hosta")
    try:
        commands = TmuxServerCommands(runner)
        wait_for(lambda: getattr(commands.pane_identity(pane), "current_command", "") == "cat")
        identity = commands.pane_identity(pane)
        assert identity is not None and identity.session_name == "paste"
        assert commands.pane_identity("%999") is None
        text = "two lines; $HOME 'quoted' #{x}\nsecond ünïcode"
        commands.paste(pane, text, bracketed=False)
        commands.run("send-keys", "-t", pane, "C-d")
        # tmux turns LF into CR on the way in, a terminal in cooked mode turns it back
        wait_for(lambda: out.exists() and out.read_bytes() == text.encode())
    finally:
        runner.close()


def test_a_host_that_cannot_be_reached_is_unavailable_in_one_line(ssh_lab: SshLab) -> None:
    runner = runner_for(ssh_lab, "hostrefused")
    try:
        with pytest.raises(TmuxUnavailable, match=r"^hostrefused: connection refused"):
            TmuxServerCommands(runner).run("list-sessions")
    finally:
        runner.close()
