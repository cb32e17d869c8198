"""``nbs-tui send`` on the real Claude Code CLI and its scripted API: the command starts the
server's service (no dashboard open), whose sidecar pastes the text whole and submits it once.
A multi-line text and a long one (Claude Code's ``[Pasted text #N +K lines]`` chip) each reach
the API exactly once, as one user message; a send to an agent at a permission prompt is
refused (exit 2) and changes nothing on its screen and nothing at the API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest

from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.fleet_api.exit_codes import ExitCode
from nbs_tui.core.sidecar.delivery_rules import DeliveryResult, mark_text
from nbs_tui.sidecar.heartbeat import LeaseHeartbeat
from nbs_tui.sidecar.live_pane import joined
from nbs_tui.sidecar.pane_options import typing_guard
from nbs_tui.sidecar.send_channel import SendChannel
from nbs_tui.tmux.commands import TmuxServerCommands
from tests.headless_proc import Headless
from tests.realclaude.harness import Bash, ClaudeFleet, Text

pytestmark = [pytest.mark.realclaude, pytest.mark.slow, pytest.mark.service_auto]

REPO = Path(__file__).resolve().parents[2]


class Api:
    """The fleet API as a script runs it on the test's server: the service allowed, no polls
    typed (the scripted API then sees only what was sent), its state under ``home``."""

    def __init__(self, server: libtmux.Server, home: Path) -> None:
        self.socket = str(server.socket_name)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "CLAUDE", "NBS_"))}
        env.update(
            HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".state"),
            NBS_SERVICE="auto", NBS_POLL_DISABLE="1",
        )  # fmt: skip
        self.env = env

    def __call__(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "nbs_tui", *argv, "-L", self.socket],
            capture_output=True, text=True, timeout=180, env=self.env, cwd=REPO, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip


def still(screen: str) -> str:
    """The screen without what Claude Code animates by itself (the tool call's blinking ``●``)."""
    return screen.replace("●", " ")


@pytest.fixture
def api(server: libtmux.Server, tmp_path: Path) -> Iterator[Api]:
    running = Api(server, tmp_path / "nbs")
    yield running
    running("service", "stop")


def test_a_multi_line_and_a_long_send_each_reach_the_api_once_as_one_message(
    claude_fleet: ClaudeFleet, api: Api, tmp_path: Path
) -> None:
    agent = claude_fleet.start([Text("First done."), Text("Second done.")], name="worker")
    short = "Fix the parser.\nThen run the tests;\n  report 'ok' & stop."
    done = api("send", "worker", short, "--json")
    assert done.returncode == ExitCode.DONE, done.stderr
    out = json.loads(done.stdout)
    assert out["result"] == "submitted" and out["lines"] == 3 and out["agent"]["pane_id"] == agent.pane_id
    agent.wait_for("First done.", timeout=60)
    assert agent.api.prompts() == [short]  # whole, one message, its newlines kept

    long_text = "\n".join(f"{n}. check module_{n}.py for the old API and port it" for n in range(1, 41))
    task = tmp_path / "task.md"
    task.write_text(long_text + "\n")
    done = api("send", agent.pane_id, "--file", str(task), "--wait-idle", "60", "--json")
    assert done.returncode == ExitCode.DONE, done.stderr
    assert json.loads(done.stdout)["characters"] == len(long_text)
    agent.wait_for("Second done.", timeout=60)
    time.sleep(3)  # a second submit would come a little later: count again
    prompts = agent.api.prompts()
    assert len(prompts) == 2 and prompts[0] == short, prompts
    assert long_text in prompts[1]  # inside Claude Code's own <pasted_content> markers, as a person's paste
    assert agent.api.count_prompts("1. check module_1.py") == 1
    assert detect_text(agent.screen()).input_text == ""


def test_a_send_to_an_agent_at_a_permission_prompt_changes_nothing(claude_fleet: ClaudeFleet, api: Api) -> None:
    agent = claude_fleet.start([Bash("touch made.txt", "Make a file"), Text("Made.")], name="asker")
    agent.submit("make the file")
    agent.wait_for("Do you want to proceed?", timeout=60)
    served = api("agents", "--json")  # starts the service; wait until it has read the prompt
    assert served.returncode == 0, served.stderr
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listed = json.loads(api("agents", "--json").stdout)["agents"]
        if listed and listed[0]["state"] == "permission":
            break
        time.sleep(0.5)
    requests = len(agent.api.requests)
    before = agent.screen()
    refused = api("send", "asker", "yes, and also delete everything")
    assert refused.returncode == ExitCode.REFUSED, refused.stderr
    assert "refused (permission)" in refused.stderr
    time.sleep(3)
    assert still(agent.screen()) == still(before)
    assert len(agent.api.requests) == requests and agent.api.prompts() == ["make the file"]
    assert not (agent.workdir / "made.txt").exists()


def test_a_long_send_a_dead_holder_pasted_is_erased_by_the_next_and_never_submitted(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    """A holder pastes a 40-line send as its sidecar does (Claude Code shows it as a chip) and
    dies before Enter. The next holder (a real ``--headless``) finds the chip in the box, knows
    it for that request's text, erases it with one key, and answers: nothing submitted."""
    agent = claude_fleet.start([Text("Never.")], name="worker")
    commands = TmuxServerCommands.for_server(ServerAddress(socket_name=str(server.socket_name)))
    channel = SendChannel(commands)
    text = "\n".join(f"{n}. port module_{n}.py" for n in range(1, 41))
    request = channel.post(agent.pane_id, text, time.time() + 600)
    assert request is not None
    dead = LeaseHeartbeat(commands)
    dead.tick()
    assert dead.holding
    guard = joined(typing_guard(dead.token, agent.pane_id, mark_text(text)), channel.typing_fence(request, agent.pane_id, dead.token))
    assert commands.paste(agent.pane_id, text, guard=guard)
    agent.wait_for(lambda screen: detect_text(screen).input_text == "[Pasted text #1 +39 lines]", timeout=10)
    dead.stop(release=False)  # dies before its Enter

    api = Api(server, tmp_path / "nbs")
    with Headless(["-L", api.socket], env=api.env) as holder:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not ((a := channel.answer(agent.pane_id, request)) and a.final):
            time.sleep(0.2)
        answer = channel.answer(agent.pane_id, request)
        assert answer is not None and answer.delivery is not None, holder.events
        assert answer.delivery.result is DeliveryResult.REFUSED and "erased" in answer.delivery.message, answer
        agent.wait_for(lambda screen: detect_text(screen).input_text == "", timeout=10)
        time.sleep(3)
    assert agent.api.prompts() == []  # nothing reached the model
    assert holder.find("send", pane=agent.pane_id, result="typed") == []
