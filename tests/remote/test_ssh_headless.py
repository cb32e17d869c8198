"""``nbs-tui --headless --host NAME`` watches a host of the config file's ``[[hosts]]`` table
through OpenSSH (ssh reads ~/.ssh from the passwd entry, not $HOME, so the lab's ssh config is
given as the host's ``ssh_options``)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.headless_proc import Headless
from tests.remote.conftest import SshLab
from tests.remote.helpers import new_session
from tests.tmux.fleet_helpers import wait_for

REPO = Path(__file__).resolve().parents[2]


def _headless(lab: SshLab, tmp_path: Path, *args: str) -> Headless:
    config = tmp_path / "nbs-tui.toml"
    config.write_text(
        "".join(
            f'[[hosts]]\nname = "{alias}"\nssh = "{alias}"\nssh_options = ["-F", "{lab.config}"]\n\n'
            for alias in ("hosta", "hostb", "hostrefused")
        )
    )
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "NBS_POLL_DISABLE": "1"}
    return Headless(["--config", str(config), *args], env=env)


def test_headless_on_a_host_alias_connects_and_lists_its_panes(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "far")
    with _headless(ssh_lab, tmp_path, "--host", "hosta") as run:
        events = run.events
        wait_for(lambda: any(e["event"] == "connection" for e in events), 30)
        first = next(e for e in events if e["event"] == "connection")
        assert first["connected"] is True and first["message"].startswith("connected to hosta: "), events
        # its control client is attached on hosta, through ssh
        wait_for(lambda: "1" in a.tmux("list-clients", "-F", "#{client_control_mode}").split(), 30)
    assert run.returncode == 0, run.stderr
    wait_for(lambda: not a.tmux("list-clients", "-F", "#{client_pid}").strip())


def test_headless_on_an_unreachable_host_says_why_in_one_line(ssh_lab: SshLab, tmp_path: Path) -> None:
    with _headless(ssh_lab, tmp_path, "--host", "hostrefused") as run:
        events = run.events
        wait_for(lambda: any(e["event"] == "connection" for e in events), 30)
        first = next(e for e in events if e["event"] == "connection")
        assert first["connected"] is False, first
        assert first["message"] == "hostrefused: connection refused: no ssh server listening at hostrefused"
    assert run.returncode == 0, run.stderr

