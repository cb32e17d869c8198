"""`Runtime`: the real control plane, Claude signals and sidecar around a fleet fed by hand."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from nbs_tui.claude.watcher import ClaudeFacts
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.files.control_plane import ControlEvent
from nbs_tui.runtime.contract import RuntimeListener, RuntimeOptions, SidecarRole
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.sidecar.sidecar_runner import SidecarEvent
from nbs_tui.tmux.port import FleetListener, TmuxUnavailable
from tests.app.fakes import FakeFleet, pane_info


class Recorder(RuntimeListener):
    """A `RuntimeListener` that keeps what it was told."""

    def __init__(self) -> None:
        self.fleets: list[tuple[PaneInfo, ...]] = []
        self.connections: list[tuple[bool, str]] = []
        self.problems: list[tuple[str, str]] = []
        self.sidecar: list[SidecarEvent] = []
        self.control: list[ControlEvent] = []

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        self.fleets.append(tuple(panes))

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        pass

    def connection_changed(self, connected: bool, message: str) -> None:
        self.connections.append((connected, message))

    def claude_facts_changed(self, facts: Mapping[PaneId, ClaudeFacts]) -> None:
        pass

    def sidecar_event(self, event: SidecarEvent) -> None:
        self.sidecar.append(event)

    def control_event(self, event: ControlEvent) -> None:
        self.control.append(event)

    def problem(self, source: str, message: str) -> None:
        self.problems.append((source, message))


class SeedingFleet(FakeFleet):
    """A fake fleet whose first seed comes when the test says so."""

    def __init__(self, listener: FleetListener, panes: Sequence[PaneInfo] = ()) -> None:
        super().__init__(listener, panes)
        self.seeded = threading.Event()

    def wait_seeded(self, timeout: float) -> bool:
        return self.seeded.wait(timeout)


def settings(tmp_path: Path) -> Settings:
    return Settings(
        action_log=tmp_path / "state" / "actions.log",
        hook_spool=tmp_path / "state" / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
    )


def build(tmp_path: Path, panes: Sequence[PaneInfo] = (), **options: object) -> tuple[Runtime, Recorder, dict[str, SeedingFleet]]:
    holder: dict[str, SeedingFleet] = {}

    def factory(listener: FleetListener) -> SeedingFleet:
        holder["fleet"] = SeedingFleet(listener, panes)
        return holder["fleet"]

    recorder = Recorder()
    runtime = Runtime(settings(tmp_path), recorder, RuntimeOptions(fleet_factory=factory, **options))  # type: ignore[arg-type]
    return runtime, recorder, holder


def threads() -> set[str]:
    return {t.name for t in threading.enumerate()}


def wait_until(condition: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {condition}"
        time.sleep(0.02)


def test_starts_every_backend_then_the_sidecar_after_the_seed_and_stops_them_all(tmp_path: Path) -> None:
    runtime, recorder, holder = build(tmp_path, [pane_info("%1", 0)])
    runtime.start()
    try:
        fleet = holder["fleet"]
        assert fleet.started and runtime.role is SidecarRole.ACT
        assert {"nbs-control-plane", "nbs-claude-signals"} <= threads()
        assert "nbs-sidecar" not in threads(), "the sidecar waits for the first seed"
        fleet.seeded.set()
        assert runtime.wait_started(5.0)
        assert "nbs-sidecar" in threads()
        assert recorder.fleets and recorder.connections == [(True, "")]
    finally:
        runtime.stop()
    assert not fleet.started
    assert not {"nbs-control-plane", "nbs-claude-signals", "nbs-sidecar", "nbs-runtime-start"} & threads()
    runtime.stop()  # idempotent
    assert recorder.problems == []


def test_stop_while_waiting_for_the_seed_never_starts_the_sidecar(tmp_path: Path) -> None:
    runtime, _recorder, holder = build(tmp_path, [pane_info("%1", 0)], seed_timeout=30.0)
    runtime.start()
    started = time.monotonic()
    runtime.stop()
    assert time.monotonic() - started < 2.0, "stop does not wait out the seed timeout"
    holder["fleet"].seeded.set()
    assert runtime.sidecar is not None and "nbs-sidecar" not in threads()
    assert "nbs-runtime-start" not in threads()
    runtime.start()  # after stop, start does nothing
    assert "nbs-sidecar" not in threads() and not holder["fleet"].started


def test_backends_switched_off_are_not_built(tmp_path: Path) -> None:
    runtime, _recorder, holder = build(tmp_path, control_plane=False, claude=False, sidecar=False)
    runtime.start()
    try:
        assert holder["fleet"].started
        assert runtime.control_plane is None and runtime.claude is None and runtime.sidecar is None
        assert runtime.role is SidecarRole.OFF
    finally:
        runtime.stop()


def test_projects_come_from_live_panes_only(tmp_path: Path) -> None:
    live, dead = tmp_path / "live", tmp_path / "dead"
    for root in (live, dead):
        (root / ".nbs").mkdir(parents=True)
    panes = [
        replace(pane_info("%1", 0), current_path=str(live)),
        replace(pane_info("%2", 1), current_path=str(dead), dead=True),
    ]
    runtime, _recorder, holder = build(tmp_path, panes, claude=False, sidecar=False)
    runtime.start()
    try:
        plane = runtime.control_plane
        assert plane is not None
        wait_until(lambda: plane.flush(5.0) and plane.snapshot().project(live) is not None)
        assert plane.snapshot().project(dead) is None
        holder["fleet"].set_panes([replace(panes[1], dead=False)])
        wait_until(lambda: plane.flush(5.0) and plane.snapshot().project(dead) is not None)
    finally:
        runtime.stop()


def test_a_fleet_that_cannot_start_leaves_nothing_running(tmp_path: Path) -> None:
    class Broken(SeedingFleet):
        def start(self) -> None:
            raise TmuxUnavailable("no tmux here")

    def factory(listener: FleetListener) -> Broken:
        return Broken(listener)

    runtime = Runtime(settings(tmp_path), Recorder(), RuntimeOptions(fleet_factory=factory))
    with pytest.raises(TmuxUnavailable, match="no tmux here"):
        runtime.start()
    runtime.stop()
    assert not {"nbs-control-plane", "nbs-claude-signals", "nbs-sidecar", "nbs-runtime-start"} & threads()
