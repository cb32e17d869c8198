"""The sidecar acting on agents of another host: ``nbs-tui --headless --host hosta`` finds them by
their process tree on hosta, delivers ``/nbs-poll`` to an idle one and answers a plan menu, over ssh."""

from __future__ import annotations

import os
from pathlib import Path

from tests.headless_proc import Headless
from tests.remote.conftest import SshLab
from tests.remote.helpers import new_session
from tests.tmux.fleet_helpers import wait_for
from tests.tmux.test_sidecar_runner import write_fake_claude

REPO = Path(__file__).resolve().parents[2]


def test_headless_polls_and_answers_agents_on_a_remote_host(ssh_lab: SshLab, tmp_path: Path) -> None:
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    log = tmp_path / "agent.log"
    plan_log = tmp_path / "plan.log"
    pane = new_session(ssh_lab.hosts["hosta"], "agents", f"{fake} idle {log}", 120, 40)
    plan = new_session(ssh_lab.hosts["hosta"], "planner", f"{fake} plan {plan_log}", 120, 40)
    config = tmp_path / "nbs-tui.toml"
    config.write_text(f'[[hosts]]\nname = "hosta"\nssh = "hosta"\nssh_options = ["-F", "{ssh_lab.config}"]\n')
    state = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    with Headless(["--config", str(config), "--poll-interval", "2"], env=state) as run:
        events = run.events
        wait_for(
            lambda: any(e.get("event") == "poll" and e.get("pane") == pane and e.get("result") == "submitted" for e in events),
            45,
        )
        wait_for(
            lambda: any(e.get("event") == "plan-select" and e.get("pane") == plan and e.get("result") == "landed" for e in events),
            45,
        )
    assert run.returncode == 0, run.stderr
    states = [e for e in events if e["event"] == "state" and e["pane"] == pane]
    assert states and states[0]["state"] == "idle", events
    assert "SUBMIT /nbs-poll" in log.read_text()
    assert [line for line in plan_log.read_text().splitlines() if line.startswith("CHOICE")] == ["CHOICE 1"]
