"""Hooks, session-status files and transcripts on the real Claude Code CLI.

Each agent gets nbs-tui's hooks in its ``~/.claude/settings.json`` (installed by the real
``nbs-tui hooks install`` into a file the test then hands the harness), and a ClaudeSignals
service watches the spool, the agents' status files (found through /proc and each process's
own HOME) and their transcripts. The screen side is the product's own detector.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import libtmux
import pytest

from nbs_tui.claude.hooks import HOOK_EVENTS, install
from nbs_tui.claude.monitor import AgentMonitor
from nbs_tui.claude.watcher import ClaudeFacts, ClaudeSignals
from nbs_tui.cli import main as cli_main
from nbs_tui.config import Settings
from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.detection.fusion import (
    MENU_STATES,
    FusedState,
    Reading,
    Source,
    fuse,
    screen_reading,
)
from nbs_tui.core.fleet.model import AgentState, PaneInfo, ServerAddress
from nbs_tui.core.sidecar.stuck_agents import Ended, Escalate, Liveness, Nudge, StuckWatch
from tests.realclaude.harness import Ask, Bash, ClaudeAgent, ClaudeFleet, Error, Plan, Slow, Text

S = AgentState
T = TypeVar("T")


def until(check: Callable[[], T | None], timeout: float = 20.0, what: str = "") -> T:
    """Poll ``check`` until it returns something truthy (bounded); fail with ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:.0f}s for {what or check}")
        time.sleep(0.05)


def facts_when(
    rig: Rig, agent: ClaudeAgent, ok: Callable[[ClaudeFacts], object], timeout: float = 20.0, what: str = ""
) -> ClaudeFacts:
    """Wait (bounded) until the agent's facts satisfy ``ok``; return them."""

    def check() -> ClaudeFacts | None:
        facts = rig.facts(agent)
        return facts if facts is not None and ok(facts) else None

    return until(check, timeout, what)


def fleet_panes(server: libtmux.Server) -> list[PaneInfo]:
    fmt = "#{pane_id}\t#{session_name}\t#{window_index}\t#{pane_index}\t#{pane_pid}\t#{pane_dead}\t#{pane_current_command}"
    panes = []
    for line in server.cmd("list-panes", "-a", "-F", fmt).stdout:
        pane_id, session, window, index, pid, dead, command = line.split("\t")
        panes.append(
            PaneInfo(pane_id, session, int(window), "", int(index), "", command, "", int(pid), 120, 40, dead=dead == "1")
        )
    return panes


@dataclass
class Recorder:
    """The ClaudeSignals listener: every change, with when it arrived."""

    changes: list[tuple[float, ClaudeFacts]] = field(default_factory=list)

    def claude_facts_changed(self, facts: Any) -> None:
        now = time.time()
        self.changes.extend((now, f) for f in facts.values())


@dataclass
class Rig:
    server: libtmux.Server
    fleet: ClaudeFleet
    spool: Path
    hook_settings: dict[str, Any]
    signals: ClaudeSignals
    recorder: Recorder

    def refresh(self) -> None:
        self.signals.set_panes(fleet_panes(self.server))

    def start(self, scenario: Any = (), **options: Any) -> ClaudeAgent:
        agent = self.fleet.start(scenario, settings=self.hook_settings, **options)
        self.refresh()
        return agent

    def facts(self, agent: ClaudeAgent) -> ClaudeFacts | None:
        return self.signals.facts(agent.pane_id)


@pytest.fixture
def rig(server: libtmux.Server, claude_fleet: ClaudeFleet, tmp_path: Path) -> Iterator[Rig]:
    spool = tmp_path / "nbs-state" / "hooks.jsonl"
    settings_file = tmp_path / "hook-settings.json"
    install(settings_file, spool)
    hook_settings = json.loads(settings_file.read_text())
    settings = Settings(
        server=ServerAddress(socket_name=server.socket_name),
        hook_spool=spool,
        claude_home=tmp_path / "no-claude-home",  # each agent's own HOME is found through /proc
    )
    recorder = Recorder()
    signals = ClaudeSignals(settings, recorder)
    signals.start()
    try:
        yield Rig(server, claude_fleet, spool, hook_settings, signals, recorder)
    finally:
        signals.stop()


def screen_state(agent: ClaudeAgent) -> S:
    return detect_text(agent.screen(escapes=True)).state


def coarse(state: S) -> str:
    return "menu" if state in MENU_STATES else state.value


# -- hook events reach nbs-tui with the right pane ---------------------------------------------


