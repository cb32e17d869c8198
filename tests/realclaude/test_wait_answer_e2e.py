"""``nbs-tui wait`` and ``nbs-tui answer`` on the real Claude Code CLI and its scripted API, run
as a script runs them (a process, its exit code, its stdout), the service started by the first
command as the dashboard would start it.

- ``wait --until done`` returns once a turn of seconds is over, and never on the idle the agent
  was in when the wait began (herdr #3506);
- ``answer`` answers a real permission prompt and a real plan menu by label, with the menu id
  ``read``/``agents --json`` showed; a stale ``--menu`` is refused with nothing pressed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libtmux
import pytest

from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.fleet_api.exit_codes import ExitCode
from tests.realclaude.harness import (
    Ask,
    Bash,
    ClaudeAgent,
    ClaudeFleet,
    Plan,
    Slow,
    Text,
    looks_idle,
)
from tests.realclaude.new_world import REPO, wait_until
from tests.realclaude.test_send_e2e import still
from tests.tmux.test_fleet_api_wait_answer import looking

pytestmark = [pytest.mark.slow, pytest.mark.service_auto]


class Api:
    """The fleet API of the test's tmux server, as a script runs it: its own state folders, the
    service allowed, no polls typed (the scripted API then sees only the test's prompts)."""

    def __init__(self, server: libtmux.Server, tmp: Path, **env: str) -> None:
        self.socket = str(server.socket_name)
        self.state = tmp / "nbs-state"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "NBS_", "CLAUDE"))}
        self.env.update(
            XDG_STATE_HOME=str(self.state), XDG_CONFIG_HOME=str(tmp / "nbs-config"),
            NBS_SERVICE="auto", NBS_POLL_DISABLE="1", **env,
        )  # fmt: skip

    def argv(self, *words: str) -> list[str]:
        return [sys.executable, "-m", "nbs_tui", "-L", self.socket, *words]

    def run(self, *words: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*words), capture_output=True, text=True, timeout=timeout, env=self.env, cwd=REPO,
            check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def start(self, *words: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*words), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env, cwd=REPO,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def json(self, *words: str) -> dict[str, Any]:
        done = self.run(*words, "--json")
        assert done.returncode == 0, done.stderr
        out: dict[str, Any] = json.loads(done.stdout)
        return out

    def agent(self, pane_id: str) -> dict[str, Any]:
        return next((a for a in self.json("agents")["agents"] if a["pane_id"] == pane_id), {})

    def settled(self, agent: ClaudeAgent, state: str, timeout: float = 60) -> dict[str, Any]:
        """The agent's row once the service publishes ``state`` for it (and, waiting on a
        person, once its menu is read)."""
        row: dict[str, Any] = {}

        def there() -> bool:
            row.clear()
            row.update(self.agent(agent.pane_id))
            return row.get("state") == state and (not row.get("needs") or bool(row.get("menu")))

        wait_until(there, timeout, f"{agent.pane_id} published {state}")
        return row

    def action_log(self) -> list[dict[str, Any]]:
        path = self.state / "nbs-tui" / "actions.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def api(server: libtmux.Server, tmp_path: Path) -> Iterator[Api]:
    made = Api(server, tmp_path)
    yield made
    made.run("service", "stop")


@pytest.fixture
def api_no_plan_policy(server: libtmux.Server, tmp_path: Path) -> Iterator[Api]:
    """The service leaves plan menus alone (``plan_policy = "off"``): the test answers them."""
    made = Api(server, tmp_path, NBS_PLAN_POLICY="off")
    yield made
    made.run("service", "stop")


# -- wait ---------------------------------------------------------------------------------------


def test_wait_until_done_returns_when_a_turn_of_seconds_is_over(claude_fleet: ClaudeFleet, api: Api) -> None:
    agent = claude_fleet.start([Slow(4.0, text="The parser is built, tested and documented now.")])
    api.settled(agent, "idle")
    waiting = api.start("wait", agent.pane_id, "--until", "done", "--timeout", "90", "--json")
    looking(waiting)
    time.sleep(1.0)
    assert waiting.poll() is None, waiting.communicate()  # idle when the wait began: not done
    agent.submit("build the parser")
    submitted = time.monotonic()
    agent.wait_working()
    assert waiting.poll() is None  # working: not done either
    out, err = waiting.communicate(timeout=90)
    returned = time.monotonic()
    assert waiting.returncode == ExitCode.DONE, err
    screen = agent.screen()
    assert "The parser is built, tested and documented now." in screen and looks_idle(screen)  # the turn is over
    assert returned - submitted >= 4.0  # the reply took 4 s: the wait sat it out
    doc = json.loads(out)
    assert doc["until"] == "done" and doc["timed_out"] is False
    [item] = doc["agents"]
    assert item["reached"] and item["seen_working"] and item["state"] == "idle"
    assert item["agent"]["pane_id"] == agent.pane_id and item["after"] >= 4.0
    assert agent.api.prompts() == ["build the parser"]  # the wait typed nothing


