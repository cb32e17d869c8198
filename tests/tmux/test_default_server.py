"""Run with no -L/-S inside a pane, nbs-tui watches the pane's own server, as a plain ``tmux``
would ($TMUX's socket), and ``nbs-tui service`` names the same server for the same environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from tests.headless_proc import REPO, Headless
from tests.tmux.test_lease_headless import agent


@pytest.fixture
def path_server() -> Iterator[tuple[libtmux.Server, Path]]:
    """A private server on a socket path (not in the -L folder); short, for the socket limit."""
    folder = Path(tempfile.mkdtemp(prefix="nbs-sock-"))
    socket = folder / "s"
    server = libtmux.Server(socket_path=str(socket))
    yield server, socket
    if server.is_alive():
        server.kill()
    shutil.rmtree(folder, ignore_errors=True)


def test_no_flags_inside_tmux_watch_the_pane_s_server(
    path_server: tuple[libtmux.Server, Path], tmp_path: Path
) -> None:
    server, socket = path_server
    session = server.new_session("agents", attach=False)
    pane_id, _ = agent(session, tmp_path, "idle")
    home = tmp_path / "home"
    no_default = tmp_path / "no-default"  # tmux's default server is absent here: no fallback to it
    no_default.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".state"),
        "TMUX_TMPDIR": str(no_default),
        "TMUX": f"{socket},123,0",
    }
    with Headless([], env=env) as run:
        seen = retry_until(lambda: run.has("state", pane=pane_id) or run.proc.poll() is not None, 20, raises=False)
        assert seen and run.has("state", pane=pane_id), run.events
        assert run.find("start")[0]["server"] == f"tmux server at {socket}"
        assert retry_until(lambda: run.has("lease", acting=True), 20, raises=False), run.events
        status = subprocess.run(
            [sys.executable, "-m", "nbs_tui", "service", "status"],
            capture_output=True, text=True, cwd=REPO, env=env, timeout=60, check=False,
        )  # fmt: skip
    # the service's view of "no flags here" is the same server: it sees the dashboard's lease
    assert f"service for tmux server at {socket}: not running" in status.stdout, status
    assert f"pid {run.proc.pid} since" in status.stdout, status.stdout
