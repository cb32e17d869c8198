"""``nbs-tui mcp`` (issue 36, item 2) on a real tmux server with the real Claude Code CLI against
the scripted API, with two clients: the MCP SDK's own client over stdio, and Claude Code itself,
a supervisor agent given the server, whose scripted replies call the nbs tools.

Each tool's result is the JSON document of the command's ``--json``; a command's failure is a tool
error carrying the reason. A worker's prompt given through the tools reaches its API once.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import libtmux
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, TextContent

from tests.realclaude.harness import ClaudeFleet, Slow, Text, ToolUse
from tests.realclaude.new_world import REPO, NewAgentWorld, make_world, wait_until
from tests.realclaude.test_fleet_api_e2e import api

pytestmark = [pytest.mark.realclaude, pytest.mark.slow, pytest.mark.service_auto]


def mcp_argv(world: NewAgentWorld, socket: str) -> list[str]:
    """``nbs-tui --config CONFIG -L SOCKET mcp``, as a client launches it."""
    return ["-m", "nbs_tui", "--config", str(world.config), "-L", socket, "mcp"]


def mcp_env(world: NewAgentWorld) -> dict[str, str]:
    """The world's state and config folders, the service allowed, no polls typed (the worker's
    API then sees only its prompt)."""
    return {
        "XDG_STATE_HOME": str(world.state),
        "XDG_CONFIG_HOME": str(world.state / "config"),
        "NBS_SERVICE": "auto",
        "NBS_POLL_DISABLE": "1",
        "PYTHONPATH": str(REPO),
    }


@asynccontextmanager
async def mcp_client(world: NewAgentWorld, socket: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=mcp_argv(world, socket), env=mcp_env(world), cwd=str(REPO)
    )
    async with Client(params, read_timeout_seconds=150) as client:
        yield client


def mcp_server_answered(world: NewAgentWorld) -> bool:
    """The world's ``nbs-tui mcp`` (started by a Claude Code) has written to its client: it
    answered the handshake. Claude Code waits only seconds for a server before its first turn,
    and a loaded machine's first turn once came before the nbs tools were listed ("No such tool
    available: mcp__nbs__start")."""
    wanted = ["--config", str(world.config)]
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().decode().split("\0")
            if argv[-2:] == ["mcp", ""] and any(argv[i : i + 2] == wanted for i in range(len(argv))):
                io = dict(line.split(": ") for line in (proc / "io").read_text().splitlines())
                return int(io["wchar"]) > 0
        except (OSError, ValueError):
            continue  # not ours, or gone
    return False


