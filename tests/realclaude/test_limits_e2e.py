"""A usage limit from the real Claude Code CLI (subscription auth, a 429 with the unified rate-limit
headers from the scripted API), watched by the real SidecarRunner whose wall clock is moved past
the reset, with automatic resume on. The primary version (2.1.332) continues by itself: the
agent is shown ``limited`` with its reset and gets no poll and no continue. A 2.1.1xx version
(``NBS_CLAUDE_VERSION=2.1.197``) shows its menu: "Stop and wait" is chosen, one continue is sent
after the reset, and when the limit comes back it is not sent again."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import AgentState, ServerAddress
from nbs_tui.sidecar.events import ResumeStep, SidecarEvent
from nbs_tui.sidecar.sidecar_runner import SidecarRunner, config_from_settings
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
        def steps(result: str | None = None) -> list[ResumeStep]:
            return [
                e for e in events
                if e.pane_id == limited.pane_id and isinstance(e, ResumeStep)
                and (result is None or e.result == result)
            ]  # fmt: skip

        if menu:  # 2.1.1xx: "Stop and wait" chosen, then one continue after the reset, once
            assert retry_until(lambda: bool(steps("submitted")), 30, raises=False), events
            done = [e.result for e in steps() if e.result != "held"]
            assert done[:2] == ["wait-chosen", "queued"], done
            # the scripted API still refuses: the limit is back, and is not resumed a second time
            assert retry_until(
                lambda: any("already resumed once" in e.message for e in steps("held")), 30, raises=False
            ), events
            # the refused turn left no answer, so the API sees both user texts in the second turn
            prompts = limited.api.prompts()
            assert len(prompts) == 2 and prompts[1].endswith("continue"), prompts
            return
        assert retry_until(lambda: bool(steps()), 15, raises=False), events
        ticks = runner.ticks
        assert retry_until(lambda: runner.ticks >= ticks + 4, 15, raises=False)  # > a poll interval
        said = steps()
        assert said and all(e.result == "held" for e in said), said
        assert "continues by itself" in said[0].message
        status = runner.status(limited.pane_id)
        assert status is not None and status.state is AgentState.LIMITED
        limit = status.detection.limit
        assert limit is not None and limit.auto_resume
        assert status.limit_reset_at is not None and status.next_poll_in is None
        assert limited.api.prompts() == ["hello"], "nothing but the first prompt reached the API"
    finally:
        runner.stop()
