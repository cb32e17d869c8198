"""The UI's reads and switches never wait on a tick stuck in a slow tmux call: the runner's own
thread blocks in ``capture_text`` (on an Event) while the test calls what the UI calls."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from libtmux.test.retry import retry_until

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.sidecar.pane_sidecar import SidecarConfig
from nbs_tui.sidecar.events import SidecarEvent, StatusChange
from nbs_tui.sidecar.sidecar_runner import SidecarRunner
from tests.unit.test_sidecar_runner import FakeAgentFleet, idle_rows

T = TypeVar("T")

PROMPT = 0.5
"""What "at once" means here: far below the blocked call, far above a loaded machine's hiccup."""


class SlowTmuxFleet(FakeAgentFleet):
    """``capture-pane`` (the live re-check before typing) hangs until the test lets it go."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def capture_text(self, pane_id: PaneId) -> str:
        self.entered.set()
        self.release.wait(30)
        return super().capture_text(pane_id)


def timed(call: Callable[[], T]) -> tuple[T, float]:
    began = time.monotonic()
    result = call()
    return result, time.monotonic() - began


@pytest.fixture
def blocked() -> Iterator[tuple[SlowTmuxFleet, SidecarRunner, list[SidecarEvent]]]:
    fleet = SlowTmuxFleet()
    fleet.add("%1", idle_rows())
    fleet.add("%2", idle_rows())
    events: list[SidecarEvent] = []
    runner = SidecarRunner(
        fleet,
        Settings(poll_interval=0.2),
        events.append,
        interval=0.05,
        sidecar_config=SidecarConfig(poll_interval=0.2),
    )
    runner.start()
    try:
        # the poll is due after 0.2 s idle: the tick re-reads the live screen and hangs there
        assert fleet.entered.wait(10), "the runner never reached its capture-pane"
        yield fleet, runner, events
    finally:
        fleet.release.set()
        runner.stop()


def test_reads_and_switches_return_at_once_while_a_tick_waits_on_tmux(
    blocked: tuple[SlowTmuxFleet, SidecarRunner, list[SidecarEvent]],
) -> None:
    fleet, runner, events = blocked
    ticks = runner.ticks
    statuses, took = timed(runner.statuses)
    assert took < PROMPT and set(statuses) == {"%1", "%2"}
    assert timed(lambda: runner.status("%2"))[1] < PROMPT
    assert timed(runner.escalated)[1] < PROMPT
    assert timed(lambda: runner.stuck("%1"))[1] < PROMPT
    assert timed(lambda: runner.set_poll_enabled("%2", False))[1] < PROMPT
    assert timed(lambda: runner.set_plan_auto("%2", False))[1] < PROMPT
    assert timed(lambda: runner.note_operator_input("%2"))[1] < PROMPT
    assert timed(lambda: runner.set_global(poll_enabled=True))[1] < PROMPT
    assert runner.ticks == ticks and not fleet.release.is_set(), "the tick was blocked throughout"
    # the switches wait for the tick, then all apply, in order
    status = runner.status("%2")
    assert status is not None and status.poll_enabled and status.plan_policy == "no-prompts"
    fleet.release.set()

    def applied() -> bool:
        s = runner.status("%2")
        return s is not None and not s.poll_enabled and s.plan_policy == "off"

    assert retry_until(applied, seconds=10, raises=False)
    said = [e.message for e in events if isinstance(e, StatusChange) and e.pane_id == "%2" and e.message]
    assert said[:2] == ["poll injection off", "plan auto-select off"]


def test_force_poll_waits_boundedly_and_is_answered_by_the_tick(
    blocked: tuple[SlowTmuxFleet, SidecarRunner, list[SidecarEvent]],
) -> None:
    fleet, runner, _ = blocked
    (ok, why), took = timed(lambda: runner.force_poll("%2", timeout=0.3))
    assert not ok and "busy" in why and 0.3 <= took < 0.3 + PROMPT
    answer: list[tuple[bool, str]] = []
    asker = threading.Thread(target=lambda: answer.append(runner.force_poll("%9", timeout=20)))
    asker.start()
    fleet.release.set()  # the tick ends and carries out the waiting request
    asker.join(20)
    assert answer == [(False, "not an agent pane the sidecar watches")]


def test_switches_apply_at_once_when_no_tick_is_running() -> None:
    fleet = FakeAgentFleet()
    fleet.add("%1", idle_rows())
    events: list[SidecarEvent] = []
    runner = SidecarRunner(fleet, Settings(), events.append)
    runner.tick()
    status = runner.status("%1")
    assert status is not None and status.poll_enabled
    runner.set_poll_enabled("%1", False)
    status = runner.status("%1")
    assert status is not None and not status.poll_enabled, "published without waiting for a tick"
    assert [e.message for e in events if isinstance(e, StatusChange)][-1] == "poll injection off"
