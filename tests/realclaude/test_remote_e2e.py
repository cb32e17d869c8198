"""A real Claude Code agent on another host, served by that host's own service (issue 12).

Two real Claude Code agents (each on its scripted local API) run in the tmux server of the ssh
lab's ``hosta``. A dashboard's runtime with ``service = "auto"`` watches hosta over ssh and,
finding nobody holding hosta's lease, starts ``nbs-tui service start`` there over ssh (the host's
``nbs_tui`` is this checkout's). That one service, not the dashboard, polls the idle agent and
answers the other's plan menu: counted from the agents' own API requests and the service's event
log on the host.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import libtmux
import pytest

from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.sidecar.lease_rules import Lease
from nbs_tui.core.sidecar.pane_sidecar import BACKOFF
from nbs_tui.runtime.contract import LeaseMode
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.runtime.service import EXIT_NOT_RUNNING, _is_service
from nbs_tui.sidecar.events import PlanSelect, TypingStep
from tests.realclaude.harness import ClaudeBinary, ClaudeFleet, Plan, Text
from tests.remote.conftest import SshLab, ssh_lab  # noqa: F401  (the lab fixture, used below)
from tests.remote.helpers import new_session
from tests.tmux.fleet_helpers import wait_for
from tests.tmux.test_service import LeaseRecorder
from tests.unit.test_runtime import settings

pytestmark = [pytest.mark.realclaude, pytest.mark.slow, pytest.mark.service_auto]

POLL_NEEDLE = "Check your inbox and the registry"
INTERVAL = 3.0
WINDOW = 40.0
NBS_TUI = Path(sys.executable).with_name("nbs-tui")
"""This checkout's nbs-tui, which the lab's host (this machine) runs as its own."""


def _events(log: Path) -> list[dict[str, Any]]:
    """The service's JSON event lines so far (a last line still being written is left out)."""
    if not log.is_file():
        return []
    out: list[dict[str, Any]] = []
    for line in log.read_text().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


def _of(log: Path, pane: str, kind: str, result: str) -> list[dict[str, Any]]:
    return [e for e in _events(log) if e.get("event") == kind and e.get("pane") == pane and e.get("result") == result]


def test_real_agent_on_a_remote_host_is_polled_and_its_plan_answered_by_the_hosts_service(
    claude_binary: ClaudeBinary, ssh_lab: SshLab, tmp_path: Path  # noqa: F811
) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "keep")  # hosta's tmux server, on its own socket
    socket = a.tmux("display-message", "-p", "#{socket_path}").strip()
    fleet = ClaudeFleet(libtmux.Server(socket_path=socket), tmp_path / "agents", claude_binary)
    state = tmp_path / "far-state"
    command = f"XDG_STATE_HOME={shlex.quote(str(state))} {shlex.quote(str(NBS_TUI))}"
    log = state / "nbs-tui" / "service-default.log"
    runtime: Runtime | None = None
    try:
        idle = fleet.start([Text("idle")] * 30, name="idle", wait=False)
        planner = fleet.start([Plan(), Text("Implemented.")], name="planner", permission_mode="plan", wait=False)
        idle.wait_idle(timeout=45)
        planner.wait_idle(timeout=45)
        planner.submit("plan a small change")
        planner.wait_for("Would you like to proceed", timeout=60)

        host = HostSpec("hosta", "hosta", ssh_lab.ssh_options, nbs_tui=command)
        recorder = LeaseRecorder()
        base: Settings = settings(tmp_path)
        runtime = Runtime(replace(base, hosts=(host,), service="auto", poll_interval=INTERVAL), recorder)
        runtime.build()
        assert runtime.lease_mode() is LeaseMode.SERVICE
        runtime.start()

        holders = lambda: [h for h, _ in recorder.leases if isinstance(h, Lease)]  # noqa: E731
        wait_for(lambda: bool(holders()), 60)
        service = holders()[-1].pid
        served_since = time.monotonic()
        assert service != os.getpid() and _is_service(service)

        # the plan menu: answered once, with a no-prompts option, and the plan approved
        wait_for(lambda: bool(_of(log, planner.pane_id, "plan-select", "landed")), 60)
        pressed = _of(log, planner.pane_id, "plan-select", "pressed")
        assert len(pressed) == 1, pressed
        label = str(pressed[0].get("label", "")).lower()
        assert any(w in label for w in ("bypass permissions", "auto mode", "accept edits")), pressed
        assert "clear" not in label
        assert not _of(log, planner.pane_id, "plan-select", "failed")
        wait_for(lambda: len(planner.api.main_requests()) >= 2, 30)
        results = " ".join(str(r.get("content")) for r in planner.api.tool_results()).lower()
        assert "approved" in results, results

        # the idle agent: polled by that one service, each poll one turn
        wait_for(lambda: idle.api.count_prompts(POLL_NEEDLE) >= 1, 60)
        started = time.monotonic()
        while time.monotonic() - started < WINDOW:
            assert not any(acting for _, acting in recorder.leases)  # the dashboard only watches
            time.sleep(1.0)
        assert {h.pid for h in holders()} == {service}  # one service held it all along
        keys = [e for e in recorder.sidecar if isinstance(e, TypingStep | PlanSelect) and e.result in ("typed", "pressed")]
        mine = [e for e in keys if not e.by]
        assert not mine, mine  # and the dashboard never typed or pressed a key into an agent
        assert keys and {e.by.rsplit(" ", 1)[-1] for e in keys} == {str(service)}, keys  # it heard the service's
        prompts = idle.api.prompts()  # one reading: a poll may land while we look
        typed = len(_of(log, idle.pane_id, "poll", "typed"))  # read after: one ahead, never behind
        polls = sum(POLL_NEEDLE in p for p in prompts)
        assert polls >= 2 and polls in (typed, typed - 1), (polls, typed, prompts)
        assert all(p.count("/nbs-poll</command-name>") == 1 for p in prompts if POLL_NEEDLE in p)
        nudges = [p for p in prompts if POLL_NEEDLE not in p]
        assert all(p == Settings().stuck_nudge for p in nudges), nudges
        assert "/nbs-poll/nbs-poll" not in idle.screen()
        # one sidecar's rate: the interval idle, the turn, then the backoff before counting again
        elapsed = time.monotonic() - served_since
        assert polls <= elapsed / (INTERVAL + BACKOFF) + 1, (polls, elapsed)
        print("polls:", polls, "typed:", typed, "plan answer:", pressed[0].get("label"))
    finally:
        if runtime is not None:
            runtime.stop()
        stopped = ssh_lab.ssh("hosta", f"{command} service stop")
        fleet.close()
    assert stopped.returncode in (0, EXIT_NOT_RUNNING), stopped.stderr  # not running: it never started
