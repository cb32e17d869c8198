"""``nbs-tui send --host`` through the ssh lab: the host's own nbs-tui asks its own service
(started there by that command), which types the text once; a refusal there is a refusal here
(exit 2, the reason), and the text's quotes, ``$`` and ``;`` arrive as written."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from nbs_tui.core.fleet_api.exit_codes import ExitCode
from tests.remote.conftest import SshLab
from tests.remote.helpers import far_nbs_tui, new_session
from tests.tmux.fleet_helpers import wait_for
from tests.tmux.test_sidecar_runner import write_fake_claude


@pytest.mark.service_auto
def test_send_on_another_host_types_once_there_and_refuses_as_there(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    idle_log, asking_log = tmp_path / "idle.log", tmp_path / "asking.log"
    idle = new_session(a, "idle", f"exec {fake} idle {idle_log}", 120, 40)
    asking = new_session(a, "asking", f"exec {fake} permission {asking_log}", 120, 40)
    there = far_nbs_tui(ssh_lab, tmp_path)

    def nbs(*argv: str) -> subprocess.CompletedProcess[str]:
        return there.run(*argv, timeout=200)

    def states() -> dict[str, object]:
        done = nbs("agents", "--json")
        assert done.returncode == 0, done.stderr
        return {str(agent["pane_id"]): agent["state"] for agent in json.loads(done.stdout)["agents"]}

    def submits(log: Path) -> list[str]:
        return [line for line in log.read_text().splitlines() if line.startswith("SUBMIT")]

    text = "it's $HOME; then `date` & \"quotes\" -- done"
    try:
        wait_for(lambda: states() == {idle: "idle", asking: "permission"}, 60)
        sent = nbs("send", f"hosta/default/{idle}", text, "--json")
        assert sent.returncode == ExitCode.DONE, sent.stderr
        out = json.loads(sent.stdout)
        assert out["result"] == "submitted" and out["agent"]["target"] == f"hosta/default/{idle}"
        time.sleep(3)  # a second typing would come a little later
        assert submits(idle_log) == [f"SUBMIT {text}"]
        refused = nbs("send", f"hosta/default/{asking}", "yes")
        assert refused.returncode == ExitCode.REFUSED and "(permission)" in refused.stderr, refused.stderr
        assert submits(asking_log) == []
    finally:
        there.stop_service()
