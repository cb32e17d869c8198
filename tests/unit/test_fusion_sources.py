"""The detail panel's Claude rows (`nbs_tui.dashboard.messages.fuse_claude`): every source's last value."""

from __future__ import annotations

import time

from nbs_tui.claude.watcher import ClaudeFacts
from nbs_tui.core.detection.fusion import Reading, Source
from nbs_tui.core.fleet.model import AgentState
from nbs_tui.core.sidecar.stuck_agents import Liveness
from nbs_tui.dashboard.messages import PaneStatus, fuse_claude


def test_each_source_last_value_and_the_process_are_listed() -> None:
    wall = 1_800_000_000.0
    hook = Reading(Source.HOOK, AgentState.IDLE, wall - 4, "Stop")
    status = Reading(Source.STATUS, AgentState.IDLE, wall - 3, "idle")
    raw = ClaudeFacts("%1", Liveness.EXITED, "Claude Code (pid 7) exited", hook=hook, status=status)
    screen = PaneStatus("%1", AgentState.IDLE, reason="empty prompt", idle_since=100.0)
    result = fuse_claude(raw, screen, None, 110.0, wall, None)
    assert result is not None
    _, facts, _ = result
    rows = dict(facts.extra)
    assert rows["process"] == "exited Claude Code (pid 7) exited"
    at = time.strftime("%H:%M:%S", time.localtime(wall - 4))
    assert rows["· hook"] == f"idle · Stop · {at}"
    assert rows["· status"].startswith("idle · idle · ")
    assert rows["· screen"].startswith("idle · empty prompt · ")
    assert "· transcript" not in rows
