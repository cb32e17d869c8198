"""``nbs-tui mcp``'s tool table and how a tool's document or failure reaches an MCP client
(`nbs_tui.fleet_api.mcp_server`), through the SDK's own client connected in-process. The tools on
a real fleet: tests/realclaude/test_mcp_e2e.py."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult, TextContent

from nbs_tui.config import Settings
from nbs_tui.core.fleet.agent_spec import SpecError
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError
from nbs_tui.fleet_api.lifecycle_documents import CommandFailed
from nbs_tui.fleet_api.mcp_server import build_server
from nbs_tui.fleet_api.mcp_tools import TOOLS, FleetTool


def test_nbs_tui_help_does_not_import_the_mcp_sdk() -> None:
    """The SDK (and pydantic under it) costs start time: only ``nbs-tui mcp`` imports it."""
    probe = (
        "import sys\n"
        "from nbs_tui.cli import build_parser\n"
        "build_parser().format_help()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'pydantic')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_every_tool_describes_its_own_parameters_and_takes_the_settings_first(tool: FleetTool) -> None:
    parameters = list(inspect.signature(tool.document).parameters)
    assert parameters[0] == "settings"
    assert set(tool.parameters) <= set(parameters[1:]), f"{tool.name}: described but not taken"
    assert tool.description


def test_the_tool_names_are_the_fleet_api_commands() -> None:
    names = [tool.name for tool in TOOLS]
    assert len(names) == len(set(names))
    assert {"agents", "read", "send", "wait", "answer", "diff", "usage", "start", "stop", "restart"} <= set(names)
    assert {"queue_add", "queue_ls", "queue_cancel", "queue_pause", "queue_resume"} <= set(names)


def _refused(settings: Settings, target: str) -> dict[str, Any]:
    raise FleetApiError(ExitCode.REFUSED, f"{target} is working")


def _echo(settings: Settings, target: str, count: int = 1) -> dict[str, Any]:
    return {"target": target, "count": count, "said": "é"}


def _bad(settings: Settings) -> dict[str, Any]:
    raise SpecError(["DIR /x does not exist", "--model is empty"])


def _half_done(settings: Settings) -> dict[str, Any]:
    raise CommandFailed("alpha in work:1.0 (%3): stopped at a login screen", {"pane_id": "%3", "stopped": "login"})


def _waited(settings: Settings, timeout: float) -> dict[str, Any]:
    return {"until": "done", "timeout": timeout, "timed_out": True, "agents": []}


def _call(name: str, arguments: dict[str, Any]) -> CallToolResult:
    tools = (
        FleetTool("wait", _waited, "times out", failed=next(t.failed for t in TOOLS if t.name == "wait")),
        FleetTool("refused", _refused, "always refuses", {"target": "the agent"}),
        FleetTool("echo", _echo, "says its arguments back"),
        FleetTool("bad", _bad, "bad input"),
        FleetTool("half", _half_done, "did part of it"),
    )
    server = build_server(Settings(), tools)

    async def call() -> CallToolResult:
        async with Client(server) as client:
            return await client.call_tool(name, arguments)

    return anyio.run(call)


def _text(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


def test_a_document_is_the_tools_text_as_the_command_prints_it_and_its_structured_content() -> None:
    result = _call("echo", {"target": "%3", "count": 2})
    assert not result.is_error
    assert _text(result) == json.dumps({"target": "%3", "count": 2, "said": "é"}, ensure_ascii=False)
    assert result.structured_content == {"target": "%3", "count": 2, "said": "é"}


def test_a_refusal_is_a_tool_error_carrying_the_reason_and_the_exit_code() -> None:
    result = _call("refused", {"target": "%3"})
    assert result.is_error
    assert _text(result) == "refused (exit 2): %3 is working"
    assert result.structured_content == {"error": "refused", "exit_code": 2, "reason": "%3 is working"}


def test_bad_input_lists_every_problem_and_a_half_done_command_says_what_was_done() -> None:
    bad = _call("bad", {})
    assert bad.is_error and _text(bad) == "bad input (exit 4): DIR /x does not exist; --model is empty"
    half = _call("half", {})
    assert half.is_error and half.structured_content is not None
    assert half.structured_content["exit_code"] == 1 and half.structured_content["done"] == {"pane_id": "%3", "stopped": "login"}
    assert _text(half).startswith("failed (exit 1): alpha in work:1.0 (%3): stopped at a login screen\n{")


def test_arguments_are_checked_against_the_schema_before_the_command_runs() -> None:
    result = _call("echo", {"count": 2})  # no target
    assert result.is_error and "target" in _text(result)


def test_a_wait_that_timed_out_is_a_tool_error_with_its_document() -> None:
    result = _call("wait", {"timeout": 1.5})
    assert result.is_error
    assert _text(result).startswith("timeout (exit 124): timed out after 1.5 s waiting until done\n{")
    assert result.structured_content is not None and result.structured_content["done"]["timed_out"] is True


def test_start_takes_an_account_as_new_does() -> None:
    (start,) = [tool for tool in TOOLS if tool.name == "start"]
    assert "account" in start.parameters and "account" in inspect.signature(start.document).parameters
