"""Usage per account on the real Claude Code (issue 37 items 1-3): two accounts, each its own
``CLAUDE_CONFIG_DIR`` and OAuth token, against the scripted API sending rising utilisation per
token. The recorder is installed per account by ``nbs-tui hooks install --account``; the user's
own status line still prints its text; ``nbs-tui usage --json`` says what the API sent;
``new --account auto`` lands on the account with headroom; uninstall restores the settings
byte for byte."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import libtmux

from nbs_tui.app import create_app
from nbs_tui.config import load_settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.fleet.usage import AccountUsage, usage_document
from nbs_tui.widgets.usage_screen import UsageScreen
from tests.headless_proc import Headless
from tests.realclaude.accounts_world import AccountsWorld, make_accounts_world
from tests.realclaude.harness import ClaudeFleet, Usage, usage_limit
from tests.realclaude.new_world import local_tmux, wait_until


def start(world: AccountsWorld, socket: str, folder: Path, name: str, account: str, prompt: str) -> str:
    done = world.nbs_tui(socket, "new", str(folder), "--name", name, "--account", account, "--prompt", prompt, "--json")
    assert done.returncode == 0, done.stderr
    pane: str = json.loads(done.stdout)["pane_id"]
    return pane


def cli_figures(usage: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {
        name: (
            (a.get("five_hour") or {}).get("used_percentage"), (a.get("five_hour") or {}).get("resets_at"),
            (a.get("seven_day") or {}).get("used_percentage"), a["cost_usd"], [g["pane"] for g in a["agents"]],
        )
        for name, a in usage.items()
    }  # fmt: skip


def dashboard_figures(world: AccountsWorld, socket: str) -> dict[str, tuple[Any, ...]]:
    """The dashboard's usage view (U) on this server, its figures as ``cli_figures`` has them."""
    settings = replace(
        load_settings(world.config, environ={}), server=ServerAddress(socket_name=socket), service="off",
        poll_disabled=True, action_log=world.state / "dashboard-actions.log", remember_fleet=False,
    )  # fmt: skip
    app = create_app(settings)
    shown: list[AccountUsage] = []

    async def run() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("U")
            for _ in range(100):
                if isinstance(app.screen, UsageScreen) and app.screen.accounts:
                    shown.extend(app.screen.accounts)
                    return
                await pilot.pause(0.1)

    asyncio.run(run())
    assert shown, "the usage view showed no account"
    document = {a["name"]: a for a in usage_document(shown)["accounts"]}
    return cli_figures(document)


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

    assert dashboard_figures(world, socket) == cli_figures(world.usage(socket))  # the dashboard agrees

    world.set_usage("a", 0.85, 0.30)  # rising: a goes over its 80 % cap
    wait_until(lambda: "❯" in tmux("capture-pane", "-p", "-t", alpha), 10)
    tmux("send-keys", "-t", alpha, "-l", "second for a")
    tmux("send-keys", "-t", alpha, "Enter")
    wait_until(lambda: shows("a", 85), 60, "a at 85 %")
    five = world.usage(socket)["a"]["five_hour"]
    assert five["burn_percent_per_hour"] > 0  # 30 -> 85 between two turns

    refused = world.nbs_tui(socket, "new", str(world.workdirs[3]), "--name", "delta", "--account", "a", "--prompt", "no")
    assert refused.returncode != 0 and "--account a: account a at its 5-hour cap: 85 % of 80 %" in refused.stderr
    gamma = start(world, socket, world.workdirs[2], "gamma", "auto", "where do I land")
    wait_until(lambda: bool(world.tokens_seen("where do I land")), 60, "gamma's prompt")
    assert world.tokens_seen("where do I land") == {"oauth-token-b"}, "auto must pick b: a is over its cap"
    assert gamma

    for name in ("a", "b"):
        done = world.nbs_tui(socket, "hooks", "uninstall", "--account", name)
        assert done.returncode == 0, done.stderr
        assert (world.accounts[name] / "settings.json").read_bytes() == world.settings_bytes[name]


