"""The sidecar against the real Claude Code CLI: several agents on one private tmux server, each
with its own scripted local API (tests/realclaude/harness.py), watched by TmuxFleet and driven by
SidecarRunner exactly as ``nbs-tui --headless`` does.

* ``/nbs-poll`` reaches an idle agent once per interval and never a working one, nor one with
  typed input, nor one showing a permission prompt;
* the plan-approval menu is answered with the no-prompts option on the first try, once;
* a ``\\nbs-register-chat`` line printed by an agent reaches the project's registry once.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.pane_sidecar import SidecarConfig
from nbs_tui.sidecar.events import CommandSeen, PlanSelect, PollStep, StateChange
from nbs_tui.sidecar.sidecar_runner import ControlPort
from tests.realclaude.harness import Bash, ClaudeFleet, Plan, Slow, Text
from tests.tmux.sidecar_helpers import RunningSidecar, sidecars

pytestmark = [pytest.mark.realclaude, pytest.mark.slow]
# claude_binary / claude_fleet come from tests/realclaude/conftest.py

POLL_NEEDLE = "Check your inbox and the registry"
"""Text of the /nbs-poll command the harness installs; the API sees it in the user turn."""


@pytest.fixture
def sidecar(server: libtmux.Server) -> Iterator[Callable[..., RunningSidecar]]:
    with sidecars(server) as start_runner:

        def start(
            interval: float = 3.0, backoff: float = 3.0, control: ControlPort | None = None, **config: object
        ) -> RunningSidecar:
            address = ServerAddress(socket_name=server.socket_name)
            return start_runner(
                Settings(server=address, poll_interval=interval),
                SidecarConfig(poll_interval=interval, backoff=backoff, **config),  # type: ignore[arg-type]
                control=control,
                seed_timeout=15,
            )

        yield start


def _until(predicate: Callable[[], bool], seconds: float) -> bool:
    return retry_until(predicate, seconds=seconds, interval=0.2, raises=False)


def test_poll_reaches_only_the_idle_agent_once_per_interval(
    claude_fleet: ClaudeFleet, sidecar: Callable[..., RunningSidecar]
) -> None:
    idle, working, typed, permission = claude_fleet.start_many(
        [Text("idle"), Text("idle"), Text("idle"), Text("idle")],
        [Slow(seconds=240)],
        [],
        [Bash("rm -rf build", description="Remove the build folder")],
    )
    working.submit("think for a long time")
    working.wait_working(timeout=30)
    permission.submit("clean the build")
    permission.wait_for("Do you want to proceed?", timeout=30)
    typed.type("half a thought")
    typed.wait_for("half a thought", timeout=10)

    running = sidecar(interval=3.0, backoff=3.0)
    assert _until(lambda: idle.api.count_prompts(POLL_NEEDLE) >= 2, 90), idle.screen()

    # each injection became exactly one submitted turn; the agent saw nothing else
    typed_events = running.of(idle.pane_id, PollStep, result="typed")
    assert all(e.attempt == 1 for e in typed_events)
    assert idle.api.count_prompts(POLL_NEEDLE) in (len(typed_events), len(typed_events) - 1)
    assert len(idle.api.prompts()) == idle.api.count_prompts(POLL_NEEDLE)
    times = [e.at for e in typed_events]
    assert all(b - a >= 3.0 for a, b in itertools.pairwise(times))

    for agent in (working, typed, permission):
        assert agent.api.count_prompts(POLL_NEEDLE) == 0, agent.name
        assert not running.of(agent.pane_id, PollStep, result="typed"), agent.name
    assert "half a thought" in typed.screen()
    assert "Do you want to proceed?" in permission.screen()
    assert working.api.prompts() == ["think for a long time"]
    states = {e.pane_id: e.detection.state.value for e in running.events if isinstance(e, StateChange)}
    assert states[working.pane_id] == "working"
    assert states[permission.pane_id] == "permission"
    assert states[typed.pane_id] == "idle"


def test_plan_menu_answered_with_the_no_prompts_option_once(
    claude_fleet: ClaudeFleet, sidecar: Callable[..., RunningSidecar]
) -> None:
    agent = claude_fleet.start([Plan(), Text("Implemented.")], permission_mode="plan")
    running = sidecar(interval=600.0)
    agent.submit("plan a small change")
    assert _until(lambda: bool(running.of(agent.pane_id, PlanSelect, result="pressed")), 60), (
        agent.screen()
    )
    assert _until(lambda: bool(running.of(agent.pane_id, PlanSelect, result="landed")), 30), (
        agent.screen()
    )
    pressed = running.of(agent.pane_id, PlanSelect, result="pressed")
    assert len(pressed) == 1
    label = str(pressed[0].label).lower()
    assert any(words in label for words in ("bypass permissions", "auto mode", "accept edits"))
    assert "clear" not in label
    assert not running.of(agent.pane_id, PlanSelect, result="failed")
    # the plan was approved (the API got a tool result that is not a rejection) and work went on
    assert _until(lambda: len(agent.api.main_requests()) >= 2, 30)
    results = " ".join(str(r.get("content")) for r in agent.api.tool_results()).lower()
    assert "approved" in results or "user has approved" in results, results


def test_nbs_register_chat_on_screen_reaches_the_registry_once(
    claude_fleet: ClaudeFleet, sidecar: Callable[..., RunningSidecar]
) -> None:
    from nbs_tui.files.control_plane import ControlPlane

    agent = claude_fleet.start(
        [Text("Registering the new chat:\n\n\\nbs-register-chat .nbs/chat/new.chat\n\nDone.")]
    )
    nbs = agent.workdir / ".nbs"
    (nbs / "chat").mkdir(parents=True)
    plane = ControlPlane(Settings(projects=(agent.workdir,)), watch=False)
    plane.start()
    plane.set_pane_dirs({agent.pane_id: str(agent.workdir)})
    try:
        running = sidecar(interval=600.0, control=plane)
        agent.submit("please register the chat")
        assert _until(lambda: bool(running.of(agent.pane_id, CommandSeen)), 60), agent.screen()
        registry = nbs / "control-registry"
        assert _until(
            lambda: registry.is_file() and "chat:.nbs/chat/new.chat" in registry.read_text(), 30
        )
        # the line stays on screen while the runner looks at it three more times
        ticks = running.runner.ticks
        assert _until(lambda: running.runner.ticks >= ticks + 3, 15)
        assert "nbs-register-chat .nbs/chat/new.chat" in agent.screen()
        plane.flush(10)
        commands = running.of(agent.pane_id, CommandSeen)
        assert [e.line for e in commands] == [
            "\\nbs-register-chat .nbs/chat/new.chat"
        ]
        assert registry.read_text().count("chat:.nbs/chat/new.chat") == 1
    finally:
        plane.stop()
