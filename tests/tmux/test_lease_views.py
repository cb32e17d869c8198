"""A viewer's sidecar controls reach the holder through tmux: a forced poll is typed by the
holder and answered back, a per-pane switch and the pause change what the holder does, and every
view shows the same switch."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.config import Settings
from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.pane_sidecar import SidecarConfig, SidecarStatus
from nbs_tui.sidecar.events import PlanSelect, PollStep
from nbs_tui.sidecar.heartbeat import LeaseHeartbeat
from nbs_tui.sidecar.pane_options import SidecarSwitches
from nbs_tui.sidecar.sidecar_lease import SidecarLease
from nbs_tui.sidecar.sidecar_runner import SidecarEvent, SidecarRunner
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.fleet import TmuxFleet
from tests.tmux.test_lease_headless import agent, submits


class View:
    """What --headless or a dashboard runs: a fleet, a runner and a lease (in this process)."""

    def __init__(self, server: libtmux.Server, interval: float) -> None:
        address = ServerAddress(socket_name=server.socket_name)
        self.fleet = TmuxFleet(address)
        self.commands = TmuxServerCommands.for_server(address)
        self.lease = SidecarLease(self.commands, LeaseHeartbeat(self.commands, ttl=2.0))
        self.events: list[SidecarEvent] = []
        self.lock = threading.Lock()
        self.runner = SidecarRunner(
            self.fleet, Settings(server=address, poll_interval=interval), self.on_event,
            sidecar_config=SidecarConfig(poll_interval=interval, backoff=3.0), lease=self.lease,
        )

    def on_event(self, event: SidecarEvent) -> None:
        with self.lock:
            self.events.append(event)

    def start(self) -> None:
        self.fleet.start()
        assert self.fleet.wait_seeded(15)
        self.lease.start()
        self.runner.start()

    def stop(self) -> None:
        self.runner.stop()
        self.lease.stop()
        self.fleet.stop()


@pytest.fixture
def two_views(server: libtmux.Server) -> Iterator[tuple[View, View]]:
    holder = View(server, 600.0)
    holder.start()
    assert retry_until(holder.lease.acting, 10, raises=False)
    viewer = View(server, 600.0)
    viewer.start()
    try:
        yield holder, viewer
    finally:
        viewer.stop()
        holder.stop()


def test_a_viewers_forced_poll_is_typed_by_the_holder(
    session: libtmux.Session, two_views: tuple[View, View], tmp_path: Path
) -> None:
    holder, viewer = two_views
    pane_id, log = agent(session, tmp_path, "idle")
    assert retry_until(lambda: viewer.runner.status(pane_id) is not None, 10, raises=False)
    assert retry_until(lambda: holder.runner.status(pane_id) is not None, 10, raises=False)
    assert not viewer.lease.acting()
    ok, why = viewer.runner.force_poll(pane_id)
    assert ok, why
    assert retry_until(lambda: submits(log) == ["SUBMIT /nbs-poll"], 20, raises=False), log.read_text()

    def typed() -> list[SidecarEvent]:
        with viewer.lock:
            return [e for e in viewer.events if isinstance(e, PollStep) and e.result == "typed"]

    # the viewer typed nothing; it hears the holder's typing, relayed through tmux (``by``)
    assert retry_until(lambda: bool(typed()), 5, raises=False)
    assert all(e.by == holder.lease.by for e in typed()), typed()


def test_a_viewers_switch_and_pause_reach_the_holder_and_every_view(
    session: libtmux.Session, two_views: tuple[View, View], tmp_path: Path
) -> None:
    holder, viewer = two_views
    pane_id, log = agent(session, tmp_path, "idle")
    assert retry_until(lambda: holder.runner.status(pane_id) is not None, 10, raises=False)
    viewer.runner.set_poll_enabled(pane_id, False)

    def holder_sees_off() -> bool:
        status = holder.runner.status(pane_id)
        return status is not None and status.poll_enabled is False

    assert retry_until(holder_sees_off, 10, raises=False)
    # every view shows it: the viewer's own sidecar reads the same option
    assert retry_until(lambda: viewer.runner.status(pane_id).poll_enabled is False, 5, raises=False)  # type: ignore[union-attr]

    # The holder's own interval for this idle pane goes down to 1 s: from here on each of its
    # ticks would type a poll, but for the switch (and then the pause).
    holder.runner.set_poll_interval(pane_id, 1.0)
    due_and_off = ticks_with(holder, pane_id, lambda s: s.poll_interval == 1.0 and s.idle_seconds >= 1.0 and not s.poll_enabled)
    assert typed_polls(holder) == [] and submits(log) == [], (due_and_off, log.read_text())

    viewer.lease.set_paused(True)
    assert retry_until(lambda: holder.runner.status(pane_id).paused, 10, raises=False)  # type: ignore[union-attr]
    viewer.runner.set_poll_enabled(pane_id, None)
    assert retry_until(lambda: holder.runner.status(pane_id).poll_enabled is True, 10, raises=False)  # type: ignore[union-attr]
    due_and_paused = ticks_with(holder, pane_id, lambda s: s.idle_seconds >= 1.0 and s.poll_enabled and s.paused)
    assert typed_polls(holder) == [] and submits(log) == [], (due_and_paused, log.read_text())
    ok, why = viewer.runner.force_poll(pane_id)
    assert not ok and "pause" in why
    viewer.lease.set_paused(False)
    assert retry_until(lambda: not holder.runner.status(pane_id).paused, 10, raises=False)  # type: ignore[union-attr]
    # Nothing holds it back now: the poll comes (so neither check above passed for want of one).
    assert retry_until(lambda: submits(log) == ["SUBMIT /nbs-poll"], 20, raises=False), log.read_text()


def typed_polls(view: View) -> list[SidecarEvent]:
    with view.lock:
        return [e for e in view.events if isinstance(e, PollStep) and e.result == "typed"]


def ticks_with(
    view: View, pane_id: str, condition: Callable[[SidecarStatus], bool], span: float = 2.5
) -> SidecarStatus:
    """Wait until the view's sidecar has ticked for ``span`` seconds (its own clock) with
    ``condition`` true of the pane's status all along; returns the last status."""
    since: list[float] = []

    def held() -> bool:
        status = view.runner.status(pane_id)
        if status is None or not condition(status):
            since.clear()
            return False
        if not since:
            since.append(status.at)
        return status.at - since[0] >= span

    assert retry_until(held, 20, raises=False), view.runner.status(pane_id)
    status = view.runner.status(pane_id)
    assert status is not None
    return status


