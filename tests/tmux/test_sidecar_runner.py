"""SidecarRunner on real tmux: fake Claude-Code-like agents that log every key they receive.

The fake agent is an executable named ``claude`` (so discovery counts it as an agent) that draws
a 2.1.x-like screen (transcript, ``❯`` box between rules, footer), reads keys in raw mode and
appends ``RAW <bytes>`` and ``SUBMIT <text>`` lines to its log. Modes: ``idle`` (a submit makes
it work for a second, then answer), ``idle-2s`` (the same, two seconds), ``working`` (spinner forever), ``permission`` (a Bash
permission menu), ``plan`` (the 2.1.197 plan menu; a digit answers it), ``nbs`` (idle; a
``/nbs-poll`` makes it print a ``\\nbs-register-chat`` line in its message block).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.config import Settings
from nbs_tui.core.detection.detect import ScreenKey, detect_lines, screen_key
from nbs_tui.core.fleet.model import Detection
from nbs_tui.core.sidecar.pane_sidecar import SidecarConfig
from nbs_tui.sidecar.events import CommandSeen, PlanSelect, PollStep, StateChange
from tests.tmux.sidecar_helpers import RunningSidecar, sidecars

FAKE_AGENT = r"""#!PYTHON
import os, sys, time, tty, termios, select, shutil

mode, log_path = sys.argv[1], sys.argv[2]
log = open(log_path, "a", buffering=1)
buf = ""
transcript = ["⏺ Ready when you are."]
state = mode
turns = 0
busy_until = 0.0
frame = 0
turn_seconds = 2.0 if mode == "idle-2s" else 1.0

def draw():
    cols = shutil.get_terminal_size().columns
    rule = "─" * cols
    rows = list(transcript[-12:])
    if state == "working" or time.time() < busy_until:
        rows += ["", f"✢ Sautéing… ({frame}s · ↓ {frame} tokens)"]
        footer = "  esc to interrupt · ← for agents"
    else:
        rows += ["", "✻ Worked for 1s"] if turns else []
        footer = "  ? for shortcuts · ← for agents"
    if state == "permission":
        rows += [rule, " Bash command", "", "   rm -rf build", "", " Do you want to proceed?",
                 " ❯ 1. Yes", "   2. Yes, and always allow access to work/ from this project", "   3. No",
                 "", " Esc to cancel · Tab to amend"]
    elif state == "plan":
        rows += [rule, " Ready to code?", "", " Here is Claude's plan: write hello.txt", "",
                 " Would you like to proceed?", "", " ❯ 1. Yes, and use auto mode",
                 "   2. Yes, manually approve edits", "   3. Tell Claude what to change"]
    else:
        rows += [rule, "❯ " + buf, rule, footer]
    sys.stdout.write("\x1b[H\x1b[2J" + "\r\n".join(r[:cols] for r in rows))
    sys.stdout.flush()

fd = sys.stdin.fileno()
tty.setraw(fd)
draw()
log.write("READY\n")
while True:
    ready, _, _ = select.select([fd], [], [], 0.2)
    now = time.time()
    if state == "working" or (busy_until and now < busy_until):
        frame += 1
        draw()
    elif busy_until and now >= busy_until:
        busy_until = 0.0
        draw()
    if not ready:
        continue
    data = os.read(fd, 4096)
    log.write("RAW " + repr(data) + "\n")
    text = data.decode("utf-8", "replace")
    for ch in text:
        if state == "plan" and ch.isdigit():
            log.write("CHOICE " + ch + "\n")
            state = "idle"
            transcript.append("⏺ User approved Claude's plan")
            busy_until = time.time() + 1.0
            continue
        if state in ("permission", "plan"):
            continue
        if ch in "\r\n":
            log.write("SUBMIT " + buf + "\n")
            if buf:
                turns += 1
                transcript.append("❯ " + buf)
                if buf == "/nbs-poll" and mode == "nbs":
                    transcript.append("⏺ Registering the new chat:")
                    transcript.append("  \\nbs-register-chat .nbs/chat/new.chat")
                else:
                    transcript.append(f"⏺ Answer {turns}.")
                # "stay busy": a turn that works on and on (the screen changes, the title never)
                busy_until = float("inf") if buf == "stay busy" else time.time() + turn_seconds
            buf = ""
        elif ch == "\x7f":
            buf = buf[:-1]
        elif ch.isprintable():
            buf += ch
    draw()
