"""Children started with `popen_tied` die with the process that started them, and only then:
not when the thread that asked for them ends (the kernel ties PR_SET_PDEATHSIG to the forking
thread; whether a Popen on a thread that then ends kills the child at once depends on how the
Python was built, fork or vfork: the forker thread makes it never happen)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbs_tui.tmux.tied import popen_tied, tie_prefix
from tests.tmux.fleet_helpers import process_alive, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

OWNER = """
import threading, time
from nbs_tui.tmux.tied import popen_tied
children = []
asker = threading.Thread(target=lambda: children.append(popen_tied(["sleep", "600"])))
asker.start(); asker.join()  # the thread that asked is gone
time.sleep(0.5)
print(children[0].pid, children[0].poll(), flush=True)
time.sleep(600)
"""


def test_a_tied_child_outlives_the_thread_that_asked_and_dies_with_the_process(tmp_path: Path) -> None:
    assert tie_prefix(), "setpriv --pdeathsig is part of util-linux, which CI installs"
    script = tmp_path / "owner.py"
    script.write_text(OWNER)
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    try:
        assert owner.stdout is not None
        pid_text, status = owner.stdout.readline().split()
        pid = int(pid_text)
        assert status == "None" and process_alive(pid)
        assert Path(f"/proc/{pid}/comm").read_text().strip() == "sleep"  # setpriv exec'd it: same pid
        owner.kill()
        owner.wait(10)
        wait_for(lambda: not process_alive(pid), 5.0)
    finally:
        owner.kill()


def test_a_missing_command_raises_as_popen_would() -> None:
    with pytest.raises(FileNotFoundError):
        popen_tied(["no-such-command-nbs-tui"])
