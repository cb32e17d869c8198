"""SidecarRunner with a fake fleet (no tmux): live re-checks, pane identity, overrides, routing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.core.sidecar.pane_sidecar import SidecarConfig
from nbs_tui.sidecar.events import CommandSeen, PaneLeft, PollStep
from nbs_tui.sidecar.sidecar_runner import TICK_PHASE, SidecarEvent, SidecarRunner, next_tick
from nbs_tui.tmux.commands import Guard
from nbs_tui.tmux.port import FleetPort, PaneGone

RULE = "─" * 60


def idle_rows(box: str = "") -> list[str]:
    return ["⏺ Done.", "", "✻ Worked for 2s", RULE, f"❯ {box}", RULE, "  ? for shortcuts"]


class FakeAgentFleet(FleetPort):
    """Panes whose screens the test sets; typing lands in the input box like Claude Code's."""

    def __init__(self) -> None:
        self.infos: dict[PaneId, PaneInfo] = {}
        self.rows: dict[PaneId, list[str]] = {}
        self.screens: dict[PaneId, PaneScreen] = {}
        self.sent: list[tuple[PaneId, str]] = []
        self.live_override: dict[PaneId, list[str]] = {}
        self.submitted: list[tuple[PaneId, str]] = []

    def add(self, pane_id: PaneId, rows: list[str], *, pid: int = 100, path: str = "/tmp") -> None:
        self.infos[pane_id] = PaneInfo(
            pane_id, "s", 0, "w", 0, "", "claude", path, pid, 60, 10, is_agent=True
        )
        self.set(pane_id, rows)

    def set(self, pane_id: PaneId, rows: list[str]) -> None:
        self.rows[pane_id] = rows
        screen = PaneScreen(60, 10)
        screen.feed(("\r\n".join(rows)).encode())
        self.screens[pane_id] = screen

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def panes(self) -> list[PaneInfo]:
        return list(self.infos.values())

    def screen(self, pane_id: PaneId) -> PaneScreen | None:
        return self.screens.get(pane_id)

    def capture_text(self, pane_id: PaneId) -> str:
        if pane_id not in self.infos:
            raise PaneGone(pane_id)
        return "\n".join(self.live_override.get(pane_id, self.rows[pane_id]))

    def send_text(self, pane_id: PaneId, text: str, *, guard: Guard | None = None) -> bool:
        assert guard is None, "no lease here: nothing to guard"
        self.sent.append((pane_id, text))
        box = next(r for r in self.rows[pane_id] if r.startswith("❯"))
        self.set(pane_id, idle_rows(box[2:] + text))
        return True

    def send_keys(self, pane_id: PaneId, *keys: str, guard: Guard | None = None) -> bool:
        assert guard is None, "no lease here: nothing to guard"
        self.sent.append((pane_id, "+".join(keys)))
        if keys == ("Enter",):
            box = next(r for r in self.rows[pane_id] if r.startswith("❯"))
            self.submitted.append((pane_id, box[2:]))
            self.set(
                pane_id,
                ["❯ " + box[2:], "", "✢ Sautéing… (1s)", RULE, "❯ ", RULE, "  esc to interrupt"],
            )
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(
    fleet: FakeAgentFleet, interval: float = 5.0, **kw: object
) -> tuple[SidecarRunner, list[SidecarEvent], Clock]:
    events: list[SidecarEvent] = []
    clock = Clock()
    settings = kw.pop("settings", None) or Settings(poll_interval=interval)
    runner = SidecarRunner(
        fleet,
        settings,  # type: ignore[arg-type]
        events.append,
        clock=clock,
        wall=clock,
        sidecar_config=SidecarConfig(poll_interval=interval, backoff=2.0),
        **kw,  # type: ignore[arg-type]
    )
    return runner, events, clock


def run(runner: SidecarRunner, clock: Clock, seconds: int) -> None:
    for _ in range(seconds):
        runner.tick()
        clock.now += 1