"""


@dataclass
class Agent:
    name: str
    pane_id: str
    log: Path

    def ready(self) -> bool:
        """The agent runs, in raw mode, its first screen drawn (its log says so)."""
        return self.log.exists() and "READY" in self.log.read_text().splitlines()

    def lines(self, prefix: str) -> list[str]:
        if not self.log.exists():
            return []
        return [
            line[len(prefix) + 1 :]
            for line in self.log.read_text().splitlines()
            if line.startswith(prefix + " ")
        ]


def write_fake_claude(path: Path) -> Path:
    """Install the fake agent as an executable at ``path`` (name it ``claude`` for discovery)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE_AGENT.replace("PYTHON", sys.executable, 1), encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture
def fake_claude(tmp_path: Path) -> Path:
    return write_fake_claude(tmp_path / "bin" / "claude")


@pytest.fixture
def spawn(
    session: libtmux.Session, fake_claude: Path, tmp_path: Path
) -> Callable[[str, str], Agent]:
    def start(name: str, mode: str) -> Agent:
        log = tmp_path / f"{name}.log"
        window = session.new_window(
            window_name=name, window_shell=f"{fake_claude} {mode} {log}", attach=False
        )
        pane = window.active_pane
        assert pane is not None and pane.pane_id is not None
        agent = Agent(name, pane.pane_id, log)
        assert _wait(agent.ready, 10), f"the fake agent {name} did not start"
        return agent

    return start


@pytest.fixture
def run_sidecar(server: libtmux.Server) -> Iterator[Callable[..., RunningSidecar]]:
    with sidecars(server) as start_runner:

        def start(interval: float = 2.0, backoff: float = 3.0, **settings: object) -> RunningSidecar:
            config = SidecarConfig(poll_interval=interval, backoff=backoff, **settings)  # type: ignore[arg-type]
            return start_runner(Settings(poll_interval=interval), config)

        yield start


def _wait(predicate: Callable[[], bool], seconds: float) -> bool:
    return retry_until(predicate, seconds=seconds, raises=False)


def test_poll_reaches_idle_agent_once_per_interval_and_never_others(
    spawn: Callable[[str, str], Agent], run_sidecar: Callable[..., RunningSidecar], server: libtmux.Server
) -> None:
    idle = spawn("idle", "idle")
    working = spawn("working", "working")
    permission = spawn("permission", "permission")
    typed = spawn("typed", "idle")
    # the operator has half a sentence in this box before the sidecar starts (spawn waited
    # until the agent is in raw mode)
    server.cmd("send-keys", "-t", typed.pane_id, "-l", "half a thought")
    assert _wait(lambda: "half a thought" in "".join(typed.lines("RAW")).replace("'", ""), 5)

    running = run_sidecar(interval=2.0, backoff=3.0)
    # two full cycles on the idle agent
    assert _wait(lambda: idle.lines("SUBMIT").count("/nbs-poll") >= 2, 40), idle.log.read_text()
    submits = idle.lines("SUBMIT")
    assert submits == ["/nbs-poll"] * len(submits), (
        "only whole /nbs-poll submissions, never a bare Enter"
    )
    typed_events = running.of(idle.pane_id, PollStep, result="typed")
    assert len(typed_events) == len(submits) or len(typed_events) == len(submits) + 1
    # at least the interval (plus back-off) between two injections
    times = [e.at for e in typed_events]
    assert all(b - a >= 2.0 for a, b in itertools.pairwise(times))
    for agent in (working, permission, typed):
        assert agent.lines("SUBMIT") == [], f"{agent.name} got a submit"
        assert "nbs-poll" not in agent.log.read_text(), agent.name
    # the operator's text is still there, untouched
    capture = "\n".join(server.cmd("capture-pane", "-p", "-t", typed.pane_id).stdout)
    assert "❯ half a thought" in capture
    states = {e.pane_id: e.detection.state.value for e in running.events if isinstance(e, StateChange)}
    assert states[working.pane_id] == "working"
    assert states[permission.pane_id] == "permission"


def test_plan_menu_answered_once_with_the_right_option(
    spawn: Callable[[str, str], Agent], run_sidecar: Callable[..., RunningSidecar]
) -> None:
    plan = spawn("plan", "plan")
    running = run_sidecar(interval=300.0)
    assert _wait(lambda: plan.lines("CHOICE") == ["1"], 15), plan.log.read_text()
    assert _wait(lambda: bool(running.of(plan.pane_id, PlanSelect, result="landed")), 15)
    assert plan.lines("CHOICE") == ["1"]
    pressed = running.of(plan.pane_id, PlanSelect, result="pressed")
    assert len(pressed) == 1 and pressed[0].label == "Yes, and use auto mode"
    assert plan.lines("SUBMIT") == []