def test_hook_events_reach_the_right_pane(rig: Rig, record_property: Callable[[str, object], None]) -> None:
    one, two = rig.fleet.start_many(["Reply one."], ["Reply two."], settings=rig.hook_settings)
    rig.refresh()
    for agent in (one, two):
        facts = facts_when(rig, agent, lambda f: f.session_id and f.last_hook_event, what="SessionStart")
        assert facts.liveness == Liveness.RUNNING and facts.model and facts.project == str(agent.workdir)
        assert facts.version == agent.version
    sessions = {rig.facts(one).session_id, rig.facts(two).session_id}  # type: ignore[union-attr]
    assert len(sessions) == 2

    one.submit("first prompt")
    until(lambda: (f := rig.facts(one)) and f.last_hook_event == "Stop" and f.last_assistant_message == "Reply one.", what="Stop on one")
    two.submit("second prompt")
    until(lambda: (f := rig.facts(two)) and f.last_hook_event == "Stop" and f.last_assistant_message == "Reply two.", what="Stop on two")

    # The hooks add nothing to what the model sees (hook stdout can reach its context).
    for agent in (one, two):
        assert all("nbs_pane" not in r.all_text() and "nbs-tui-hook" not in r.all_text() for r in agent.api.main_requests())

    # Every hook event in the spool names the pane it came from, and was routed to it.
    lines = [json.loads(line) for line in rig.spool.read_bytes().splitlines()]
    by_session = {rig.facts(a).session_id: a.pane_id for a in (one, two)}  # type: ignore[union-attr]
    seen = {(line["nbs_pane"], line["payload"]["hook_event_name"]) for line in lines}
    for agent in (one, two):
        assert {(agent.pane_id, e) for e in ("SessionStart", "UserPromptSubmit", "Stop")} <= seen
    for line in lines:
        assert by_session[line["payload"]["session_id"]] == line["nbs_pane"]
        assert line["nbs_tmux"] and line["nbs_tmux"].endswith(rig.server.socket_name or "")
    # The facts reached by each pane came only from its own session.
    for _, facts in rig.recorder.changes:
        if facts.session_id:
            assert by_session[facts.session_id] == facts.pane_id

    # How long from the hook's own clock to the listener (reported, not asserted).
    # Only the first change that carries a given hook event counts.
    first_seen: dict[tuple[str, float], float] = {}
    for when, facts in rig.recorder.changes:
        if facts.last_hook_at is not None and facts.last_hook_event in ("UserPromptSubmit", "Stop"):
            first_seen.setdefault((facts.pane_id, facts.last_hook_at), when - facts.last_hook_at)
    delays = sorted(first_seen.values())
    assert delays
    record_property("hook_to_listener_max_s", round(delays[-1], 3))
    print(f"\nhook -> listener delay: n={len(delays)} median={delays[len(delays) // 2]:.3f}s max={delays[-1]:.3f}s")


# -- states from hooks and status files agree with the screen ----------------------------------


def agree(rig: Rig, agent: ClaudeAgent, expected: S, hook_states: set[S] | None = None, timeout: float = 30.0) -> FusedState:
    """Wait until the screen, the hook, the status file and the fused state all say ``expected``."""
    last: dict[str, Any] = {"text": None, "changed_at": time.time()}

    def check() -> FusedState | None:
        text = agent.screen(escapes=True)
        if text != last["text"]:  # date the screen by its last change, as the runner does
            last.update(text=text, changed_at=time.time())
        screen = detect_text(text).state
        facts = rig.facts(agent)
        last.update(screen=screen, facts=facts)
        if facts is None or facts.hook is None or facts.status is None:
            return None
        wanted_hook = hook_states or {expected}
        if screen != expected or facts.hook.state not in wanted_hook or coarse(facts.status.state) != coarse(expected):
            return None
        fused = fuse([Reading(Source.SCREEN, screen, last["changed_at"]), *facts.readings], time.time())
        last.update(fused=fused)
        return fused if fused.state == expected else None

    try:
        return until(check, timeout, what=f"every source to say {expected.value}")
    except AssertionError:
        facts = last.get("facts")
        detail = (
            f"screen={last.get('screen')} hook={facts.hook if facts else None} status={facts.status if facts else None} "
            f"fused={last.get('fused')}"
        )
        raise AssertionError(f"sources never agreed on {expected.value}: {detail}\n{agent.screen()}") from None


