"""The dashboard's lifecycle keys on another host's panes, through the ssh lab with the real
Claude Code CLI (issue 29): a dashboard of hosta (``--host``) starts an agent there from the form
(``c``: checked on hosta, its trust dialog answered, its prompt at the API once), restarts it in
place (``S``: same pane, ``claude --resume`` of the session read from hosta's status file) and
stops it (``X``), every tmux command and process read through hosta's ssh connection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Input, TextArea

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.widgets.confirm_screen import ConfirmScreen
from nbs_tui.widgets.new_agent_form import NewAgentScreen
from tests.app.helpers import wait_for
from tests.realclaude.conftest import claude_binary, claude_fleet  # noqa: F401  (fixtures)
from tests.realclaude.harness import ClaudeFleet, Text
from tests.realclaude.new_world import make_world
from tests.remote.conftest import SshLab
from tests.remote.helpers import new_session


@pytest.mark.timeout(240)
async def test_form_restart_and_stop_on_a_remote_hosts_pane(
    ssh_lab: SshLab, claude_fleet: ClaudeFleet, tmp_path: Path  # noqa: F811
) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "work")
    world = make_world(claude_fleet, tmp_path, "far", [Text("Noted.")])
    log = tmp_path / "actions.log"
    settings = Settings(
        hosts=(HostSpec("hosta", "hosta", ssh_lab.ssh_options),), claude_command=str(world.wrapper),
        claude_home=world.home / ".claude", action_log=log, hook_spool=tmp_path / "hooks.jsonl", service="off",
        poll_disabled=True,
    )  # fmt: skip
    app = create_app(settings, control_plane=False)

    def lines(action: str) -> list[dict[str, object]]:
        text = log.read_text() if log.exists() else ""
        return [r for r in map(json.loads, text.splitlines()) if r.get("action") == action]

    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: len(app.state.panes) >= 1, 30, what="hosta's fleet")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, NewAgentScreen) and bool(app.screen.query("#new-folder")), what="the form")
        form = app.screen
        assert isinstance(form, NewAgentScreen)
        assert form.server.startswith("hosta: ")  # its title says where it starts
        form.query_one("#new-folder", Input).value = str(world.workdir)
        form.query_one("#new-name", Input).value = "far"
        form.query_one("#new-prompt", TextArea).load_text("remember the word sloe")
        form.query_one("#new-name", Input).focus()
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, NewAgentScreen), what="the form closed")
        await wait_for(pilot, lambda: world.api.prompts() == ["remember the word sloe"], 60, what="the prompt once")
        await wait_for(pilot, lambda: bool(lines("new")), 20, what="the new line")
        (started,) = lines("new")
        assert started["outcome"] == "sent", started
        pane_id = str(started["pane_id"])
        assert a.tmux("display-message", "-p", "-t", pane_id, "#{window_name}").strip() == "far"  # on hosta
        statuses = [json.loads(p.read_text()) for p in (world.home / ".claude" / "sessions").glob("*.json")]
        (session_id,) = {s["sessionId"] for s in statuses}

        await wait_for(pilot, lambda: pane_id in app.state.pane_by_id, 20, what="the agent listed")
        app.dashboard.select_pane(pane_id)
        await pilot.press("S")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: bool(lines("restart")), 90, what="restarted")
        (restarted,) = lines("restart")
        assert (restarted["outcome"], restarted["sent"], restarted["pane_id"]) == (
            "sent", f"claude --resume {session_id}", pane_id,
        ), restarted  # fmt: skip
        assert "--resume" in a.tmux("display-message", "-p", "-t", pane_id, "#{pane_start_command}")

        await pilot.press("X")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: bool(lines("stop")), 60, what="stopped")
    (stopped,) = lines("stop")
    assert stopped["outcome"] == "sent" and stopped["sent"] in ("/exit", "Ctrl-C"), stopped
    assert pane_id not in a.tmux("list-panes", "-a", "-F", "#{pane_id}")


def test_stop_on_a_host_from_the_command_line(ssh_lab: SshLab, tmp_path: Path) -> None:
    """``nbs-tui --host hosta stop PANE``: the Claude Code process found on hosta (a stand-in with
    a status file there), Ctrl-C sent through hosta's tmux, the stop in hosta's lifecycle ring."""
    import os
    import subprocess
    import sys

    from nbs_tui.core.sidecar.relay import LIFECYCLE_OPTION, parse_ring
    from tests.realclaude.new_world import REPO

    a = ssh_lab.hosts["hosta"]
    config = tmp_path / "claude-config"
    (config / "sessions").mkdir(parents=True)
    script = tmp_path / "stand-in.sh"
    script.write_text(
        f'printf \'{{"pid": %s, "sessionId": "s-far"}}\' $$ > {config}/sessions/$$.json\nexec sleep 600\n'
    )
    new_session(a, "keep")  # the server outlives the agent's pane (its lifecycle ring is read after)
    pane = new_session(a, "far", f"env CLAUDE_CONFIG_DIR={config} sh {script}")
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[[hosts]]\nname = "hosta"\nssh = "hosta"\nssh_options = ["-F", "{ssh_lab.config}"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "CLAUDE", "NBS_"))}
    env.update(XDG_STATE_HOME=str(tmp_path / "state"), NBS_SERVICE="off")
    done = subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(hosts), "--host", "hosta", "stop", pane, "--yes", "--json"],
        capture_output=True, text=True, timeout=60, env=env, cwd=REPO, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stopped_by"] == "Ctrl-C"
    assert pane not in a.tmux("list-panes", "-a", "-F", "#{pane_id}", check=False)
    (told,) = parse_ring(a.tmux("display-message", "-p", f"#{{{LIFECYCLE_OPTION}}}"))
    assert told.kind == "stop" and dict(told.data)["pane"] == pane
