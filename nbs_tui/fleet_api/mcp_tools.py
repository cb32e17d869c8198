"""The tools ``nbs-tui mcp`` serves, one entry each in `TOOLS`: the fleet API's commands as an
agent calls them. A tool's function is the command's own ``*_document`` function (or a few lines
that turn the tool's arguments into its call), so a tool returns the same JSON document as the
command's ``--json``; its parameters, with their types and defaults, are the tool's input schema.

A new command is a new entry here (and its ``*_document`` function in its own module). The SDK is
not imported here: `nbs_tui.fleet_api.mcp_server` serves the table.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nbs_tui.config import Settings
from nbs_tui.core.fleet.agent_spec import NewAgent
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError
from nbs_tui.core.fleet_api.target import resolve_target
from nbs_tui.files.agent_input import prepare_local
from nbs_tui.fleet_api.answer_command import answer_document
from nbs_tui.fleet_api.diff_command import diff_document
from nbs_tui.fleet_api.lifecycle_documents import start_document, stop_document
from nbs_tui.fleet_api.queue_commands import (
    queue_add_document,
    queue_cancel_document,
    queue_ls_document,
    queue_pause_document,
    queue_resume_document,
)
from nbs_tui.fleet_api.read_commands import agents_document, fleet_rows, read_document
from nbs_tui.fleet_api.send_command import send_document
from nbs_tui.fleet_api.usage_command import usage_document
from nbs_tui.fleet_api.wait_command import wait_document
from nbs_tui.lifecycle.host import host_for
from nbs_tui.lifecycle.operations import Lifecycle

TARGET_FORMS = "a pane id (%3), session:window.pane, a window or NBS worker name, or host/server/%3 (as `agents` lists it)"
TARGET = f"the agent: {TARGET_FORMS}"


@dataclass(frozen=True, slots=True)
class FleetTool:
    name: str
    document: Callable[..., dict[str, Any]]
    """``(settings, **arguments) -> the command's --json document``; raises `FleetApiError`,
    `nbs_tui.core.fleet.agent_spec.SpecError` or
    `nbs_tui.fleet_api.lifecycle_documents.CommandFailed`."""
    description: str
    parameters: Mapping[str, str] = field(default_factory=dict)
    """What each argument means, by name (the input schema's descriptions)."""
    read_only: bool = False
    failed: Callable[[dict[str, Any]], FleetApiError | None] | None = None
    """Whether a document the function returned says the command failed (its exit code is not
    0: `wait`'s time ran out), as the tool error to give with it."""


def _warn(message: str) -> None:
    """What a command says on stderr goes to the MCP server's stderr (the client's log)."""
    print(f"nbs-tui mcp: {message}", file=sys.stderr)


def _watched_host(settings: Settings, host: str | None) -> HostSpec:
    """A watched host by its name (as `agents` lists it); none named: the one watched host, or
    this machine's server among several."""
    watched = settings.watched_hosts()
    names = ", ".join(h.name for h in watched)
    if host is None:
        spec = watched[0] if len(watched) == 1 else next((h for h in watched if h.is_local), None)
        if spec is None:
            raise FleetApiError(ExitCode.BAD_INPUT, f"several hosts are watched ({names}): name one with host")
        return spec
    spec = next((h for h in watched if h.name == host), None)
    if spec is None:
        raise FleetApiError(ExitCode.BAD_INPUT, f"host {host}: not a watched host (watched: {names})")
    return spec


def _lifecycle(settings: Settings, host: HostSpec) -> Lifecycle:
    return Lifecycle.here(settings) if host.is_local else Lifecycle(settings, host_for(host))


def start_agent(
    settings: Settings,
    directory: str,
    name: str = "",
    prompt: str | None = None,
    prompt_file: str | None = None,
    worker: str | None = None,
    model: str | None = None,
    permission_mode: str | None = None,
    worktree: bool = False,
    worktree_name: str | None = None,
    session: str | None = None,
    host: str | None = None,
    account: str | None = None,
) -> dict[str, Any]:
    """``nbs-tui new``'s options as arguments; the agent checked where it runs (here, before
    anything is made; another host's, there), its account held to the caps as every start's."""
    where = _watched_host(settings, host)
    spec = NewAgent(
        directory=directory, name=name, prompt=prompt, prompt_file=prompt_file, worker=worker, model=model,
        permission_mode=permission_mode, worktree=worktree or worktree_name is not None, worktree_name=worktree_name,
        session=session, server=settings.server, host=None if where.is_local else where.name, account=account,
    )  # fmt: skip
    found = prepare_local(spec, claude_command=settings.claude_command) if where.is_local else spec
    return start_document(_lifecycle(settings, where), found, _warn)


def _stop_or_restart(command: str) -> Callable[[Settings, str], dict[str, Any]]:
    def act(settings: Settings, target: str) -> dict[str, Any]:
        row = resolve_target(target, fleet_rows(command, settings))
        return stop_document(_lifecycle(settings, _watched_host(settings, row.host)), command, row.pane_id, _warn)

    act.__name__ = f"{command}_agent"
    return act


def _usage(settings: Settings) -> dict[str, Any]:
    return usage_document(settings)  # now: the clock's (its parameter is for tests)


def _timed_out(document: dict[str, Any]) -> FleetApiError | None:
    if not document.get("timed_out"):
        return None
    return FleetApiError(ExitCode.TIMEOUT, f"timed out after {document['timeout']:g} s waiting until {document['until']}")


TOOLS: tuple[FleetTool, ...] = (
    FleetTool(
        name="agents",
        document=agents_document,
        description=(
            "Every Claude Code agent of the tmux server(s): target, pane id, session:window.pane, window and NBS "
            "worker name, folder, state (idle, working, needs...) and since when, quiet seconds, session id, model, "
            "version, the first line of the question it waits on and that menu's id (for answer). Same JSON as "
            "`nbs-tui agents --json`."
        ),
        read_only=True,
    ),
    FleetTool(
        name="read",
        document=read_document,
        description="An agent's screen as text, with the state read from it. Same JSON as `nbs-tui read TARGET --json`.",
        parameters={"target": TARGET, "lines": "also this many lines of history above the screen"},
        read_only=True,
    ),
    FleetTool(
        name="send",
        document=send_document,
        description=(
            "Type a text (a prompt) into an agent's input box, whole, and submit it once, done by the server's lease "
            "holder under its rules. Refused (exit 2, nothing typed, the reason given) when the agent is working, "
            "waits on a permission prompt, question, plan or dialog, is limited or paused, has half-typed input, or "
            "is not an agent. Same JSON as `nbs-tui send --json`."
        ),
        parameters={
            "target": TARGET,
            "text": "the text to type and submit (newlines stay newlines)",
            "wait_idle": "first wait up to this many seconds for the agent to be idle (exit 124 if it is not)",
        },
    ),
    FleetTool(
        name="wait",
        document=wait_document,
        description=(
            "Wait until the agents reach a state: idle; needs (waits on a person: a permission prompt, question, "
            "plan or dialog); done (seen working after the wait began, and idle now: never a stale idle); gone. "
            "All of them, or with any_one the first. Same JSON as `nbs-tui wait --json`; a timeout is a tool error "
            "(exit 124) with that document."
        ),
        parameters={
            "targets": f"the agents, each {TARGET_FORMS}",
            "until": "idle, needs, done or gone",
            "timeout": "give up after this many seconds (none: no limit)",
            "any_one": "until one of the agents gets there, not all",
        },
        read_only=True,
        failed=_timed_out,
    ),
    FleetTool(
        name="answer",
        document=answer_document,
        description=(
            "Answer the permission prompt, question or plan menu an agent waits on, by an option's digit or label, "
            "as the dashboard's answer card does. Refused (exit 2, nothing pressed) when the menu on screen is not "
            "the one named by menu (the id agents and read show). Same JSON as `nbs-tui answer --json`."
        ),
        parameters={
            "target": TARGET,
            "choice": "an option's digit or label",
            "menu": "the menu's id as agents or read showed it: refused if another menu is on screen now",
        },
    ),
    FleetTool(
        name="usage",
        document=_usage,
        description=(
            "Every Claude Code account's 5-hour and 7-day use, cost and agents, as Claude Code reported them after "
            "each turn. Same JSON as `nbs-tui usage --json`."
        ),
        read_only=True,
    ),
    FleetTool(
        name="diff",
        document=diff_document,
        description=(
            "What an agent changed since it started: its worktree against its base (commits, staged, unstaged and "
            "untracked), git's counts and diff, and who wrote each file. Same JSON as `nbs-tui diff TARGET --json`."
        ),
        parameters={"target": TARGET},
        read_only=True,
    ),
    FleetTool(
        name="start",
        document=start_agent,
        description=(
            "Start a Claude Code agent in a new tmux window in a folder, answer its folder-trust dialog, and type its "
            "prompt once it is ready; the server's service then serves it. Same JSON as `nbs-tui new --json`."
        ),
        parameters={
            "directory": "the folder the agent works in (absolute, or relative to where nbs-tui mcp runs)",
            "name": "the window's and the agent's name (default: the worker's or the folder's name)",
            "prompt": "the prompt to type once the agent is ready",
            "prompt_file": "a file whose text is the prompt",
            "worker": "an NBS worker: its task file DIR/.nbs/workers/NAME.md is the prompt",
            "model": "Claude Code's --model (an alias such as 'opus', or a model id)",
            "permission_mode": "Claude Code's --permission-mode",
            "worktree": "start in a new git worktree (Claude Code's -w)",
            "worktree_name": "the worktree's name (implies worktree)",
            "session": "the tmux session to open the window in (made if missing)",
            "host": "a watched host's name (default: the one watched host, or this machine)",
            "account": "an account of the config ([accounts.NAME]), or 'auto': the one with the most headroom under its caps",
        },
    ),
    FleetTool(
        name="stop",
        document=_stop_or_restart("stop"),
        description=(
            "Stop an agent: /exit when its input box is idle and empty, else Ctrl-C, else kill its pane. "
            "Same JSON as `nbs-tui stop --json`."
        ),
        parameters={"target": TARGET},
    ),
    FleetTool(
        name="restart",
        document=_stop_or_restart("restart"),
        description=(
            "Restart an agent in place: stop it, then resume its conversation (claude --resume) in the same pane. "
            "Same JSON as `nbs-tui restart --json`."
        ),
        parameters={"target": TARGET},
    ),
    FleetTool(
        name="queue_add",
        document=queue_add_document,
        description=(
            "Add a task to the server's work queue: the lease holder hands it, by priority then age, to an idle agent "
            "that may take it (typed once, as send types), or starts an agent for it. Give exactly one of text, file "
            "and worker. Same JSON as `nbs-tui queue add --json`: the task, with its id."
        ),
        parameters={
            "text": "the task's prompt",
            "file": "a file whose text is the prompt",
            "worker": "an NBS worker: its task file FOLDER/.nbs/workers/NAME.md",
            "folder": "only agents whose folder is this one or below it (and where a started agent runs)",
            "agents": "only agents whose window or worker name matches this glob",
            "start": "may start a new agent in the folder for it (within its max_concurrent)",
            "after": "hand it out only after this task is done",
            "priority": "higher first (default 0)",
        },
    ),
    FleetTool(
        name="queue_ls",
        document=queue_ls_document,
        description="The work queue: whether it is paused, and every task in the order they are handed out. Same JSON as `nbs-tui queue ls --json`.",
        read_only=True,
    ),
    FleetTool(
        name="queue_cancel",
        document=queue_cancel_document,
        description="Cancel a task that has not ended. Same JSON as `nbs-tui queue cancel ID --json`.",
        parameters={"task_id": "the task's id, as queue_add or queue_ls gave it"},
    ),
    FleetTool(
        name="queue_pause",
        document=queue_pause_document,
        description="Hand out no task until queue_resume (tasks already handed out go on). Same JSON as `nbs-tui queue pause --json`.",
    ),
    FleetTool(
        name="queue_resume",
        document=queue_resume_document,
        description="Hand out tasks again. Same JSON as `nbs-tui queue resume --json`.",
    ),
)
