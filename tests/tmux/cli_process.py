"""``nbs-tui`` run as a process by the lifecycle commands' tests (``new``, ``restore``), kept
apart from the caller's: a config file of the test's, state and config folders under the test's
folder, no service, none of the caller's ``TMUX*`` or ``NBS_*`` variables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_nbs_tui(tmp: Path, socket: str, *argv: str, config: str) -> subprocess.CompletedProcess[str]:
    """``nbs-tui --config TMP/config.toml -L SOCKET ARGV`` in ``tmp``, the config file holding
    ``config``."""
    config_file = tmp / "config.toml"
    config_file.write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "NBS_"))}
    env.update(XDG_STATE_HOME=str(tmp / "state"), XDG_CONFIG_HOME=str(tmp / "cfg"), NBS_SERVICE="off")
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(config_file), "-L", socket, *argv],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp, check=False,
    )  # fmt: skip
