"""``nbs-tui new`` and ``nbs-tui restore``: their arguments, turned into what the lifecycle needs.

`add_lifecycle_parsers` adds both subcommands to the CLI's subparsers (as `nbs_tui.runtime.service`
adds ``service``); `new_agent_from_args` and `restore_request_from_args` turn the parsed
arguments into a checked `nbs_tui.core.fleet.agent_spec.NewAgent` or a `RestoreRequest`, raising
`nbs_tui.core.fleet.agent_spec.SpecError` (every problem, one line each) for bad input. ``new``'s
local checks (folder, prompt file, worker file, git, Claude Code on PATH) are
`nbs_tui.files.agent_input.prepare_local`; `prepare_new` does both. Nothing here starts or
writes anything: what starts the agent goes through the tmux command path (docs/lifecycle.md).

``-L``/``-S``/``--host`` may come before the subcommand (``nbs-tui -L work new DIR``, as for every
command) or after it; ``new`` takes one ``--host``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbs_tui.core.fleet.agent_spec import PERMISSION_MODES, NewAgent, SpecError, checked
from nbs_tui.core.fleet.host_spec import LOCAL
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.files.agent_input import PreparedAgent, prepare_local
from nbs_tui.server_options import ON_HOST, add_server_options


def add_lifecycle_parsers(commands: argparse._SubParsersAction[Any]) -> None:
    new = commands.add_parser(
        "new",
        help="start a Claude Code agent in a new tmux window",
        description=(
            "Start a Claude Code agent in a new tmux window named NAME, in DIR, on a tmux server or host "
            "nbs-tui can watch; answer its folder-trust dialog for DIR only, and type the prompt once its "
            "input box is ready."
        ),
    )
    new.add_argument("directory", metavar="DIR", help="the folder the agent works in")
    new.add_argument("--name", metavar="NAME", help="the window's and the agent's name (default: the worker's or DIR's name)")
    prompt = new.add_mutually_exclusive_group()
    prompt.add_argument("--prompt", metavar="TEXT", help="type this prompt once the agent is ready")
    prompt.add_argument("--prompt-file", metavar="FILE", help="type this file's text as the prompt")
    new.add_argument("--worker", metavar="NAME", help="an NBS worker: its task file DIR/.nbs/workers/NAME.md is the prompt")
    new.add_argument("--model", metavar="MODEL", help="Claude Code's --model (an alias such as 'opus', or a model id)")
    new.add_argument("--permission-mode", choices=PERMISSION_MODES, metavar="MODE", help=f"one of {', '.join(PERMISSION_MODES)}")
    new.add_argument(
        "--worktree", nargs="?", const="", default=None, metavar="NAME",
        help="start in a new git worktree (Claude Code's -w), optionally named; put DIR before it",
    )  # fmt: skip
    new.add_argument("--session", metavar="SESSION", help="the tmux session to open the window in (made if missing)")
    new.add_argument(
        "--account", metavar="NAME|auto",
        help="run under this [accounts.NAME] (its CLAUDE_CONFIG_DIR); 'auto': the account with the most headroom (docs/usage.md)",
    )  # fmt: skip
    new.add_argument("--json", action="store_true", help="print one JSON line: pane id, target, name, session id")
    add_server_options(new, inherit=True, host_help=ON_HOST)

    restore = commands.add_parser(
        "restore",
        help="bring back the remembered agents of a tmux server (after a reboot or a lost server)",
        description=(
            "Start the tmux server if none runs, make the remembered sessions and windows again and resume "
            "each agent's conversation in its folder (claude --resume), one after another. Agents live "
            "elsewhere, or whose folder or conversation is gone, are reported and left out."
        ),
    )
    for name, what in (
        ("stop", "stop an agent: /exit when its box is idle and empty, else Ctrl-C, else kill its pane"),
        ("restart", "restart an agent in place: stop it, then claude --resume its conversation in the same pane"),
    ):
        command = commands.add_parser(name, help=what, description=what)
        command.add_argument("pane", metavar="PANE", help="a pane id (%%3) or target (agents:api)")
        command.add_argument("--yes", action="store_true", help="do not ask for a confirmation")
        command.add_argument("--json", action="store_true", help="print one JSON line of what was done")
        add_server_options(command, inherit=True, host_help=ON_HOST)

    restore.add_argument("names", nargs="*", metavar="NAME", help="only these agents or windows (default: all)")
    restore.add_argument("--dry-run", action="store_true", help="print the plan, start nothing")
    restore.add_argument("--json", action="store_true", help="print the plan (or what was done) as JSON")
    add_server_options(restore, inherit=True, host_help=ON_HOST)


def _server(args: argparse.Namespace) -> ServerAddress:
    return ServerAddress(getattr(args, "socket_name", None), getattr(args, "socket_path", None))


def one_host(args: argparse.Namespace, command: str) -> str | None:
    hosts: list[str] = list(getattr(args, "hosts", None) or [])
    if len(hosts) > 1:
        raise SpecError([f"{command} works on one host at a time: give one --host, not {len(hosts)}"])
    return hosts[0] if hosts else None


def new_agent_from_args(args: argparse.Namespace, *, check: bool = True) -> NewAgent:
    """The spec of ``nbs-tui new``, checked unless ``check`` is False (raises `SpecError`)."""
    spec = (
        NewAgent(
            directory=args.directory,
            name=args.name or "",
            prompt=args.prompt,
            prompt_file=args.prompt_file,
            worker=args.worker,
            model=args.model,
            permission_mode=args.permission_mode,
            worktree=args.worktree is not None,
            worktree_name=args.worktree or None,
            session=args.session,
            server=_server(args),
            host=one_host(args, "new"),
            account=getattr(args, "account", None),
        )
    )
    return checked(spec) if check else spec


def prepare_new(args: argparse.Namespace, *, cwd: Path | None = None, claude_command: str | None = None) -> PreparedAgent | NewAgent:
    """``new``'s every check that needs no tmux, on this machine: the spec and its files (raises
    `SpecError`). An agent for another host comes back as its spec, unchecked: it is checked
    once, with its files, on the host (`nbs_tui.lifecycle.host.RemoteHost.prepare`)."""
    spec = new_agent_from_args(args, check=False)
    if spec.host not in (None, LOCAL):
        return spec
    return prepare_local(spec, cwd=cwd, claude_command=claude_command)  # checks the spec too, all at once


@dataclass(frozen=True, slots=True)
class RestoreRequest:
    server: ServerAddress
    host: str | None
    names: tuple[str, ...]
    dry_run: bool
    json: bool


def restore_request_from_args(args: argparse.Namespace) -> RestoreRequest:
    names = tuple(args.names)
    empty = [n for n in names if not n.strip()]
    if empty:
        raise SpecError(["restore: an empty NAME names no agent"])
    return RestoreRequest(_server(args), one_host(args, "restore"), names, args.dry_run, args.json)
