"""``nbs-tui --headless --host NAME`` watches a host of the config file's ``[[hosts]]`` table
through OpenSSH (ssh reads ~/.ssh from the passwd entry, not $HOME, so the lab's ssh config is
given as the host's ``ssh_options``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.remote.conftest import SshLab
from tests.remote.helpers import new_session
from tests.tmux.fleet_helpers import wait_for

REPO = Path(__file__).resolve().parents[2]


def _headless(lab: SshLab, tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], list[dict[str, Any]]]:
    config = tmp_path / "nbs-tui.toml"
    config.write_text(
        "".join(
            f'[[hosts]]\nname = "{alias}"\nssh = "{alias}"\nssh_options = ["-F", "{lab.config}"]\n\n'
            for alias in ("hosta", "hostb", "hostrefused")
        )
    )
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "NBS_POLL_DISABLE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "nbs_tui", "--config", str(config), "--headless", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, cwd=REPO, env=env,
    )  # fmt: skip
    events: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            events.append(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    return proc, events


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_headless_on_a_host_alias_connects_and_lists_its_panes(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "far")
    proc, events = _headless(ssh_lab, tmp_path, "--host", "hosta")
    try:
        wait_for(lambda: any(e["event"] == "connection" for e in events), 30)
        first = next(e for e in events if e["event"] == "connection")
        assert first["connected"] is True and first["message"].startswith("connected to hosta: "), events
        # its control client is attached on hosta, through ssh
        wait_for(lambda: "1" in a.tmux("list-clients", "-F", "#{client_control_mode}").split(), 30)
    finally:
        _stop(proc)
    wait_for(lambda: not a.tmux("list-clients", "-F", "#{client_pid}").strip())


def test_headless_on_an_unreachable_host_says_why_in_one_line(ssh_lab: SshLab, tmp_path: Path) -> None:
    proc, events = _headless(ssh_lab, tmp_path, "--host", "hostrefused")
    try:
        wait_for(lambda: any(e["event"] == "connection" for e in events), 30)
        first = next(e for e in events if e["event"] == "connection")
        assert first["connected"] is False, first
        assert first["message"] == "hostrefused: connection refused: no ssh server listening at hostrefused"
    finally:
        _stop(proc)

