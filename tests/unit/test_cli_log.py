"""The CLI names its log file in --help (following XDG_STATE_HOME)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_help_names_the_log_file_under_xdg_state_home(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "COLUMNS": "300"}
    out = subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--help"], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert f"Log file (errors and their tracebacks): {tmp_path}/nbs-tui/nbs-tui.log" in out
    assert not (tmp_path / "nbs-tui").exists(), "--help writes nothing"