def test_a_just_watched_pane_is_not_read_before_its_seed() -> None:
    """A pane the operator just selected has a blank model until its seed lands: the runner
    keeps what it read before (here an idle agent) rather than take the blank for the pane."""

    class SeedingFleet(FakeAgentFleet):
        def __init__(self) -> None:
            super().__init__()
            self.unseeded: set[PaneId] = set()

        def first_seeded(self, pane_id: PaneId) -> bool:
            return pane_id not in self.unseeded

    fleet = SeedingFleet()
    fleet.add("%1", idle_rows())
    runner, _events, clock = make(fleet, interval=600.0)
    run(runner, clock, 2)
    status = runner.status("%1")
    assert status is not None and status.detection.state is AgentState.IDLE
    fleet.screens["%1"] = PaneScreen(60, 10)  # watched now: blank until seeded
    fleet.unseeded.add("%1")
    run(runner, clock, 3)
    status = runner.status("%1")
    assert status is not None
    assert status.detection.state is AgentState.IDLE, status.detection
    fleet.unseeded.clear()  # the seed landed (blank here: a cleared pane) and is read at once
    run(runner, clock, 1)
    status = runner.status("%1")
    assert status is not None and status.detection.state is not AgentState.IDLE


def test_poll_injected_whole_then_submitted_once() -> None:
    fleet = FakeAgentFleet()
    fleet.add("%1", idle_rows())
    runner, events, clock = make(fleet)
    run(runner, clock, 8)
    assert fleet.sent == [("%1", "/nbs-poll"), ("%1", "Enter")]
    assert fleet.submitted == [("%1", "/nbs-poll")]
    results = [e.result for e in events if isinstance(e, PollStep)]
    assert results[:3] == ["typed", "enter", "submitted"]


class PrefetchingFleet(FakeAgentFleet):
    """Records what the runner asks to read at each tick, which of it eagerly, and which of
    those panes showed a working screen then."""

    def __init__(self) -> None:
        super().__init__()
        self.prefetched: list[tuple[frozenset[PaneId], frozenset[PaneId], frozenset[PaneId]]] = []

    def prefetch(self, pane_ids: Sequence[PaneId], timeout: float = 5.0, *, eager: frozenset[PaneId] = frozenset()) -> int:
        working = frozenset(p for p in pane_ids if "esc to interrupt" in self.rows[p][-1])
        self.prefetched.append((frozenset(pane_ids), frozenset(eager), working))
        return 0


def test_panes_last_seen_still_and_panes_mid_handshake_are_read_eagerly_and_no_others() -> None:
    """The fleet reads a still-printing pane only every few seconds, unless it is eager: a pane
    last seen still (so that a turn starting there is seen at once) and a pane whose typed
    text is being confirmed (the confirm timeout is 3 s too) must be; one seen working need not."""
    fleet = PrefetchingFleet()
    fleet.add("%1", idle_rows())  # polled: idle, typed into, then working
    fleet.add("%2", ["❯ go", "", "✢ Sautéing… (1s)", RULE, "❯ ", RULE, "  esc to interrupt"])
    fleet.add("%3", idle_rows())  # idle throughout
    runner, _events, clock = make(fleet)
    runner.set_poll_enabled("%3", False)
    run(runner, clock, 9)
    assert fleet.submitted == [("%1", "/nbs-poll")]
    assert all(ids == {"%1", "%2", "%3"} for ids, _e, _w in fleet.prefetched)
    eager = [e for _ids, e, _w in fleet.prefetched]
    assert eager[0] == frozenset()  # nothing seen yet (a first read is at once anyway)
    assert all("%3" in e and "%2" not in e for e in eager[1:])
    assert any("%1" in e and "%1" in working for _ids, e, working in fleet.prefetched)  # mid-handshake
    assert eager[-1] == frozenset({"%3"})  # submitted and seen working: the ordinary policy


def test_ticks_run_tick_phase_past_the_wall_clock_second() -> None:
    """So that a no-output fleet (window activity to the second) sees a stopped pane quiet on
    the next tick; never sooner than half an interval after a tick began, never later than 1.5."""
    for wall in (100.0, 100.29, 100.3, 100.31, 100.8, 100.99):
        after = next_tick(50.0, wall, 1.0) - 50.0
        assert 0.5 <= after < 1.5
        assert abs((wall + after) % 1.0 - TICK_PHASE) < 1e-6
    assert next_tick(50.0, 100.3, 1.0) == 51.0