def text(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


def document(result: CallToolResult) -> dict[str, Any]:
    """The tool's JSON document: its text, which is also its structured content."""
    assert not result.is_error, text(result)
    out = json.loads(text(result))
    assert out == result.structured_content
    assert isinstance(out, dict)
    return out


def said(tool_result: dict[str, Any]) -> str:
    """The text of a ``tool_result`` block Claude Code sent its API (a string, or text blocks)."""
    content = tool_result["content"]
    if isinstance(content, str):
        return content
    return "".join(block["text"] for block in content if block.get("type") == "text")


def steady(doc: dict[str, Any]) -> dict[str, Any]:
    """An agent's row without the fields that tick with the clock."""
    return {k: v for k, v in doc.items() if k not in ("quiet_seconds", "since")}


@pytest.mark.timeout(300)
def test_the_sdk_client_starts_sends_to_lists_reads_restarts_and_stops_a_real_agent_with_the_commands_json(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "alpha", [Slow(8, "Parser built."), Text("The lexer next.")], trust=True)

    async def session() -> None:
        async with mcp_client(world, socket) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"agents", "read", "send", "wait", "answer", "start", "stop", "restart"} <= names

            bad = await client.call_tool("start", {"directory": str(tmp_path / "nowhere"), "name": "alpha"})
            assert bad.is_error and text(bad).startswith("bad input (exit 4): ") and "does not exist" in text(bad)
            assert bad.structured_content and bad.structured_content["exit_code"] == 4

            started = document(
                await client.call_tool(
                    "start", {"directory": str(world.workdir), "name": "alpha", "prompt": "build the parser"}
                )
            )
            assert started["name"] == "alpha" and started["prompt_submitted"] is True
            pane = started["pane_id"]

            busy = await client.call_tool("send", {"target": "alpha", "text": "also add tests"})  # it works 8 s
            assert busy.is_error and text(busy).startswith("refused (exit 2): "), text(busy)
            assert busy.structured_content and busy.structured_content["exit_code"] == 2

            waited = document(await client.call_tool("wait", {"targets": ["alpha"], "until": "done", "timeout": 90}))
            assert waited["timed_out"] is False and [a["reached"] for a in waited["agents"]] == [True]
            timeout = await client.call_tool("wait", {"targets": ["alpha"], "until": "needs", "timeout": 1})
            assert timeout.is_error and text(timeout).startswith("timeout (exit 124): timed out after 1 s waiting until needs\n")
            assert timeout.structured_content and timeout.structured_content["done"]["timed_out"] is True
            no_menu = await client.call_tool("answer", {"target": "alpha", "choice": "1"})
            assert no_menu.is_error and text(no_menu).startswith("refused (exit 2): ") and "no menu" in text(no_menu)

            async def listed_idle() -> dict[str, Any]:
                with anyio.fail_after(90):
                    while True:
                        rows = document(await client.call_tool("agents", {}))["agents"]
                        row = next((r for r in rows if r["pane_id"] == pane), None)
                        if row and row["state"] == "idle" and row["model"]:
                            return dict(row)
                        await anyio.sleep(0.5)

            row = await listed_idle()
            sent = document(await client.call_tool("send", {"target": "alpha", "text": "and what next?"}))
            assert sent["result"] == "submitted" and sent["agent"]["pane_id"] == pane
            row = await listed_idle()
            assert row["window_name"] == "alpha" and row["target"] == f"local/L-{socket}/{pane}"
            assert row["session_id"] == started["session_id"]

            read = document(await client.call_tool("read", {"target": "alpha"}))
            assert read["state"] == "idle" and "The lexer next." in read["text"]
            # the same document as the command's --json, but for the clock
            cli = await anyio.to_thread.run_sync(lambda: api(world, socket, "read", "alpha", "--json"))
            assert cli.returncode == 0, cli.stderr
            cli_read = json.loads(cli.stdout)
            assert steady(cli_read["agent"]) == steady(read["agent"])  # the logo animates: not the text
            assert set(cli_read) == set(read) and cli_read["state"] == read["state"]

            missing = await client.call_tool("read", {"target": "nosuch"})
            assert missing.is_error and text(missing) == "no such agent (exit 3): no such agent: nosuch"

            restarted = document(await client.call_tool("restart", {"target": row["target"]}))
            assert restarted == {
                "pane_id": pane, "target": restarted["target"], "session_id": started["session_id"], "stopped": None
            }  # fmt: skip
            await anyio.to_thread.run_sync(lambda: wait_until(lambda: _idle(world, socket, {pane}), 60, "back idle"))
            stopped = document(await client.call_tool("stop", {"target": "alpha"}))
            assert stopped["pane_id"] == pane and stopped["stopped_by"] == "/exit"

    try:
        anyio.run(session)
        assert world.api.prompts() == ["build the parser", "and what next?"]  # each once; the refused one never
    finally:
        api(world, socket, "service", "stop")


def _idle(world: NewAgentWorld, socket: str, names: set[str]) -> bool:
    """Every agent named (window name, or pane id) is listed idle by ``nbs-tui agents --json``."""
    done = api(world, socket, "agents", "--json")
    rows = json.loads(done.stdout)["agents"] if done.returncode == 0 else []
    idle = {name for row in rows if row["state"] == "idle" for name in (row["window_name"], row["pane_id"])}
    return names <= idle


