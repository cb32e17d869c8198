"""Usage per account on the real Claude Code (issue 37 items 1-3): two accounts, each its own
``CLAUDE_CONFIG_DIR`` and OAuth token, against the scripted API sending rising utilisation per
token. The recorder is installed per account by ``nbs-tui hooks install --account``; the user's
own status line still prints its text; ``nbs-tui usage --json`` says what the API sent;
``new --account auto`` lands on the account with headroom; uninstall restores the settings
byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import libtmux

from tests.realclaude.accounts_world import AccountsWorld, make_accounts_world
from tests.realclaude.harness import ClaudeFleet
from tests.realclaude.new_world import local_tmux, wait_until


def start(world: AccountsWorld, socket: str, folder: Path, name: str, account: str, prompt: str) -> str:
    done = world.nbs_tui(socket, "new", str(folder), "--name", name, "--account", account, "--prompt", prompt, "--json")
    assert done.returncode == 0, done.stderr
    pane: str = json.loads(done.stdout)["pane_id"]
    return pane


def test_usage_per_account_follows_the_api_and_auto_goes_where_there_is_headroom(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_accounts_world(claude_fleet, tmp_path, caps={"a": "max_five_hour_percent = 80"})
    for name in ("a", "b"):
        done = world.nbs_tui(socket, "hooks", "install", "--account", name)
        assert done.returncode == 0, done.stderr
        assert "status-line usage recorder" in done.stdout
    world.set_usage("a", 0.30, 0.20)
    world.set_usage("b", 0.10, 0.05)
    alpha = start(world, socket, world.workdirs[0], "alpha", "a", "first for a")
    start(world, socket, world.workdirs[1], "beta", "b", "first for b")
    wait_until(lambda: world.tokens_seen("first for a") == {"oauth-token-a"}, 60, "a's prompt under a's token")
    wait_until(lambda: world.tokens_seen("first for b") == {"oauth-token-b"}, 60, "b's prompt under b's token")

    def shows(name: str, five: float) -> bool:
        account = world.usage(socket).get(name, {})
        return (account.get("five_hour") or {}).get("used_percentage") == five

    wait_until(lambda: shows("a", 30) and shows("b", 10), 60, "usage --json with a at 30 % and b at 10 %")
    usage = world.usage(socket)
    assert usage["a"]["kind"] == "subscription" and usage["a"]["config_dir"] == str(world.accounts["a"])
    assert usage["a"]["seven_day"]["used_percentage"] == 20 and usage["b"]["seven_day"]["used_percentage"] == 5
    assert [agent["pane"] for agent in usage["a"]["agents"]] == [alpha]
    # The user's own status line still prints its text under the box.
    tmux = local_tmux(socket)
    wait_until(lambda: "MINE " + claude_fleet.binary.version in tmux("capture-pane", "-p", "-t", alpha), 30, "the user's status line")

    world.set_usage("a", 0.85, 0.30)  # rising: a goes over its 80 % cap
    wait_until(lambda: "❯" in tmux("capture-pane", "-p", "-t", alpha), 10)
    tmux("send-keys", "-t", alpha, "-l", "second for a")
    tmux("send-keys", "-t", alpha, "Enter")
    wait_until(lambda: shows("a", 85), 60, "a at 85 %")
    five = world.usage(socket)["a"]["five_hour"]
    assert five["burn_percent_per_hour"] > 0  # 30 -> 85 between two turns

    gamma = start(world, socket, world.workdirs[2], "gamma", "auto", "where do I land")
    wait_until(lambda: bool(world.tokens_seen("where do I land")), 60, "gamma's prompt")
    assert world.tokens_seen("where do I land") == {"oauth-token-b"}, "auto must pick b: a is over its cap"
    assert gamma

    for name in ("a", "b"):
        done = world.nbs_tui(socket, "hooks", "uninstall", "--account", name)
        assert done.returncode == 0, done.stderr
        assert (world.accounts[name] / "settings.json").read_bytes() == world.settings_bytes[name]
