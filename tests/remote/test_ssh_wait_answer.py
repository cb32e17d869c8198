"""``nbs-tui wait --host`` and ``answer --host`` through the ssh lab: the host's own nbs-tui waits
on its published states and answers its agent's menu; its exit codes (124 with its document
too) are the command's here."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from nbs_tui.core.fleet_api.exit_codes import ExitCode
from tests.remote.conftest import SshLab
from tests.remote.helpers import far_nbs_tui, new_session
from tests.tmux.fleet_helpers import wait_for
from tests.tmux.test_sidecar_runner import write_fake_claude


@pytest.mark.service_auto
def test_wait_and_answer_on_another_host(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    log = tmp_path / "agent.log"
    pane = new_session(a, "planner", f"exec {fake} plan {log}", 120, 40)
    there = far_nbs_tui(ssh_lab, tmp_path, far_env="NBS_PLAN_POLICY=off")

    def nbs(*argv: str) -> subprocess.CompletedProcess[str]:
        return there.run(*argv)

    target = f"hosta/default/{pane}"
    try:
        needs = nbs("wait", target, "--until", "needs", "--timeout", "45", "--json")
        assert needs.returncode == ExitCode.DONE, needs.stderr
        [item] = json.loads(needs.stdout)["agents"]
        assert item["needs"] == "plan" and item["agent"]["target"] == target  # named as here
        menu: list[str] = []

        def read() -> bool:
            done = nbs("agents", "--json")
            assert done.returncode == 0, done.stderr
            menu[:] = [a["menu"] for a in json.loads(done.stdout)["agents"] if a["menu"]]
            return bool(menu)

        wait_for(read, 30)
        stale = nbs("answer", target, "2", "--menu", "0123456789ab")
        assert stale.returncode == ExitCode.REFUSED and f"is menu {menu[0]}, not 0123456789ab" in stale.stderr
        answered = nbs("answer", target, "Yes, manually approve edits", "--menu", menu[0], "--json")
        assert answered.returncode == ExitCode.DONE, answered.stderr
        doc = json.loads(answered.stdout)
        assert doc["key"] == "2" and doc["agent"]["target"] == target
        wait_for(lambda: "CHOICE 2" in log.read_text(), 10)
        idle = nbs("wait", target, "--until", "idle", "--timeout", "30", "--json")
        assert idle.returncode == ExitCode.DONE, idle.stderr
        timed_out = nbs("wait", target, "--until", "done", "--timeout", "2", "--json")
        assert timed_out.returncode == ExitCode.TIMEOUT, timed_out.stderr
        assert json.loads(timed_out.stdout)["timed_out"] is True  # the host's document came through
        assert [line for line in log.read_text().splitlines() if line.startswith("CHOICE")] == ["CHOICE 2"]
    finally:
        there.stop_service()
