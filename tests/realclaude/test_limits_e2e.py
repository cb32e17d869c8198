"""A usage limit from the real Claude Code CLI (subscription auth, a 429 with the unified rate-limit
headers from the scripted API), watched by the real SidecarRunner whose wall clock is moved past
the reset, with automatic resume on: the limited agent is shown ``limited`` with its reset, gets
no poll and no continue (the primary version continues by itself; a 2.1.1xx version shows its
menu), in the ticks after its hold was logged."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.config import Settings
from nbs_tui.core.model import AgentState, ServerAddress
from nbs_tui.sidecar_runner import SidecarEvent, SidecarRunner, config_from_settings
from nbs_tui.tmux.fleet import TmuxFleet
from tests.realclaude.harness import ClaudeFleet, usage_limit

pytestmark = [pytest.mark.realclaude]

AHEAD = 2 * 3600


@pytest.fixture
def fleet_watch(server: libtmux.Server) -> Iterator[TmuxFleet]:
    fleet = TmuxFleet(ServerAddress(socket_name=server.socket_name))
    fleet.start()
    try:
        yield fleet
    finally:
        fleet.stop()


def test_a_limited_agent_gets_no_poll_and_no_second_continue(
    claude_fleet: ClaudeFleet, fleet_watch: TmuxFleet, tmp_path: object
) -> None:
    reset = time.time() + AHEAD
    limited = claude_fleet.start(
        [usage_limit(reset, "five_hour", times=None)],
        oauth=True,
        extra_env={"CLAUDE_CODE_MAX_RETRIES": "0"},
    )
    limited.submit("hello")
    screen = limited.wait_for(
        lambda s: "limit" in s and ("What do you want to do?" in s or "automatically at" in s), 30
    )
    menu = "What do you want to do?" in screen

    assert fleet_watch.wait_seeded(15)
    events: list[SidecarEvent] = []
    settings = Settings(
        server=ServerAddress(socket_name=claude_fleet.server.socket_name),
        limit_resume=True,
        limit_resume_margin=1.0,
        action_log=claude_fleet.base / "actions.log",
    )
    began = time.time()
    runner = SidecarRunner(
        fleet_watch,
        settings,
        events.append,
        sidecar_config=replace(config_from_settings(settings), poll_interval=1.0),
        wall=lambda: reset + 60 + (time.time() - began),  # a minute past the reset
    )
    runner.start()
    try:
        def held() -> list[SidecarEvent]:
            return [e for e in events if e.pane_id == limited.pane_id and e.kind == "resume"]

        assert retry_until(lambda: bool(held()), 15, raises=False), events
        ticks = runner.ticks
        assert retry_until(lambda: runner.ticks >= ticks + 4, 15, raises=False)  # > a poll interval
        said = held()
        assert said and all(dict(e.data)["result"] == "held" for e in said), said
        why = "input box not free" if menu else "continues by itself"
        assert why in said[0].message
        status = runner.status(limited.pane_id)
        assert status is not None and status.state is AgentState.LIMITED
        limit = status.detection.limit
        assert limit is not None and limit.auto_resume is not menu
        assert status.limit_reset_at is not None and status.next_poll_in is None
        assert limited.api.prompts() == ["hello"], "nothing but the first prompt reached the API"
    finally:
        runner.stop()