def test_live_recheck_refuses_when_operator_typed_meanwhile() -> None:
    fleet = FakeAgentFleet()
    fleet.add("%1", idle_rows())
    fleet.live_override["%1"] = idle_rows("someone typing")  # tmux shows more than the mirror
    runner, events, clock = make(fleet)
    run(runner, clock, 12)
    assert fleet.sent == []
    assert any(isinstance(e, PollStep) and e.result == "refused" for e in events)


def test_replaced_pane_gets_nothing_and_keeps_operator_switches() -> None:
    fleet = FakeAgentFleet()
    fleet.add("%1", idle_rows())
    runner, events, clock = make(fleet)
    run(runner, clock, 1)
    runner.set_poll_enabled("%1", False)
    fleet.infos["%1"] = replace(fleet.infos["%1"], pid=200)  # claude restarted in the same pane
    run(runner, clock, 20)
    assert fleet.sent == []
    status = runner.status("%1")
    assert status is not None and not status.poll_enabled
    assert any(isinstance(e, PaneLeft) for e in events)


def test_non_agent_panes_are_ignored() -> None:
    fleet = FakeAgentFleet()
    fleet.add("%1", idle_rows())
    fleet.infos["%1"] = replace(fleet.infos["%1"], is_agent=False)
    runner, _, clock = make(fleet)
    run(runner, clock, 20)
    assert fleet.sent == [] and runner.status("%1") is None


def test_override_before_first_sight_and_force_poll() -> None:
    fleet = FakeAgentFleet()
    runner, _, clock = make(fleet, interval=300.0)
    runner.set_poll_interval("%1", 2.0)  # set-poll-interval arrived before the pane was seen
    fleet.add("%1", idle_rows())
    run(runner, clock, 4)
    assert fleet.submitted == [("%1", "/nbs-poll")]
    fleet.set("%1", idle_rows())
    runner.set_poll_interval("%1", 300.0)
    run(runner, clock, 1)
    ok, _ = runner.force_poll("%1")
    assert ok
    run(runner, clock, 2)
    assert len(fleet.submitted) == 2
    assert runner.force_poll("%9") == (False, "not an agent pane the sidecar watches")


def test_paused_project(tmp_path: Path) -> None:
    (tmp_path / ".nbs").mkdir()
    (tmp_path / ".nbs" / "control-pause").write_text("")
    fleet = FakeAgentFleet()
    fleet.add("%1", idle_rows(), path=str(tmp_path))
    runner, _, clock = make(fleet, interval=2.0)
    run(runner, clock, 10)
    assert fleet.sent == []
    (tmp_path / ".nbs" / "control-pause").unlink()
    run(runner, clock, 4)
    assert fleet.submitted == [("%1", "/nbs-poll")]


class FakeControl:
    def __init__(self) -> None:
        self.applied: list[tuple[str, str, str]] = []

    def apply_scanned_command(
        self, pane_id: str, project_dir: str, line: str, handle: str | None = None
    ) -> None:
        self.applied.append((pane_id, project_dir, line))

    def poll_interval_for_pane(self, pane_id: str) -> float | None:
        return None


def test_scanned_commands_go_to_the_control_plane_with_the_pane_project() -> None:
    fleet = FakeAgentFleet()
    rows: Sequence[str] = [
        "⏺ Registering:",
        "  \\nbs-register-chat .nbs/chat/a.chat",
        *idle_rows()[3:],
    ]
    fleet.add("%1", list(rows), path="/work/proj")
    control = FakeControl()
    runner, events, clock = make(fleet, interval=300.0, control=control)
    run(runner, clock, 5)
    assert control.applied == [("%1", "/work/proj", "\\nbs-register-chat .nbs/chat/a.chat")]
    assert [e.line for e in events if isinstance(e, CommandSeen)] == [
        "\\nbs-register-chat .nbs/chat/a.chat"
    ]


def test_set_poll_interval_without_control_plane_applies_to_the_pane() -> None:
    fleet = FakeAgentFleet()
    fleet.add("%1", ["⏺ Faster please:", "  \\nbs-set-poll-interval 3", *idle_rows()[3:]])
    runner, _, clock = make(fleet, interval=300.0)
    run(runner, clock, 5)
    status = runner.status("%1")
    assert status is not None and status.poll_interval == 3.0
