"""A remote agent's meters in a dashboard over ssh (docs/remote.md): the host's service reads
the agent's transcript there and publishes its meters in ``@nbs_meters``; the dashboard here,
which reads no file of that host, shows them from its per-tick option read over ssh."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet.pane_state import PaneState
from nbs_tui.core.sidecar.meters import DEFAULT_PRICES, Meters, Tokens, describe
from nbs_tui.runtime.contract import LeaseMode
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.sidecar.events import MetersNews
from tests.remote.conftest import SshLab
from tests.remote.helpers import NBS_TUI, new_session
from tests.tmux.fleet_helpers import wait_for
from tests.tmux.test_meters_relay import append, response
from tests.tmux.test_service import LeaseRecorder
from tests.tmux.test_sidecar_runner import write_fake_claude
from tests.unit.test_runtime import settings


@pytest.mark.service_auto
def test_a_dashboard_over_ssh_shows_a_remote_agents_meters(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    config = tmp_path / "far-claude"  # the agent's $CLAUDE_CONFIG_DIR on hosta, found through /proc
    pane = new_session(
        a, "agents",
        f"exec env CLAUDE_CONFIG_DIR={shlex.quote(str(config))} {fake} idle {tmp_path / 'agent.log'}", 120, 40,
    )
    pid = int(a.tmux("display-message", "-p", "-t", pane, "#{pane_pid}").strip())
    (config / "sessions").mkdir(parents=True)
    status = {"pid": pid, "sessionId": "s-far", "cwd": str(tmp_path), "status": "idle"}
    (config / "sessions" / f"{pid}.json").write_text(json.dumps(status))
    transcript = config / "projects" / "-far" / "s-far.jsonl"
    transcript.parent.mkdir(parents=True)
    append(transcript, response("msg-1", 1000, 50, 200, 3000) + response("msg-2", 7, 11, 13, 17))
    state = tmp_path / "far-state"
    command = f"XDG_STATE_HOME={shlex.quote(str(state))} {shlex.quote(str(NBS_TUI))}"
    host = HostSpec("hosta", "hosta", ssh_lab.ssh_options, nbs_tui=command)
    recorder = LeaseRecorder()
    runtime = Runtime(replace(settings(tmp_path), hosts=(host,), service="auto", poll_interval=600.0), recorder)
    runtime.build()
    assert runtime.lease_mode() is LeaseMode.SERVICE

    def relayed() -> Meters | None:
        told = [e for e in list(recorder.sidecar) if isinstance(e, MetersNews) and e.pane_id == pane]
        return told[-1].meters if told else None

    expected = Tokens(input=1007, output=61, cache_creation=213, cache_read=3017)
    runtime.start()
    try:
        wait_for(lambda: (m := relayed()) is not None and m.tokens == expected, 45)
    finally:
        runtime.stop()
        ssh_lab.ssh("hosta", f"{command} service stop")
    assert not any(acting for _, acting in recorder.leases)  # the dashboard only watched
    meters = relayed()
    assert meters is not None and meters.responses == 2
    # as the dashboard shows it: the details' meters row and the status bar's Σ
    shown = PaneState()
    shown.set_fleet(recorder.fleets[-1])
    assert shown.set_relayed_meters(pane, meters)
    facts = shown.facts_shown(pane)
    assert facts is not None and facts.meters == meters
    assert describe(meters, DEFAULT_PRICES).startswith("ctx 0% · in 1.0k +cache 3.0k/213 · out 61 · ~$")
    total = shown.fleet_meters()
    assert total is not None and total.tokens == expected