def test_idle_working_permission_agree(rig: Rig) -> None:
    agent = rig.start([Slow(60), Bash("rm -rf build", description="Remove the build folder"), Text("Removed.")])
    agree(rig, agent, S.IDLE)  # SessionStart, status idle, idle prompt

    agent.submit("think slowly")
    agree(rig, agent, S.WORKING)  # UserPromptSubmit, busy, spinner
    agent.wait_for("tokens")  # the slow reply is streaming: releasing it now ends it
    agent.api.release()
    fused = agree(rig, agent, S.IDLE)  # Stop, idle
    assert fused.reading(Source.HOOK).detail == "Stop"  # type: ignore[union-attr]

    agent.submit("remove the build folder")
    fused = agree(rig, agent, S.PERMISSION)  # PermissionRequest Bash, waiting: permission prompt
    assert "Bash" in fused.reading(Source.HOOK).detail  # type: ignore[union-attr]
    assert "permission" in fused.reading(Source.STATUS).detail  # type: ignore[union-attr]
    agent.press_until("Enter", lambda s: "Do you want to proceed?" not in s)
    agree(rig, agent, S.IDLE)
    facts = rig.facts(agent)
    assert facts is not None and facts.last_assistant_message == "Removed."
    # The transcript is read on its own schedule: seen here up to 0.2 s after the Stop hook.
    until(
        lambda: (f := rig.facts(agent)) is not None and f.transcript is not None and f.transcript.state == S.IDLE,
        10,
        what="the transcript to say idle",
    )


def test_escape_fires_no_hook_but_the_status_file_and_screen_say_idle(rig: Rig) -> None:
    agent = rig.start([Slow(60)])
    agent.submit("think slowly")
    agree(rig, agent, S.WORKING)
    agent.press("Escape")
    agree(rig, agent, S.IDLE, hook_states={S.WORKING})  # the hook still says working: no hook for Esc
    facts = rig.facts(agent)
    assert facts is not None and facts.last_hook_event == "UserPromptSubmit"


def test_plan_approval_agrees(rig: Rig) -> None:
    agent = rig.start([Plan(), Text("Implementing now.")], permission_mode="plan")
    agent.wait_for("plan mode on")
    agent.submit("plan the change")
    fused = agree(rig, agent, S.PLAN)  # PermissionRequest ExitPlanMode; status "waiting" (a menu)
    hook = fused.reading(Source.HOOK)
    assert hook is not None and "ExitPlanMode" in hook.detail
    assert fused.reading(Source.STATUS).state == S.PERMISSION  # type: ignore[union-attr]
    event = next(
        json.loads(line)["payload"]
        for line in rig.spool.read_bytes().splitlines()
        if b'"PermissionRequest"' in line and b"ExitPlanMode" in line
    )
    assert event["tool_name"] == "ExitPlanMode"


def test_question_agrees(rig: Rig) -> None:
    agent = rig.start([Ask("Which colour?", ["Red", "Blue"]), Text("Blue it is.")])
    agent.submit("ask me")
    agent.wait_for("Enter to select")
    facts = facts_when(rig, agent, lambda f: f.hook and f.hook.state == S.QUESTION, what="question hook")
    assert screen_state(agent) == S.QUESTION
    fused = fuse([screen_reading(detect_text(agent.screen(escapes=True)), time.time()), *facts.readings], time.time())
    assert fused.state == S.QUESTION
    agent.press("Down", "Enter")
    agree(rig, agent, S.IDLE)


def test_api_error_is_reported_from_the_transcript(rig: Rig) -> None:
    agent = rig.start([Error(401, times=None)], extra_env={"CLAUDE_CODE_MAX_RETRIES": "0"})
    agent.submit("hello")
    facts = facts_when(rig, agent, lambda f: f.api_error, timeout=45, what="an API error in the transcript")
    assert facts.api_error is not None and facts.api_error.kind == "unauthorized"
    screen = detect_text(agent.screen(escapes=True))
    fused = fuse([screen_reading(screen, time.time()), *facts.readings], time.time())
    assert fused.state == S.ERROR and fused.source == Source.TRANSCRIPT, fused


# -- stuck agents, exits ----------------------------------------------------------------------


def test_stuck_agent_is_nudged_then_escalated(rig: Rig) -> None:
    nudge = "Please continue with your task."
    agent = rig.start([Text("I will wait here."), Text("Still waiting.")])
    agent.submit("start")
    agent.wait_for("I will wait here.")
    settings = replace(Settings(), stuck_grace=3.0, stuck_nudge=nudge, stuck_max_nudges=1)
    monitor = AgentMonitor(rig.signals, settings)
    actions: list[Any] = []
    screen_text, changed_at = "", time.time()

    def tick() -> bool:
        # What the sidecar runner does each second, here every 50 ms.
        nonlocal screen_text, changed_at
        now = time.time()
        text = agent.screen(escapes=True)
        if text != screen_text:
            screen_text, changed_at = text, now
        _, new = monitor.observe(agent.pane_id, detect_text(text), changed_at, now)
        for action in new:
            actions.append(action)
            if isinstance(action, Nudge):
                agent.submit(action.text)
        return any(isinstance(a, Escalate) for a in actions)

    until(tick, timeout=60, what="a nudge then an escalation")
    assert [type(a) for a in actions] == [Nudge, Escalate]
    assert agent.api.prompts() == ["start", nudge]
    assert "after 1 nudge" in actions[1].why
    verdict = monitor.verdict(agent.pane_id)
    assert verdict is not None and verdict.stuck.phase.value == "escalated"
    agent.wait_for("Still waiting.")