def test_only_the_holder_answers_a_plan_menu_once(
    session: libtmux.Session, two_views: tuple[View, View], tmp_path: Path
) -> None:
    holder, viewer = two_views
    _, log = agent(session, tmp_path, "plan", mode="plan")

    def choices() -> list[str]:
        return [line for line in log.read_text().splitlines() if line.startswith("CHOICE")]

    assert retry_until(lambda: choices() == ["CHOICE 1"], 20, raises=False), log.read_text()

    def pressed(view: View) -> int:
        with view.lock:
            return sum(
                1 for e in view.events
                if isinstance(e, PlanSelect) and e.result == "pressed" and not e.by
            )

    def heard(view: View) -> int:
        with view.lock:
            return sum(1 for e in view.events if isinstance(e, PlanSelect) and e.by == holder.lease.by)

    assert retry_until(lambda: pressed(holder) == 1, 5, raises=False)
    assert pressed(viewer) == 0 and choices() == ["CHOICE 1"]
    assert retry_until(lambda: heard(viewer) >= 1, 5, raises=False)  # relayed through tmux
    assert heard(holder) == 0


def test_a_clean_stop_withdraws_its_own_unsubmitted_poll(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    pane_id, log = agent(session, tmp_path, "idle")
    holder = View(server, 600.0)
    holder.start()
    try:
        assert retry_until(holder.lease.acting, 10, raises=False)
        assert retry_until(lambda: holder.runner.status(pane_id) is not None, 10, raises=False)
        # the holder has typed its poll (marked) and stops before pressing Enter
        assert holder.commands.type_text(pane_id, "/nbs-poll", guard=holder.lease.guard(pane_id, "/nbs-poll"))

        def box() -> str | None:
            text = "\n".join(server.cmd("capture-pane", "-p", "-t", pane_id).stdout)
            return detect_text(text).input_text

        assert retry_until(lambda: box() == "/nbs-poll", 5, raises=False)
    finally:
        holder.stop()
    assert retry_until(lambda: box() == "", 5, raises=False), box()
    _, panes = SidecarSwitches(TmuxServerCommands.for_server(ServerAddress(socket_name=server.socket_name))).read()
    assert panes[pane_id].inflight is None
    assert submits(log) == []
