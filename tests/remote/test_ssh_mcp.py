"""``nbs-tui mcp --host`` through the ssh lab, with the MCP SDK's own client: the tools list and
read another host's agent (its own nbs-tui, as ``agents --host`` does), a failure there is a
tool error with the host's reason, and ``stop`` stops the agent on its host."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import TextContent

from tests.remote.conftest import SshLab
from tests.remote.helpers import REPO, far_agent_at_a_prompt, far_nbs_tui
from tests.tmux.fleet_helpers import wait_for


@pytest.mark.service_auto
def test_the_mcp_tools_list_read_and_stop_an_agent_on_another_host(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    pane = far_agent_at_a_prompt(a, tmp_path)  # its session and version are known only on hosta
    there = far_nbs_tui(ssh_lab, tmp_path)
    target = f"hosta/default/{pane}"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "nbs_tui", "--config", str(there.config), "mcp", "--host", "hosta"], env=there.env,
        cwd=str(REPO),
    )  # fmt: skip

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:

            async def listed() -> list[dict[str, object]]:
                with anyio.fail_after(45):
                    while True:
                        result = await client.call_tool("agents", {})
                        assert not result.is_error, result.content
                        rows: list[dict[str, object]] = (result.structured_content or {})["agents"]
                        if rows:
                            return rows
                        await anyio.sleep(0.5)

            (agent,) = await listed()
            assert agent["target"] == target and agent["state"] == "permission"
            read = await client.call_tool("read", {"target": target})
            assert not read.is_error and read.structured_content is not None
            assert "Do you want to proceed?" in read.structured_content["text"]
            missing = await client.call_tool("read", {"target": "hosta/default/%999"})
            (block,) = missing.content
            assert missing.is_error and isinstance(block, TextContent)
            assert block.text == "no such agent (exit 3): no such agent: hosta/default/%999"
            stopped = await client.call_tool("stop", {"target": target})
            assert not stopped.is_error, stopped.content
            assert stopped.structured_content is not None and stopped.structured_content["pane_id"] == pane

    try:
        anyio.run(session)
        wait_for(lambda: pane not in a.tmux("list-panes", "-a", "-F", "#{pane_id}", check=False).split(), 20)
    finally:
        there.stop_service()
