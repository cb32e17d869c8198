"""The sidecar on a fleet that parses no agent's output (no agent pane watched): every scenario
of test_sidecar_runner.py again, each pane read through in-band captures, plus the proof that the
agents' output was never parsed and that a state is seen within a tick or two."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import libtmux
import pytest

from nbs_tui.config import Settings
from nbs_tui.core.sidecar.pane_sidecar import SidecarConfig
from nbs_tui.sidecar.events import StateChange
from nbs_tui.tmux.fleet import TmuxFleet
from tests.tmux.sidecar_helpers import RunningSidecar, sidecars
from tests.tmux.test_sidecar_runner import (  # noqa: F401  (fixtures and tests, run again here)
    Agent,
    _wait,
    fake_claude,
    spawn,
    test_nbs_command_on_screen_reported_once,
    test_paused_project_gets_nothing,
    test_plan_menu_answered_once_with_the_right_option,
    test_poll_reaches_idle_agent_once_per_interval_and_never_others,
)


@pytest.fixture(params=["output-streamed", "dashboard", "no-output"])
def run_sidecar(
    server: libtmux.Server, session: libtmux.Session, request: pytest.FixtureRequest
) -> Iterator[Callable[..., RunningSidecar]]:
    """A fleet that watches no agent, looking at the session's first pane (a shell): one whose
    sessions' own clients stream all output (as over ssh), so the agents' output marks them;
    the dashboard's, whose viewer carries the shell's output only (the agents are paused on
    it and read from window activity); or the fleet of headless and the service
    (``stream_output=False``: no output at all)."""
    streamed = request.param != "no-output"
    follows = request.param == "dashboard"
    with sidecars(server, watch_all=False, stream_output=streamed, output_follows_watch=follows) as start_runner:

        def start(interval: float = 2.0, backoff: float = 3.0, **settings: object) -> RunningSidecar:
            config = SidecarConfig(poll_interval=interval, backoff=backoff, **settings)  # type: ignore[arg-type]
            running = start_runner(Settings(poll_interval=interval), config)
            fleet = running.runner.fleet
            assert isinstance(fleet, TmuxFleet)
            if streamed:
                shell = str(session.windows[0].active_pane.pane_id)  # type: ignore[union-attr]
                fleet.set_watched("test", [shell])
                assert _wait(lambda: fleet.seeded(shell), 10)
                assert fleet.viewed_sessions() == ({session.session_id} if follows else set())
            return running

        yield start


def test_busy_unwatched_agent_is_detected_without_parsing_its_output(
    spawn: Callable[[str, str], Agent], run_sidecar: Callable[..., RunningSidecar]  # noqa: F811
) -> None:
    working = spawn("working", "working")  # a spinner redrawn five times a second
    plan = spawn("plan", "plan")
    started = time.time()
    running = run_sidecar(interval=300.0)
    fleet = running.runner.fleet
    assert isinstance(fleet, TmuxFleet)
    assert _wait(lambda: bool(running.of(working.pane_id, StateChange)), 5)
    assert running.of(working.pane_id, StateChange)[0].detection.state.value == "working"
    # read at the first tick: well within two ticks of the runner's start
    assert running.of(working.pane_id, StateChange)[0].at - started < 2.5
    assert _wait(lambda: plan.lines("CHOICE") == ["1"], 15), plan.log.read_text()
    if fleet.stream_output and not fleet.output_follows_watch:  # output arrives and is counted, never parsed
        assert _wait(lambda: fleet.fed(working.pane_id)[1] > 10, 5)
    elif fleet.stream_output:  # the dashboard's: what printed before the viewer paused it, then nothing
        before = fleet.fed(working.pane_id)[1]
        time.sleep(1.0)  # five spinner frames
        assert fleet.fed(working.pane_id)[1] == before <= 2
    else:  # no output arrives at all
        assert fleet.fed(working.pane_id)[1] == 0
    assert fleet.fed(working.pane_id)[0] == 0 and fleet.fed(plan.pane_id)[0] == 0
    assert fleet.stats()["models"] == (1 if fleet.stream_output else 0)  # the shell's only
    # one capture per changed pane per tick at most: the spinner pane is read about once a second
    taken, ticks = fleet.stats()["captures"], running.runner.ticks
    assert _wait(lambda: running.runner.ticks >= ticks + 3, 10)
    assert fleet.stats()["captures"] - taken <= 2 * (running.runner.ticks - ticks + 1)


def test_a_turn_shorter_than_the_max_age_is_seen_working_right_after_a_read(
    spawn: Callable[[str, str], Agent], run_sidecar: Callable[..., RunningSidecar], server: libtmux.Server  # noqa: F811
) -> None:
    """A printing pane is read only every `CAPTURE_MAX_AGE` seconds, but a pane last seen still
    is read on the tick it changes: a two-second turn started just after the read that showed
    the idle prompt (that read resets the max age) is seen working, so its end is a "finished"."""
    agent = spawn("quick", "idle-2s")
    running = run_sidecar(interval=300.0)

    def states() -> list[str]:
        return [e.detection.state.value for e in running.of(agent.pane_id, StateChange)]

    assert _wait(lambda: states() == ["idle"], 10), states()
    def seen(count: int) -> Callable[[], bool]:
        return lambda: len(states()) == count

    for turn in (1, 2):
        # at once after the read that showed it idle (the state event is sent on that tick)
        server.cmd("send-keys", "-t", agent.pane_id, f"turn {turn}", "Enter")
        assert _wait(seen(1 + 2 * turn), 10), states()
        assert states()[-2:] == ["working", "idle"]
        assert agent.lines("SUBMIT") == [f"turn {n}" for n in range(1, turn + 1)]
