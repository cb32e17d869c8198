"""The harness itself: the real CLI reaches idle, a scenario drives it through its states, and
the scripted API saw exactly what was typed."""

from __future__ import annotations

from libtmux.test.retry import retry_until

from tests.realclaude.harness import (
    Ask,
    Bash,
    ClaudeFleet,
    Error,
    Plan,
    Slow,
    Text,
    looks_idle,
    looks_working,
)


def test_reaches_idle(claude_fleet: ClaudeFleet) -> None:
    agent = claude_fleet.start()
    screen = agent.screen()
    assert looks_idle(screen)
    assert f"Claude Code v{agent.version}" in screen
    assert agent.pane_id.startswith("%")
    assert agent.pane.pane_width == "120" and agent.pane.pane_height == "40"
    # The session file is written shortly after the first frame.
    assert retry_until(lambda: agent.session_status() is not None, 10, raises=False)
    status = agent.session_status()
    assert status is not None and status.get("cwd") == str(agent.workdir)


def test_text_reply_and_prompts(claude_fleet: ClaudeFleet) -> None:
    agent = claude_fleet.start([Text("Hello from the harness.")])
    agent.submit("say hello")
    agent.wait_for("Hello from the harness.")
    agent.wait_idle()
    assert agent.api.prompts() == ["say hello"]


def test_working_permission_idle(claude_fleet: ClaudeFleet) -> None:
    agent = claude_fleet.start(
        # Not read-only, so every version asks (2.1.3xx runs a bare `echo` without asking).
        [Bash("touch marker.txt && echo nbs-harness-ok", "Make a marker", delay=1.5),
         Text("All done.")]
    )
    agent.submit("run the marker command")
    agent.wait_working()
    agent.wait_for("Do you want to proceed?")
    assert not looks_idle(agent.screen())
    agent.press("Enter")  # option 1, "Yes", is selected
    agent.wait_for("All done.")
    agent.wait_idle()
    assert agent.api.prompts() == ["run the marker command"]
    results = agent.api.tool_results()
    assert len(results) == 1 and "nbs-harness-ok" in str(results[0]["content"])
    assert (agent.workdir / "marker.txt").is_file()


def test_permission_refused_with_escape(claude_fleet: ClaudeFleet) -> None:
    agent = claude_fleet.start([Bash("touch never.txt", "Refused"), Text("Understood.")])
    agent.submit("try it")
    agent.wait_for("Do you want to proceed?")
    agent.press("Escape")
    agent.wait_idle()
    assert not (agent.workdir / "never.txt").exists()


def test_plan_approval(claude_fleet: ClaudeFleet) -> None:
    agent = claude_fleet.start([Plan(), Text("Implementing now.")], permission_mode="plan")
    agent.wait_for("plan mode on")
    agent.submit("plan the change")
    screen = agent.wait_for("Would you like to proceed?")
    assert "Yes, manually approve edits" in screen
    # Choose "manually approve edits" by its label's position, wherever the version puts it.
    row = next(ln for ln in screen.splitlines() if "manually approve edits" in ln)
    agent.press(row.split(".")[0].strip(" ❯"))
    agent.wait_for("Implementing now.")
    screen = agent.wait_idle()
    assert "plan mode on" not in screen
    assert agent.api.prompts() == ["plan the change"]
    plans = list((agent.home / ".claude" / "plans").glob("*.md"))
    assert len(plans) == 1 and "Run the tests." in plans[0].read_text()


def test_ask_user_question(claude_fleet: ClaudeFleet) -> None:
    agent = claude_fleet.start(
        [Ask("Which colour?", ["Red", "Blue"]), Text("Blue it is.")]
    )
    agent.submit("ask me")
    agent.wait_for("Enter to select")
    agent.press("Down", "Enter")
    agent.wait_for("Blue it is.")
    agent.wait_idle()
    assert "Blue" in str(agent.api.tool_results())


def test_nbs_poll_arrives_once(claude_fleet: ClaudeFleet) -> None:
    agent = claude_fleet.start(["Nothing new in the inbox."])
    agent.submit("/nbs-poll")
    agent.wait_for("Nothing new in the inbox.")
    agent.wait_idle()
    assert agent.api.count_prompts("/nbs-poll") == 1
    assert agent.api.count_prompts("Check your inbox") == 1


def test_interrupt_slow_reply(claude_fleet: ClaudeFleet) -> None:
    agent = claude_fleet.start([Slow(60)])
    agent.submit("think slowly")
    agent.wait_for(lambda s: looks_working(s) and "tokens" in s)
    agent.press("Escape")
    agent.wait_for("Interrupted")
    agent.wait_idle()


def test_api_error_is_shown(claude_fleet: ClaudeFleet) -> None:
    agent = claude_fleet.start(
        [Error(529, times=None)], extra_env={"CLAUDE_CODE_MAX_RETRIES": "0"}
    )
    agent.submit("hello")
    agent.wait_for(lambda s: "529" in s and looks_idle(s))
    assert agent.api.prompts() == ["hello"]


def test_startup_dialogs(claude_fleet: ClaudeFleet) -> None:
    untrusted = claude_fleet.start(name="untrusted", trust=False, wait=False)
    unapproved = claude_fleet.start(name="unapproved", approve_key=False, wait=False)
    untrusted.wait_for("trust this folder", 30)
    unapproved.wait_for("use this API key?", 30)


def test_several_agents_at_once(claude_fleet: ClaudeFleet) -> None:
    agents = claude_fleet.start_many(["Reply one."], ["Reply two."], ["Reply three."])
    assert len({a.pane_id for a in agents}) == 3
    for i, agent in enumerate(agents, 1):
        agent.submit(f"prompt {i}")
    for i, agent in enumerate(agents, 1):
        agent.wait_for(f"Reply {['one', 'two', 'three'][i - 1]}.")
        assert agent.api.prompts() == [f"prompt {i}"]


def test_exit_leaves_a_shell(claude_fleet: ClaudeFleet) -> None:
    agent = claude_fleet.start()
    agent.pane.refresh()
    assert agent.pane.pane_current_command == "claude"  # as under an interactive shell
    agent.exit()
    agent.pane.refresh()
    assert agent.pane.pane_current_command == "bash"