def test_exit_and_gone_are_reported(rig: Rig) -> None:
    agent = rig.start()
    until(lambda: (f := rig.facts(agent)) and f.liveness == Liveness.RUNNING, what="running")
    watch = StuckWatch(agent.pane_id, grace=3.0, nudge_text="x")
    agent.exit()
    facts = facts_when(rig, agent, lambda f: f.liveness == Liveness.EXITED, what="exited")
    [ended] = watch.observe(time.time(), S.UNKNOWN, None, facts.liveness)
    assert isinstance(ended, Ended) and "exited" in ended.why
    assert facts.last_hook_event == "SessionEnd"
    rig.server.cmd("kill-session", "-t", f"claude-{agent.name}")
    rig.refresh()
    until(
        lambda: any(f.pane_id == agent.pane_id and f.liveness == Liveness.GONE for _, f in rig.recorder.changes),
        what="gone",
    )
    assert rig.facts(agent) is None


# -- install / uninstall round trip on the real CLI --------------------------------------------


def test_install_uninstall_round_trip_keeps_the_users_hooks(claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path) -> None:
    user_hook = {"type": "command", "command": 'echo "user-stop $TMUX_PANE" >> "$HOME/user-hook.log"'}
    agent = claude_fleet.start(["First."], settings={"hooks": {"Stop": [{"hooks": [user_hook]}]}, "model": "opus"})
    agent.exit()
    settings_file = agent.home / ".claude" / "settings.json"
    original = settings_file.read_bytes()
    spool = tmp_path / "state" / "hooks.jsonl"
    args = ["--settings-file", str(settings_file), "--spool", str(spool)]
    assert cli_main(["hooks", "install", *args]) == 0
    assert cli_main(["hooks", "install", *args]) == 0  # idempotent
    assert cli_main(["hooks", "status", *args]) == 0

    agent.submit("claude")  # the pane's shell starts Claude Code again, now with both hooks
    agent.wait_idle(timeout=30)
    agent.submit("hello")
    agent.wait_for("First.")
    log = agent.home / "user-hook.log"
    until(lambda: log.is_file() and f"user-stop {agent.pane_id}" in log.read_text(), what="the user's own Stop hook")
    until(lambda: spool.is_file() and b'"Stop"' in spool.read_bytes(), what="our Stop hook")
    events = {json.loads(line)["payload"]["hook_event_name"] for line in spool.read_bytes().splitlines()}
    assert {"SessionStart", "UserPromptSubmit", "Stop"} <= events <= set(HOOK_EVENTS)
    agent.exit()
    assert cli_main(["hooks", "uninstall", *args]) == 0
    assert settings_file.read_bytes() == original
    assert re.search(rb"user-hook\.log", settings_file.read_bytes())


def test_idle_prompt_notification(rig: Rig) -> None:
    agent = rig.start(["Done for now."], config={"messageIdleNotifThresholdMs": 1500})
    agent.submit("go")
    agent.wait_for("Done for now.")
    facts = facts_when(
        rig,
        agent,
        lambda f: f.hook and "idle_prompt" in f.hook.detail,
        timeout=30,
        what="Notification idle_prompt",
    )
    assert facts.hook is not None and facts.hook.state == S.IDLE


def test_startup_dialog_is_trusted_from_the_screen(rig: Rig) -> None:
    agent = rig.start(trust=False, wait=False)
    agent.wait_for("trust this folder", 30)
    until(lambda: screen_state(agent) == S.DIALOG, what="the screen to read as a dialog")
    facts = rig.facts(agent)
    print(f"\nat the trust dialog: {facts}")
    readings = [screen_reading(detect_text(agent.screen(escapes=True)), time.time()), *(facts.readings if facts else ())]
    fused = fuse(readings, time.time())
    assert (fused.state, fused.source) == (S.DIALOG, Source.SCREEN)
    # Hooks and status files have nothing to say before the folder is trusted.
    assert facts is None or facts.hook is None or facts.hook.state != S.WORKING
    trust = re.compile(r"❯\s*(\d\.\s*)?Yes, I trust")
    if not trust.search(agent.screen()):
        agent.press_until("Down", trust)  # newer versions put "No, exit" first
    agent.press_until("Enter", lambda s: "trust this folder" not in s)
    agree(rig, agent, S.IDLE)
    facts = rig.facts(agent)
    assert facts is not None and facts.liveness == Liveness.RUNNING and facts.last_hook_event == "SessionStart"
