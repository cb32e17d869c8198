"""``nbs-tui mcp``: the fleet API as a stdio MCP server, on the official ``mcp`` SDK, for an agent
(a Claude Code supervisor) to steer the fleet with.

Its tools are `nbs_tui.fleet_api.mcp_tools.TOOLS`: each calls the command's own ``*_document``
function and returns the same JSON document as the command's ``--json`` (as text, and as the
result's structured content). A command's failure is a tool error (``isError``) whose text is
the reason, with its exit code: a refusal (``2``), no such agent (``3``), bad input (``4``), a
timeout (``124``), or a command that did part of its work (``1``, with the document of what was
done). The SDK is imported only when ``nbs-tui mcp`` runs: ``nbs-tui --help`` does not pay for it.
"""

from __future__ import annotations

import argparse
import inspect
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from nbs_tui import __version__
from nbs_tui.config import Settings
from nbs_tui.core.fleet.agent_spec import SpecError
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError
from nbs_tui.server_options import add_server_options

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp_types import CallToolResult

    from nbs_tui.fleet_api.mcp_tools import FleetTool

COMMANDS = ("mcp",)

SERVER_NAME = "nbs"
"""The name clients know the server by: Claude Code calls its tools ``mcp__nbs__agents``..."""

INSTRUCTIONS = (
    "nbs-tui's fleet of Claude Code agents in tmux panes. `agents` lists them with their state; `read` shows one's "
    "screen; `send` gives an idle one a prompt; `wait` waits until agents are idle, need a person, are done or gone; "
    "`answer` answers the menu one waits on; `start`, `stop` and `restart` manage them. A TARGET is what `agents` "
    "lists as target (or a pane id, "
    "session:window.pane, a window or NBS worker name). A tool error carries the reason and an exit code: 2 refused "
    "(the agent is not in a state to take it), 3 no such agent, 4 bad input, 124 timeout."
)

_MEANINGS = {
    ExitCode.REFUSED: "refused",
    ExitCode.NO_SUCH_AGENT: "no such agent",
    ExitCode.BAD_INPUT: "bad input",
    ExitCode.TIMEOUT: "timeout",
}
FAILED = 1
"""A lifecycle command's exit status when it did not finish (`CommandFailed`)."""


def add_parsers(commands: argparse._SubParsersAction[Any]) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="serve the fleet API as an MCP server on stdin/stdout (for a supervising agent: claude mcp add)",
        description=(
            "A stdio MCP server whose tools are the fleet API's commands (agents, read, send, wait, answer, start, "
            "stop, restart...), "
            "each returning the same JSON as the command's --json. Give it to Claude Code with "
            "'claude mcp add nbs -- nbs-tui mcp' (add -L/-S/--host for another server)."
        ),
    )
    add_server_options(mcp, inherit=True)


def run(args: argparse.Namespace, settings: Settings) -> int:
    build_server(settings).run("stdio")
    return ExitCode.DONE


def build_server(settings: Settings, tools: tuple[FleetTool, ...] | None = None) -> MCPServer:
    """The MCP server of these settings' fleet: one tool per entry of ``tools`` (default: all)."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    from nbs_tui.fleet_api.mcp_tools import TOOLS

    server: MCPServer = MCPServer(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    for tool in TOOLS if tools is None else tools:
        server.add_tool(
            tool_function(tool, settings),
            name=tool.name,
            description=tool.description,
            annotations=ToolAnnotations(read_only_hint=tool.read_only),
        )
    return server


def tool_function(tool: FleetTool, settings: Settings) -> Callable[..., CallToolResult]:
    """``tool.document`` with ``settings`` given, as the SDK takes a tool: its other parameters
    (described by ``tool.parameters``) are the input schema; it returns the document, or the
    failure as a tool error. Runs on a worker thread (the SDK's way with a plain function)."""
    from mcp_types import CallToolResult, TextContent
    from pydantic import Field

    from nbs_tui.fleet_api.lifecycle_documents import CommandFailed
    from nbs_tui.tmux.errors import TmuxError

    def call(**arguments: Any) -> CallToolResult:
        try:
            document = tool.document(settings, **arguments)
        except FleetApiError as error:
            return _error(error.code, _MEANINGS.get(error.code, "failed"), error.message)
        except SpecError as error:
            return _error(ExitCode.BAD_INPUT, "bad input", "; ".join(error.problems))
        except CommandFailed as failed:
            return _error(FAILED, "failed", failed.message, failed.document)
        except TmuxError as error:
            return _error(ExitCode.NO_SUCH_AGENT, "no such agent", f"tmux: {error}")
        failure = tool.failed(document) if tool.failed is not None else None
        if failure is not None:
            return _error(failure.code, _MEANINGS.get(failure.code, "failed"), failure.message, document)
        text = json.dumps(document, ensure_ascii=False)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=document)

    signature = inspect.signature(tool.document, eval_str=True)
    parameters = [
        p.replace(annotation=Annotated[p.annotation, Field(description=tool.parameters[p.name])])
        if p.name in tool.parameters
        else p
        for p in list(signature.parameters.values())[1:]  # the settings are given
    ]
    call.__signature__ = signature.replace(parameters=parameters, return_annotation=CallToolResult)  # type: ignore[attr-defined]
    call.__name__ = tool.name
    call.__doc__ = tool.description
    return call


def _error(code: int, meaning: str, reason: str, done: dict[str, Any] | None = None) -> CallToolResult:
    """A tool error: ``meaning (exit CODE): reason`` as its text (what a model reads), and
    the same as structured content, with the document of what was done when something was."""
    from mcp_types import CallToolResult, TextContent

    said = f"{meaning} (exit {code}): {reason}"
    if done is not None:
        said += "\n" + json.dumps(done, ensure_ascii=False)
    structured = {"error": meaning, "exit_code": int(code), "reason": reason, **({"done": done} if done else {})}
    return CallToolResult(content=[TextContent(type="text", text=said)], structured_content=structured, is_error=True)