def test_wait_until_done_on_an_agent_already_idle_times_out_and_never_takes_the_stale_idle(
    claude_fleet: ClaudeFleet, api: Api
) -> None:
    agent = claude_fleet.start(["Already done."])
    agent.submit("do the thing")
    agent.wait_for("Already done.")
    agent.wait_idle()
    api.settled(agent, "idle")
    idle = api.run("wait", agent.pane_id, "--until", "idle", "--timeout", "30", "--json")
    assert idle.returncode == ExitCode.DONE, idle.stderr  # idle now: --until idle is there at once
    assert json.loads(idle.stdout)["agents"][0]["state"] == "idle"
    started = time.monotonic()
    done = api.run("wait", agent.pane_id, "--until", "done", "--timeout", "5", "--json")
    assert done.returncode == ExitCode.TIMEOUT, done.stderr
    assert time.monotonic() - started >= 5.0 and "timed out after 5 s" in done.stderr
    doc = json.loads(done.stdout)
    assert doc["timed_out"] is True and doc["waited"] >= 5.0 and doc["looks"] >= 8  # a look every 0.5 s
    [item] = doc["agents"]
    assert not item["reached"] and not item["seen_working"] and item["state"] == "idle"
    text = api.run("wait", agent.pane_id, "--until", "done", "--timeout", "1")
    assert text.returncode == ExitCode.TIMEOUT and "idle; not reached" in text.stdout
    assert agent.api.prompts() == ["do the thing"]


def test_wait_until_needs_then_gone_and_a_gone_agent_ends_a_wait_for_done(claude_fleet: ClaudeFleet, api: Api) -> None:
    agent = claude_fleet.start([Bash("touch asked.txt", "Make a file"), Text("Made.")])
    api.settled(agent, "idle")
    needs = api.start("wait", agent.pane_id, "--until", "needs", "--timeout", "60", "--json")
    agent.submit("make the file")
    out, err = needs.communicate(timeout=60)
    assert needs.returncode == ExitCode.DONE, err
    [item] = json.loads(out)["agents"]
    assert item["state"] == "permission" and item["needs"] == "permission"
    assert "Do you want to proceed?" in agent.screen()
    agent.press("Escape")
    agent.wait_idle()
    done = api.start("wait", agent.pane_id, "--until", "done", "--timeout", "60")
    gone = api.start("wait", agent.pane_id, "--until", "gone", "--timeout", "60", "--json")
    looking(done)
    looking(gone)
    agent.exit()
    out, err = gone.communicate(timeout=60)
    assert gone.returncode == ExitCode.DONE, err
    assert json.loads(out)["agents"][0]["state"] == "gone"
    _, err = done.communicate(timeout=60)
    assert done.returncode == ExitCode.NO_SUCH_AGENT and "gone before done" in err
    missing = api.run("wait", "no-such-agent", "--until", "idle")
    assert missing.returncode == ExitCode.NO_SUCH_AGENT
    bad = api.run("wait", agent.pane_id, "--until", "idle", "--timeout", "-1")
    assert bad.returncode == ExitCode.BAD_INPUT


# -- answer -------------------------------------------------------------------------------------


def test_answer_a_real_permission_prompt_by_label_with_the_menu_id_read_showed(
    claude_fleet: ClaudeFleet, api: Api
) -> None:
    agent = claude_fleet.start([Bash("touch out.txt", "Make a file"), Text("Done.")])
    api.settled(agent, "idle")
    no_menu = api.run("answer", agent.pane_id, "1")
    assert no_menu.returncode == ExitCode.REFUSED and "no menu" in no_menu.stderr
    agent.submit("make the file")
    agent.wait_for("Do you want to proceed?")
    row = api.settled(agent, "permission")
    read = api.json("read", agent.pane_id)
    assert read["menu"] == row["menu"] and read["agent"]["menu"] == row["menu"]
    not_on_it = api.run("answer", agent.pane_id, "Maybe", "--menu", row["menu"])
    assert not_on_it.returncode == ExitCode.REFUSED and "no option 'Maybe'" in not_on_it.stderr
    assert "Do you want to proceed?" in agent.screen() and not (agent.workdir / "out.txt").exists()
    answered = api.run("answer", agent.pane_id, "yes", "--menu", row["menu"], "--json")
    assert answered.returncode == ExitCode.DONE, answered.stderr
    doc = json.loads(answered.stdout)
    assert doc["key"] == "1" and doc["answered"] == "1. Yes" and doc["menu"] == row["menu"]
    assert doc["kind"] == "permission prompt" and "touch out.txt" in doc["question"]
    agent.wait_for("Done.")
    agent.wait_idle()
    assert (agent.workdir / "out.txt").exists()
    assert len(agent.api.tool_results()) == 1 and agent.api.prompts() == ["make the file"]
    answers = [r for r in api.action_log() if r["action"] == "answer"]
    assert [(r["outcome"], r["sent"]) for r in answers] == [("skipped", "Maybe"), ("sent", "1")]