@pytest.mark.timeout(300)
def test_a_claude_code_supervisor_starts_two_workers_through_the_nbs_tools_and_sees_a_refusal_as_a_tool_error(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    # the parser's turn outlasts the docs worker's start: the send to it is refused as working
    turns = [Slow(20, "Parser built."), Slow(6, "Docs written.")]
    world = make_world(claude_fleet, tmp_path, "crew", turns, trust=True)  # the workers' HOME and API
    docs = world.workdir.parent / "docs"
    docs.mkdir()
    config = tmp_path / "mcp.json"  # the form `claude mcp add` writes, given with --mcp-config
    server_entry = {"command": sys.executable, "args": mcp_argv(world, socket), "env": mcp_env(world)}
    config.write_text(json.dumps({"mcpServers": {"nbs": server_entry}}))
    supervisor = claude_fleet.start(
        [
            ToolUse("mcp__nbs__start", {"directory": str(world.workdir), "name": "parser", "prompt": "build the parser"}),
            ToolUse("mcp__nbs__start", {"directory": str(docs), "name": "docs", "prompt": "write the docs"}),
            ToolUse("mcp__nbs__send", {"target": "parser", "text": "also add tests"}),
            ToolUse("mcp__nbs__wait", {"targets": ["parser", "docs"], "until": "idle", "timeout": 120}),
            ToolUse("mcp__nbs__read", {"target": "nosuch"}),
            Text("Both workers are done."),
        ],
        name="supervisor",
        settings={"permissions": {"allow": ["mcp__nbs"]}},  # no permission prompt for the nbs tools
        args=["--mcp-config", str(config)],
    )
    try:
        wait_until(lambda: mcp_server_answered(world), 60, "the nbs MCP server's handshake")
        supervisor.submit("start a worker on the parser and one on the docs")
        supervisor.wait_for("Both workers are done.", timeout=180)
        parser, docs_started, refused, waited, missing = supervisor.api.tool_results()
        for result, name in ((parser, "parser"), (docs_started, "docs")):
            assert not result.get("is_error"), result
            started = json.loads(said(result))  # new --json's document, as the model reads it
            assert set(started) == {"pane_id", "target", "name", "session_id", "prompt_submitted", "answered"}
            assert started["name"] == name and started["prompt_submitted"] is True
        assert refused.get("is_error") is True and said(refused).startswith("refused (exit 2): "), refused
        assert not waited.get("is_error") and json.loads(said(waited))["timed_out"] is False
        assert missing.get("is_error") is True
        assert said(missing).startswith("no such agent (exit 3): no such agent: nosuch"), missing
        # the wait saw both idle after their turns: a prompt typed twice, or an Enter pressed again,
        # would have been queued by Claude Code and sent by then
        worker_prompts = sorted(world.api.prompts())
        assert worker_prompts == ["build the parser", "write the docs"], worker_prompts  # each once
        assert world.api.count_prompts("also add tests") == 0  # refused: nothing typed
        assert supervisor.api.count_prompts("start a worker") == 1
    finally:
        api(world, socket, "service", "stop")


@pytest.mark.timeout(300)
def test_the_queue_tools_hand_a_task_to_a_real_idle_agent_once(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "beta", [Text("Ready."), Slow(4, "Lexer built.")], trust=True)

    async def session() -> None:
        async with mcp_client(world, socket) as client:
            started = document(
                await client.call_tool("start", {"directory": str(world.workdir), "name": "beta", "prompt": "get ready"})
            )
            paused = document(await client.call_tool("queue_pause", {}))
            assert paused["paused"] is True
            added = document(
                await client.call_tool("queue_add", {"text": "build the lexer", "folder": str(world.workdir)})
            )
            task = added["task"]["id"]
            assert added["task"]["state"] == "queued"
            listed = document(await client.call_tool("queue_ls", {}))
            assert [t["id"] for t in listed["tasks"]] == [task] and listed["paused"] is True
            assert document(await client.call_tool("queue_resume", {}))["paused"] is False

            async def ended() -> dict[str, Any]:
                with anyio.fail_after(120):
                    while True:
                        (row,) = document(await client.call_tool("queue_ls", {}))["tasks"]
                        if row["state"] in ("done", "failed", "cancelled"):
                            return dict(row)
                        await anyio.sleep(0.5)

            done = await ended()
            assert done["state"] == "done" and done["pane"] == started["pane_id"] and done["handouts"] == 1
            refused = await client.call_tool("queue_cancel", {"task_id": task})
            assert refused.is_error and text(refused) == f"refused (exit 2): task {task} is already done"
            bad = await client.call_tool("queue_add", {"text": "x", "worker": "w"})
            assert bad.is_error and text(bad).startswith("bad input (exit 4): ")

    try:
        anyio.run(session)
        assert world.api.prompts() == ["get ready", "build the lexer"]  # the task typed once
    finally:
        api(world, socket, "service", "stop")
