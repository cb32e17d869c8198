"""Usage limits on real tmux: panes showing limit screens recorded from the real CLI, the real
SidecarRunner, a wall clock moved past the reset. Polls are held; with ``limit_resume`` on, each
agent whose box is free is resumed once, staggered; a 2.1.1xx limit menu is first answered "Stop
and wait" (then that agent is resumed too); an agent whose Claude Code continues by itself gets no
key at all; every step is in the action log. Without the opt-in nothing is typed."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import AgentState, ServerAddress
from nbs_tui.sidecar.events import LimitStep, ResumeStep, SidecarEvent, TypingStep
from nbs_tui.sidecar.sidecar_runner import SidecarRunner, config_from_settings
from nbs_tui.tmux.fleet import TmuxFleet
from tests.tmux.replay_agent import corpus_screen, start_replay

MENU_VERSION = "2.1.197"
"""Shows 'What do you want to do?'; nothing resumes it after the reset."""
AUTO_VERSION = "2.1.332"
"""Continues by itself at the reset."""


def _reset_hour(screen: Path) -> tuple[int, int]:
    import re

    m = re.search(r"resets (\d+):(\d\d)(am|pm) \(UTC\)", screen.read_text())
    assert m, f"no reset time in {screen}"
    hour = int(m.group(1)) % 12 + (12 if m.group(3) == "pm" else 0)
    return hour, int(m.group(2))


E = TypeVar("E", bound=SidecarEvent)


class Events:
    def __init__(self) -> None:
        self.items: list[SidecarEvent] = []
        self.lock = threading.Lock()

    def __call__(self, event: SidecarEvent) -> None:
        with self.lock:
            self.items.append(event)

    def of(self, pane_id: str, kind: type[E], result: str | None = None) -> list[E]:
        """Events of class ``kind`` for ``pane_id`` (with this ``result``, if given)."""
        with self.lock:
            return [
                e for e in self.items
                if e.pane_id == pane_id and isinstance(e, kind) and (result is None or getattr(e, "result", None) == result)
            ]


StartRunner = Callable[[Settings, float], tuple[SidecarRunner, Events]]


@pytest.fixture
def runner_for(server: libtmux.Server, tmp_path: Path) -> Iterator[StartRunner]:
    started: list[tuple[TmuxFleet, SidecarRunner]] = []

    def start(settings: Settings, wall_at: float) -> tuple[SidecarRunner, Events]:
        fleet = TmuxFleet(ServerAddress(socket_name=server.socket_name))
        fleet.start()
        assert fleet.wait_seeded(10)
        events = Events()
        began = time.time()
        runner = SidecarRunner(
            fleet,
            settings,
            events,
            sidecar_config=replace(config_from_settings(settings), poll_interval=1.0),
            wall=lambda: wall_at + (time.time() - began),  # the reset has just passed
        )
        runner.start()
        started.append((fleet, runner))
        return runner, events

    yield start
    for fleet, runner in started:
        runner.stop()
        fleet.stop()


def _settings(tmp_path: Path, **changes: object) -> Settings:
    return replace(
        Settings(action_log=tmp_path / "actions.log", stuck_grace=1.0),
        **changes,  # type: ignore[arg-type]
    )


def _after_reset(screen: Path, seconds: float) -> float:
    hour, minute = _reset_hour(screen)
    today = datetime.now(UTC).replace(hour=hour, minute=minute, second=0, microsecond=0)
    return today.timestamp() + seconds


def test_limited_agents_resumed_once_staggered_and_never_where_the_cli_continues(
    server: libtmux.Server, tmp_path: Path, runner_for: StartRunner
) -> None:
    waiting = corpus_screen(MENU_VERSION, "limited_after_wait")
    a = start_replay(server, tmp_path, "a", waiting)
    b = start_replay(server, tmp_path, "b", corpus_screen("2.1.150", "limited_after_wait"))
    auto = start_replay(server, tmp_path, "auto", corpus_screen(AUTO_VERSION, "limited_session"))
    menu = start_replay(server, tmp_path, "menu", corpus_screen(MENU_VERSION, "limited_session"), after=waiting)
    settings = _settings(tmp_path, limit_resume=True, limit_resume_margin=1.0, limit_resume_stagger=3.0,
                         limit_resume_message="go on after the limit")
    runner, events = runner_for(settings, _after_reset(waiting, 5))

    def all_submitted() -> bool:
        return all(events.of(p.pane_id, ResumeStep, "submitted") for p in (a, b, menu))

    assert retry_until(all_submitted, 30, raises=False), events.items
    first, second, third = sorted(
        (events.of(p.pane_id, ResumeStep, "queued")[0].at, p.pane_id) for p in (a, b, menu)
    )
    assert second[0] - first[0] >= 2.5 and third[0] - second[0] >= 2.5, "resumes wait for the stagger"
    # the menu was answered by its "wait" option's digit, once, before its resume
    assert [line for line in menu.lines() if line.startswith("KEY ")] == ["KEY '1'"]
    [chosen] = events.of(menu.pane_id, ResumeStep, "wait-chosen")
    assert "Stop and wait for limit to reset" in chosen.message
    assert chosen.at < events.of(menu.pane_id, ResumeStep, "queued")[0].at
    assert menu.submitted()[0] == "go on after the limit"
    # the first thing ever submitted in each is the resume: no poll or nudge was typed while
    # limited (once resumed, the replayed agent finishes its turn and is an ordinary idle agent)
    assert a.submitted()[0] == "go on after the limit" and b.submitted()[0] == "go on after the limit"
    for pane in (a, b):
        resumed_at = events.of(pane.pane_id, ResumeStep, "queued")[0].at
        early = [e for e in events.of(pane.pane_id, TypingStep) if not isinstance(e, ResumeStep) and e.at <= resumed_at]
        assert early == []
    assert auto.raw() == [], f"{auto.pane_id} got keys: {auto.raw()}"
    assert "continues by itself" in events.of(auto.pane_id, ResumeStep, "held")[0].message
    ticks = runner.ticks
    assert retry_until(lambda: runner.ticks >= ticks + 3, 10, raises=False)
    assert [len(events.of(p.pane_id, ResumeStep, "queued")) for p in (a, b, menu)] == [1, 1, 1]
    records = [json.loads(line) for line in (tmp_path / "actions.log").read_text().splitlines()]
    steps = [(r["pane_id"], r["action"]) for r in records]
    for pane in (a, b, menu):
        for step in ("resume queued", "resume typed", "resume enter", "resume submitted"):
            assert (pane.pane_id, step) in steps, steps
    assert (menu.pane_id, "resume wait-chosen") in steps
    assert (auto.pane_id, "resume held") in steps
    assert runner.status(auto.pane_id) is not None
    status = runner.status(auto.pane_id)
    assert status is not None and status.state is AgentState.LIMITED


def test_without_the_opt_in_nothing_is_typed_and_the_hold_is_said_once(
    server: libtmux.Server, tmp_path: Path, runner_for: StartRunner
) -> None:
    waiting = corpus_screen(MENU_VERSION, "limited_after_wait")
    a = start_replay(server, tmp_path, "a", waiting)
    menu = start_replay(server, tmp_path, "menu", corpus_screen(MENU_VERSION, "limited_session"))
    runner, events = runner_for(_settings(tmp_path), _after_reset(waiting, 120))
    assert retry_until(lambda: bool(events.of(a.pane_id, ResumeStep, "held")), 10, raises=False)
    ticks = runner.ticks
    assert retry_until(lambda: runner.ticks >= ticks + 3, 10, raises=False)
    assert a.raw() == [] and menu.raw() == []
    assert len(events.of(a.pane_id, ResumeStep, "held")) == 1
    assert events.of(a.pane_id, LimitStep, "limited")
    status = runner.status(a.pane_id)
    assert status is not None and status.state is AgentState.LIMITED
    assert status.limit_reset_at is not None and status.limit_reset_at < status.at  # passed
    assert status.next_poll_in is None