def test_answer_a_real_plan_menu_by_label(claude_fleet: ClaudeFleet, api_no_plan_policy: Api) -> None:
    api = api_no_plan_policy
    agent = claude_fleet.start([Plan(), Text("Implemented.")], permission_mode="plan")
    agent.wait_for("plan mode on")
    api.settled(agent, "idle")
    agent.submit("plan the change")
    screen = agent.wait_for("Would you like to proceed?")
    digit = next(ln for ln in screen.splitlines() if "manually approve edits" in ln).split(".")[0].strip(" ❯")
    row = api.settled(agent, "plan")
    answered = api.run("answer", agent.pane_id, "Yes, manually approve edits", "--menu", row["menu"], "--json")
    assert answered.returncode == ExitCode.DONE, answered.stderr
    doc = json.loads(answered.stdout)
    assert doc["kind"] == "plan approval" and doc["key"] == digit
    agent.wait_for("Implemented.")
    assert "plan mode on" not in agent.wait_idle()
    assert agent.api.prompts() == ["plan the change"]


def test_a_stale_menu_id_is_refused_with_nothing_pressed(claude_fleet: ClaudeFleet, api: Api) -> None:
    agent = claude_fleet.start(
        [Bash("touch first.txt", "First file"), Bash("touch second.txt", "Second file"), Text("Both made.")]
    )
    api.settled(agent, "idle")
    agent.submit("make two files")
    agent.wait_for(lambda s: "touch first.txt" in s and "Do you want to proceed?" in s)
    first = api.settled(agent, "permission")["menu"]
    assert api.run("answer", agent.pane_id, "1", "--menu", first).returncode == ExitCode.DONE
    agent.wait_for(lambda s: "touch second.txt" in s and "Do you want to proceed?" in s)
    wait_until(lambda: api.agent(agent.pane_id).get("menu") not in (None, first), 30, "the second menu read")
    second = api.agent(agent.pane_id)["menu"]
    screen, requests = agent.screen(), len(agent.api.requests)
    stale = api.run("answer", agent.pane_id, "1", "--menu", first, "--json")
    assert stale.returncode == ExitCode.REFUSED and stale.stdout == ""
    assert f"is menu {second}, not {first}" in stale.stderr
    time.sleep(2.0)  # a key pressed would have shown by now
    assert still(agent.screen()) == still(screen) and detect_text(agent.screen()) == detect_text(screen)
    assert len(agent.api.requests) == requests
    assert (agent.workdir / "first.txt").exists() and not (agent.workdir / "second.txt").exists()
    assert api.run("answer", agent.pane_id, "1", "--menu", second).returncode == ExitCode.DONE
    agent.wait_for("Both made.")
    assert (agent.workdir / "second.txt").exists() and len(agent.api.tool_results()) == 2


def test_answer_a_real_question_by_its_option_label(claude_fleet: ClaudeFleet, api: Api) -> None:
    agent = claude_fleet.start([Ask("Which colour?", ["Red", "Blue"]), Text("Blue it is.")])
    api.settled(agent, "idle")
    agent.submit("ask me")
    agent.wait_for("Enter to select")
    row = api.settled(agent, "question")
    assert row["needs"] == "question" and row["menu"]
    answered = api.run("answer", "--menu", row["menu"], agent.pane_id, "blue", "--json")
    assert answered.returncode == ExitCode.DONE, answered.stderr
    assert json.loads(answered.stdout)["answered"] == "2. Blue"
    agent.wait_for("Blue it is.")
    agent.wait_idle()
    assert "Blue" in str(agent.api.tool_results()) and agent.api.prompts() == ["ask me"]


def test_send_then_wait_until_done_is_a_supervisor_handing_out_a_task(claude_fleet: ClaudeFleet, api: Api) -> None:
    """What a supervisor runs: ``send`` the worker its task (typed once by the holder), then
    ``wait --until done`` until the worker has worked and is idle again.

    ``done`` counts a turn the wait sees (docs/reference.md), so the turn lasts until the wait
    has begun: a fixed 3 s turn was over before the second process made its first look on a
    loaded machine (send 2.5 s, then 3.5 s of the wait's start-up with 5 busy loops on 2 cores),
    and the wait rightly timed out. The turn ends (``release``) once the wait looks and has seen
    the published ``working``."""
    agent = claude_fleet.start([Slow(60.0, text="The parser is fixed and its tests pass.")])
    api.settled(agent, "idle")
    sent = api.run("send", agent.pane_id, "fix the parser", "--json")
    assert sent.returncode == ExitCode.DONE, sent.stderr
    waiting = api.start("wait", agent.pane_id, "--until", "done", "--timeout", "60", "--json")
    looking(waiting)  # its start-up and first listing are over, the turn still runs
    api.settled(agent, "working")
    time.sleep(2.0)  # four looks at the published working
    assert waiting.poll() is None, waiting.communicate()  # working: not done
    agent.api.release()
    out, err = waiting.communicate(timeout=90)
    assert waiting.returncode == ExitCode.DONE, err
    [item] = json.loads(out)["agents"]
    assert item["seen_working"] and item["state"] == "idle"
    assert "The parser is fixed and its tests pass." in agent.screen()
    assert agent.api.prompts() == ["fix the parser"]