def test_at_the_cap_the_account_s_agents_get_no_poll_and_after_the_reset_feeding_resumes_staggered(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    """The lease holder (here ``--headless``) polls every 3 s. Account a is over its 80 % cap
    until its window resets ~50 s after the start; b has headroom. b's agent is polled while a's
    two get nothing for many intervals; one needs-you line (an ``escalate`` with reason
    ``budget``) says so once; after the reset a's agents are polled again, 8 s apart."""
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    stagger = 8.0
    world = make_accounts_world(
        claude_fleet, tmp_path, caps={"a": "max_five_hour_percent = 80"}, extra_config=f"limit_resume_stagger = {stagger}"
    )
    for name in ("a", "b"):
        assert world.nbs_tui(socket, "hooks", "install", "--account", name).returncode == 0
    world.set_usage("a", 0.30, 0.20)  # under the cap while its agents start (no new start at a cap)
    world.set_usage("b", 0.10, 0.05)
    alpha1 = start(world, socket, world.workdirs[0], "alpha1", "a", "task alpha1")
    alpha2 = start(world, socket, world.workdirs[1], "alpha2", "a", "task alpha2")
    beta = start(world, socket, world.workdirs[2], "beta", "b", "task beta")
    wait_until(lambda: all(world.tokens_seen(f"task {n}") for n in ("alpha1", "alpha2", "beta")), 60, "the three prompts")
    tmux = local_tmux(socket)

    def answered(pane: str, times: int = 1) -> bool:
        return tmux("capture-pane", "-p", "-t", pane).count("Done.") >= times

    def sent(prompt: str) -> bool:
        return bool(world.tokens_seen(prompt))

    for pane in (alpha1, alpha2, beta):
        wait_until(partial(answered, pane), 30, f"{pane} answered")
    reset = time.time() + 45
    world.set_usage("a", 0.85, 0.30, five_hour_reset=reset)  # a's next turns report it over its cap
    for pane, prompt in ((alpha1, "more for alpha1"), (alpha2, "more for alpha2")):
        tmux("send-keys", "-t", pane, "-l", prompt)
        tmux("send-keys", "-t", pane, "Enter")
        wait_until(partial(sent, prompt), 30, f"{prompt!r} sent")
    for pane in (alpha1, alpha2):
        wait_until(partial(answered, pane, 2), 30, f"{pane} answered again")
    wait_until(lambda: (world.usage(socket)["a"].get("five_hour") or {}).get("used_percentage") == 85, 30, "a at 85 %")
    assert time.time() < reset - 20, "the setup took too long for the test's window"
    with Headless(["--config", str(world.config), "-L", socket, "--poll-interval", "3"], env=world.env()) as run:
        wait_until(lambda: len(run.find("poll", pane=beta, result="submitted")) >= 2, 60, "beta polled twice")
        assert time.time() < reset, "the cap must still hold here"
        for pane in (alpha1, alpha2):
            assert not run.find("poll", pane=pane), f"{pane} of the capped account was polled"
        budget = run.find("escalate", reason="budget")
        assert len(budget) == 1 and budget[0]["pane"] in (alpha1, alpha2), budget
        assert "account a at its 5-hour cap: 85 % of 80 %" in budget[0]["message"]
        listed = world.nbs_tui(socket, "agents", "--json")  # what the holder publishes, for scripts
        assert listed.returncode == 0, listed.stderr
        needs = {row["pane_id"]: row["needs"] for row in json.loads(listed.stdout)["agents"]}
        assert needs[budget[0]["pane"]] == "budget" and needs[beta] is None, needs
        wait_until(
            lambda: all(run.find("poll", pane=p, result="submitted") for p in (alpha1, alpha2)),
            reset - time.time() + 3 * stagger + 30, "a's agents polled again after the reset",
        )
        first = {p: run.find("poll", pane=p, result="submitted")[0]["time"] for p in (alpha1, alpha2)}
    assert min(first.values()) >= reset - 1, first
    assert abs(first[alpha1] - first[alpha2]) >= stagger - 1.5, f"not staggered: {first}"


def test_an_agent_burning_far_faster_than_its_peers_gets_a_needs_you_line_with_the_figure(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    """Three accounts, no caps. The API reports 400,000 input tokens for every reply to the loop
    account's token (a loop re-reading a huge context) and ~100 for the others; the holder polls
    every 3 s. The loop agent gets one ``escalate`` (reason ``burn``) with its figure, before any
    account is near a limit; its peers get none."""
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_accounts_world(claude_fleet, tmp_path, ("loop", "a", "b"))
    for name in world.accounts:
        assert world.nbs_tui(socket, "hooks", "install", "--account", name).returncode == 0
        world.set_usage(name, 0.05, 0.01)
    world.api.token_usage[world.tokens["loop"]] = Usage(input_tokens=400_000, output_tokens=50)
    loop = start(world, socket, world.workdirs[0], "looper", "loop", "task loop")
    peers = [start(world, socket, world.workdirs[i], f"peer{i}", name, f"task {name}") for i, name in ((1, "a"), (2, "b"))]
    with Headless(["--config", str(world.config), "-L", socket, "--poll-interval", "3"], env=world.env()) as run:
        wait_until(lambda: bool(run.find("escalate", reason="burn")), 90, "a burn alarm")
        time.sleep(4)  # a few more passes: said once
        alarms = run.find("escalate", reason="burn")
        assert [a["pane"] for a in alarms] == [loop], alarms
        assert alarms[0]["message"].startswith("burn: $") and "its peers' median" in alarms[0]["message"]
        assert "account loop" in alarms[0]["message"]
        assert all(not run.find("escalate", pane=p) for p in peers)


def test_a_usage_limit_screen_counts_in_the_account_s_usage(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    """The API answers a's agent with a 429 usage limit (the unified headers, 5-hour, reset in
    2 hours) while the status line last said 40 %: Claude Code shows its limit screen; the
    holder reads it and writes that window full until the reset to the usage spool, so
    ``usage --json`` says 100 % with the screen's reset (to the minute the screen shows)."""
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    reset = (int(time.time()) // 60 + 121) * 60  # on a minute: the screen shows minutes
    world = make_accounts_world(claude_fleet, tmp_path, ("a",), scenario=["First.", usage_limit(reset, "five_hour", times=None)])
    assert world.nbs_tui(socket, "hooks", "install", "--account", "a").returncode == 0
    world.set_usage("a", 0.40, 0.10)
    pane = start(world, socket, world.workdirs[0], "alpha", "a", "task alpha")
    wait_until(lambda: (world.usage(socket)["a"].get("five_hour") or {}).get("used_percentage") == 40, 60, "a at 40 %")
    tmux = local_tmux(socket)
    tmux("send-keys", "-t", pane, "-l", "more please")
    tmux("send-keys", "-t", pane, "Enter")
    wait_until(lambda: "limit" in tmux("capture-pane", "-p", "-t", pane), 60, "the limit screen")
    with Headless(["--config", str(world.config), "-L", socket, "--no-poll"], env=world.env()) as run:
        wait_until(lambda: bool(run.find("limit", pane=pane, result="limited")), 30, "the holder saw the limit")
        wait_until(lambda: (world.usage(socket)["a"].get("five_hour") or {}).get("used_percentage") == 100, 30, "a at 100 %")
    five = world.usage(socket)["a"]["five_hour"]
    assert abs(five["resets_at"] - reset) <= 60, (five, reset)


def test_an_agent_at_its_daily_cap_is_held_until_the_operator_lifts_it(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    """``agent_max_cost_usd_per_day = 1``: the loop agent's first turn costs more (400,000 input
    tokens), so the holder feeds it nothing while its peer is polled; the operator's lift (the
    pane option the dashboard's ``$`` sets) is read by the holder, logged, and the agent is
    polled again. Only that agent was held: its account has no cap."""
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_accounts_world(claude_fleet, tmp_path, ("loop", "b"), budget="agent_max_cost_usd_per_day = 1.0")
    for name in world.accounts:
        assert world.nbs_tui(socket, "hooks", "install", "--account", name).returncode == 0
        world.set_usage(name, 0.05, 0.01)
    world.api.token_usage[world.tokens["loop"]] = Usage(input_tokens=400_000, output_tokens=50)
    loop = start(world, socket, world.workdirs[0], "looper", "loop", "task loop")
    peer = start(world, socket, world.workdirs[1], "peer", "b", "task b")
    wait_until(lambda: world.tokens_seen("task loop") and world.tokens_seen("task b"), 60, "both prompts")
    wait_until(lambda: world.usage(socket)["loop"]["cost_usd"] > 1.0, 60, "the loop agent over $1")
    with Headless(["--config", str(world.config), "-L", socket, "--poll-interval", "3"], env=world.env()) as run:
        wait_until(lambda: len(run.find("poll", pane=peer, result="submitted")) >= 2, 60, "the peer polled twice")
        assert not run.find("poll", pane=loop), "the agent at its daily cap was polled"
        local_tmux(socket)("set-option", "-p", "-t", loop, "@nbs_budget_lift", "dashboard")
        wait_until(lambda: bool(run.find("poll", pane=loop, result="submitted")), 30, "the lifted agent polled")
    log = (world.state / "nbs-tui" / "actions.log").read_text()
    assert '"action":"budget lift"' in log and f'"pane_id":"{loop}"' in log