def test_nbs_command_on_screen_reported_once(
    spawn: Callable[[str, str], Agent], run_sidecar: Callable[..., RunningSidecar], server: libtmux.Server
) -> None:
    agent = spawn("nbs", "nbs")
    running = run_sidecar(interval=1.0, backoff=30.0)
    assert _wait(lambda: bool(running.of(agent.pane_id, CommandSeen)), 20)
    # the line stays on screen while the runner looks at it three more times
    ticks = running.runner.ticks
    assert _wait(lambda: running.runner.ticks >= ticks + 3, 15)
    screen = "\n".join(server.cmd("capture-pane", "-p", "-t", agent.pane_id).stdout)
    assert "\\nbs-register-chat" in screen, screen
    commands = running.of(agent.pane_id, CommandSeen)
    assert [e.line for e in commands] == ["\\nbs-register-chat .nbs/chat/new.chat"]


def test_paused_project_gets_nothing(
    spawn: Callable[[str, str], Agent],
    run_sidecar: Callable[..., RunningSidecar],
    tmp_path: Path,
    session: libtmux.Session,
) -> None:
    project = tmp_path / "project"
    (project / ".nbs").mkdir(parents=True)
    (project / ".nbs" / "control-pause").write_text("")
    log = tmp_path / "paused.log"
    fake = tmp_path / "bin" / "claude"
    window = session.new_window(
        window_name="paused",
        window_shell=f"{fake} idle {log}",
        attach=False,
        start_directory=str(project),
    )
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    pane_id = pane.pane_id
    agent = Agent("paused", pane_id, log)
    assert _wait(agent.ready, 10), "the fake agent did not start"
    control = spawn("control", "idle")  # the same agent outside the paused project
    running = run_sidecar(interval=1.0, backoff=1.0)
    assert _wait(lambda: bool(running.of(pane_id, StateChange)), 10)
    # long enough for a poll to arrive: the other agent got two
    assert _wait(lambda: control.lines("SUBMIT").count("/nbs-poll") >= 2, 30), control.log.read_text()
    assert agent.lines("SUBMIT") == [] and agent.lines("RAW") == [], log.read_text()
    status = running.runner.status(pane_id)
    assert status is not None and status.paused and status.next_poll_in is None


def test_detection_runs_once_per_screen_on_the_way_to_the_keys(
    spawn: Callable[[str, str], Agent],
    run_sidecar: Callable[..., RunningSidecar],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The live re-read before each key (`LivePane.read`) usually finds the very screen the tick
    just read and detected: its detection is then the tick's, not run a second time. Every
    detection of a pane is recorded with the rows and faint rows it was given; no pane's screen
    is detected twice in a row (a poll's handshake and a plan menu's answer, on real tmux)."""
    from nbs_tui.sidecar import watched_panes

    detected: list[ScreenKey] = []

    def recording(lines: list[str], faint_rows: list[int]) -> Detection:
        detected.append(screen_key(lines, faint_rows))
        return detect_lines(lines, faint_rows=faint_rows)

    monkeypatch.setattr(watched_panes, "detect_lines", recording)
    idle = spawn("idle", "idle")
    plan = spawn("plan", "plan")
    running = run_sidecar(interval=2.0, backoff=30.0)
    assert _wait(lambda: plan.lines("CHOICE") == ["1"], 20), plan.log.read_text()
    assert _wait(lambda: bool(running.of(idle.pane_id, PollStep, result="submitted")), 30), idle.log.read_text()
    ticks = running.runner.ticks
    assert _wait(lambda: running.runner.ticks >= ticks + 2, 10)  # later repeats would show here
    assert idle.lines("SUBMIT") == ["/nbs-poll"] and plan.lines("CHOICE") == ["1"]
    pressed = running.of(plan.pane_id, PlanSelect, result="pressed")
    typed = running.of(idle.pane_id, PollStep, result="typed")
    assert len(pressed) == 1 and len(typed) == 1
    # each detection was of a screen not detected just before (keys: one pane's screens follow
    # each other; the two panes' screens never look alike)
    repeats = [a for a, b in itertools.pairwise(detected) if a == b]
    assert repeats == [], f"{len(repeats)} screens detected twice in a row"
    assert running.runner.detections == len(detected)
