"""The dashboard's "new agent" form (Pilot) on real tmux and the real Claude Code CLI: ``c`` opens
it, a bad name is shown under the fields and nothing starts, a filled form starts the agent in a
new window in the folder named, its trust dialog answered and its prompt reaching the API once;
the start is a line of the action log."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import libtmux
import pytest
from textual.widgets import Input, Static, TextArea

from nbs_tui.app import NbsApp, create_app
from nbs_tui.widgets.confirm_screen import ConfirmScreen
from nbs_tui.widgets.new_agent_form import NewAgentScreen
from tests.app.helpers import static_text, wait_for
from tests.realclaude.harness import ClaudeFleet, Text
from tests.realclaude.new_world import NewAgentWorld, make_world, trusted, wait_until


@pytest.mark.timeout(180)
async def test_the_form_starts_an_agent_and_its_prompt_reaches_the_api_once(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    server.new_session(session_name="work", start_directory=str(tmp_path))
    world = make_world(claude_fleet, tmp_path, "formed", [Text("Formed.")])
    log = world.action_log
    app = create_app(world.dashboard_settings(server))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: len(app.state.panes) >= 1, what="the fleet")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, NewAgentScreen) and bool(app.screen.query("#new-folder")), what="the form")
        form = app.screen
        assert isinstance(form, NewAgentScreen)
        assert str(tmp_path) in form.folders  # the fleet's folders complete the folder field
        form.query_one("#new-folder", Input).value = str(world.workdir)
        form.query_one("#new-name", Input).focus()
        await pilot.press(*"bad:name")
        await pilot.press("ctrl+s")
        problems = static_text(form.query_one("#new-problems", Static))
        assert "--name 'bad:name' may hold only" in problems and app.screen is form  # stays open
        form.query_one("#new-name", Input).value = ""
        await pilot.press(*"formed")
        form.query_one("#new-prompt", TextArea).focus()
        await pilot.press(*"write the form test")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, NewAgentScreen), what="the form closed")
        await wait_for(pilot, lambda: world.api.prompts() == ["write the form test"], 60, what="the prompt once")
        await wait_for(pilot, lambda: log.exists() and '"action":"new"' in log.read_text(), 20, what="the log line")
    windows = server.cmd("list-windows", "-a", "-F", "#{session_name}:#{window_name} #{pane_current_path}").stdout
    assert f"agents:formed {world.workdir}" in windows
    assert trusted(world)
    record = json.loads(log.read_text().splitlines()[-1])
    assert (record["action"], record["outcome"], record["sent"]) == ("new", "sent", str(world.workdir))


@pytest.mark.timeout(180)
async def test_restart_and_stop_from_the_dashboard_after_a_confirmation(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    world, started = agent_told_a_word(claude_fleet, server, tmp_path, "kept", "rowan")
    pane_id, session_id = started["pane_id"], started["session_id"]
    log = world.action_log
    app = create_app(world.dashboard_settings(server, poll=False))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: pane_id in app.state.pane_by_id, what="the agent listed")
        app.dashboard.select_pane(pane_id)
        await pilot.press("S")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
        await pilot.press("n")  # no: nothing happens, once the answer is taken and the actions are done
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the confirmation closed")
        await wait_for(pilot, lambda: lifecycle_idle(), 60, what="the controller idle")
        assert not log.exists()
        await pilot.press("S")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: log.exists() and '"action":"restart"' in log.read_text(), 60, what="restarted")
        record = json.loads(log.read_text().splitlines()[-1])
        assert (record["outcome"], record["sent"], record["pane_id"]) == ("sent", f"claude --resume {session_id}", pane_id)
        await pilot.press("X")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: '"action":"stop"' in log.read_text(), 60, what="stopped")
        await wait_for(pilot, lambda: lifecycle_idle(), 60, what="the controller idle")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["action"], r["outcome"]) for r in records] == [("restart", "sent"), ("stop", "sent")]
    assert records[-1]["sent"] == "/exit"
    assert pane_id not in server.cmd("list-panes", "-a", "-F", "#{pane_id}").stdout


@pytest.mark.timeout(240)
async def test_the_dashboard_offers_a_remembered_fleet_whose_agents_are_gone_and_restores_it(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    world, started = agent_told_a_word(claude_fleet, server, tmp_path, "gone", "sorb")
    session_id = started["session_id"]
    log = world.action_log
    settings = world.dashboard_settings(server, poll=False)
    memory = memory_path(str(server.socket_name))
    app = watch_notifications(create_app(settings))
    answers = watch_remembered_checks(app)
    async with app.run_test(size=(160, 48)) as pilot:  # this dashboard acts: it remembers the fleet
        await wait_for(pilot, lambda: memory.exists() and session_id in memory.read_text(), 30, what="remembered")
        await wait_for(pilot, lambda: bool(answers), 30, what="the dashboard's own check of the remembered fleet")
        assert answers == ["nothing"] and not offered(app)  # nothing is gone
    server.kill()  # the server is lost with its agent; a new one is started by hand
    server.new_session(session_name="work", start_directory=str(tmp_path))
    app = watch_notifications(create_app(settings))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: offered(app), 30, what="the offer")
        await pilot.press("ctrl+o")
        # the screen first, its children once composed (a query right after the push found none)
        await wait_for(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and bool(app.screen.query("#confirm-list")), 30, what="the plan"
        )
        plan = static_text(app.screen.query_one("#confirm-list", Static), 200)
        assert f"--resume {session_id}" in " ".join(plan.split())  # (the list wraps long lines)
        await pilot.press("y")
        await wait_for(pilot, lambda: log.exists() and '"action":"restore"' in log.read_text(), 60, what="restored")
    record = json.loads(log.read_text().splitlines()[-1])
    assert (record["outcome"], record["sent"]) == ("sent", "1 agent")
    (pane,) = [line.split()[0] for line in server.cmd("list-panes", "-a", "-F", "#{pane_id} #{window_name}").stdout if line.endswith(" gone")]
    server.cmd("send-keys", "-t", pane, "-l", "which word?")
    wait_until(lambda: "which word?" in "\n".join(server.cmd("capture-pane", "-p", "-t", pane).stdout), 10)
    server.cmd("send-keys", "-t", pane, "Enter")
    wait_until(lambda: world.api.count_prompts("which word?") == 1, 30)
    asked = next(r.all_text() for r in world.api.main_requests() if r.last_user_text() == "which word?")
    assert "sorb" in asked


def agent_told_a_word(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path, name: str, word: str
) -> tuple[NewAgentWorld, dict[str, str]]:
    """An agent ``nbs-tui new`` started on ``server`` (beside a session "work") as NAME in a
    trusted folder, told to remember ``word``: its world and the JSON line ``new`` printed."""
    server.new_session(session_name="work", start_directory=str(tmp_path))
    world = make_world(claude_fleet, tmp_path, name, [], trust=True)
    started = world.run(str(server.socket_name), str(world.workdir), "--name", name, "--prompt", f"remember the word {word}", "--json")
    assert started.returncode == 0, started.stderr
    return world, json.loads(started.stdout)


def memory_path(socket: str) -> Path:
    import os

    return Path(os.environ["XDG_STATE_HOME"]) / "nbs-tui" / f"fleet-L-{socket}.json"


def offered(app: NbsApp) -> bool:
    return "Remembered agents are gone" in getattr(app, "titles_notified", [])


LIFECYCLE_THREADS = ("nbs-new-agent", "nbs-stop-agent", "nbs-restore", "nbs-remembered", "nbs-open-background")


def lifecycle_idle() -> bool:
    """No start, stop, restart, restore or check of the dashboard's lifecycle runs (each has a
    thread of its own, named as `LifecycleController` names it; one dashboard runs in a test)."""
    return not {t.name for t in threading.enumerate()}.intersection(LIFECYCLE_THREADS)


def watch_remembered_checks(app: NbsApp) -> list[str]:
    """How each of the dashboard's checks of the remembered fleet answered, in order: "offer" or
    "nothing" (the check's own callbacks, called as before; the dashboard's timed check passes no
    ``nothing``, so one is added that only notes it)."""
    lifecycle = app.operator.lifecycle
    check = lifecycle.check_remembered
    answers: list[str] = []

    def noting(offer: Callable[[list[str]], None], nothing: Callable[[], None] | None = None) -> None:
        def offered(lines: list[str]) -> None:
            answers.append("offer")
            offer(lines)

        def none() -> None:
            answers.append("nothing")
            if nothing is not None:
                nothing()

        check(offered, none)

    lifecycle.check_remembered = noting  # type: ignore[method-assign]
    return answers


def watch_notifications(app: NbsApp) -> NbsApp:
    """Keep the title of every notification the app shows (``titles_notified``)."""
    shown: list[str] = []
    notify = app.notify

    def noting(message: str, *, title: str = "", **options: Any) -> None:
        shown.append(title)
        notify(message, title=title, **options)

    app.notify = noting  # type: ignore[method-assign]
    app.titles_notified = shown  # type: ignore[attr-defined]
    return app
