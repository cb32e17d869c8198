"""The benches' nbs-claude baseline (bench/nbs_claude_sidecar.sh) does the sidecar's work: a
baseline that silently read nothing would make nbs-tui look cheaper than it is."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import libtmux

from tests.conftest import REPO_ROOT
from tests.tmux.fleet_helpers import wait_for

SCRIPT = REPO_ROOT / "bench" / "nbs_claude_sidecar.sh"


def test_the_sidecar_loop_reads_its_pane_registers_what_it_prints_and_ends_with_it(
    server: libtmux.Server, tmp_path: Path
) -> None:
    server.new_session("keeper")  # the server outlives the watched pane
    command = "printf '%s\\n' '\\nbs-register-chat .nbs/chat/a.chat'; exec cat"
    pane = server.new_session("agent", window_command=command).active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    registry = tmp_path / "registry"
    sidecar = subprocess.Popen(
        ["bash", str(SCRIPT), server.socket_name or "", pane.pane_id, str(tmp_path)],
        env={**os.environ, "NBS_CLAUDE_REGISTRY": str(registry)},
    )
    try:
        def registered() -> bool:
            return registry.is_file() and registry.read_text() == "chat:.nbs/chat/a.chat\n"

        wait_for(registered, 10)
        time.sleep(2.5)  # it keeps reading the pane: still there, nothing registered twice
        assert registry.read_text() == "chat:.nbs/chat/a.chat\n"
        assert sidecar.poll() is None
        server.cmd("kill-pane", "-t", pane.pane_id)
        assert sidecar.wait(10) == 0
    finally:
        if sidecar.poll() is None:
            sidecar.kill()
            sidecar.wait()
