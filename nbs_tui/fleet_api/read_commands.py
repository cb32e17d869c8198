"""``nbs-tui agents`` and ``nbs-tui read TARGET``: their arguments and what they print.

Each command's work is a function that returns its JSON document or raises `FleetApiError`
(`agents_document`, `read_document`): ``--json`` prints that document, ``nbs-tui mcp`` returns
it as a tool's result. Every command ends with an `nbs_tui.core.fleet_api.exit_codes.ExitCode`;
`run` turns a `FleetApiError` into its code and its message on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from typing import Any

from nbs_tui.claude.status import find_claude_process, process_table
from nbs_tui.claude.watcher import status_reading
from nbs_tui.config import Settings
from nbs_tui.core.detection.answer import detection_menu_id
from nbs_tui.core.detection.detect import detect_text, detection_as_json
from nbs_tui.core.detection.fusion import fuse, screen_reading
from nbs_tui.core.fleet.host_spec import LOCAL, HostSpec
from nbs_tui.core.fleet.model import server_key
from nbs_tui.core.fleet_api.agent_row import AgentRow, agents_table, row_from_json
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError
from nbs_tui.core.fleet_api.target import resolve_target
from nbs_tui.core.queue.task_states import QueueState
from nbs_tui.files.queue_store import QueueStore
from nbs_tui.fleet_api.agent_listing import capture, list_agents
from nbs_tui.fleet_api.service_up import ensure_service
from nbs_tui.server_options import add_server_options
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError

COMMANDS = ("agents", "read")
REMOTE_TIMEOUT = 60.0


def add_parsers(commands: argparse._SubParsersAction[Any]) -> None:
    agents = commands.add_parser("agents", help="list every agent of the server: target, state, folder, model...")
    agents.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_server_options(agents, inherit=True)
    read = commands.add_parser("read", help="print an agent's screen as text, with its state")
    read.add_argument("target", metavar="TARGET", help="%%3, session:window.pane, a window or worker name, or host/server/%%3")
    read.add_argument("--lines", type=int, default=0, metavar="N", help="also N lines of history above the screen")
    read.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_server_options(read, inherit=True)


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        if args.command == "agents":
            return _agents(args, settings)
        return _read(args, settings)
    except FleetApiError as error:
        print(f"nbs-tui {args.command}: {error.message}", file=sys.stderr)
        return error.code


def _warn(command: str, message: str) -> None:
    print(f"nbs-tui {command}: {message}", file=sys.stderr)


def _local_agents(command: str, settings: Settings, host: HostSpec) -> list[AgentRow]:
    commands = TmuxServerCommands.for_server(host.server)
    try:
        ensure_service(settings, commands, lambda said: _warn(command, said))
        rows = list_agents(commands, host.name, server_key(host.server), (settings.claude_home,))
    except TmuxError as error:
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"tmux on {host.server.describe()}: {error}") from None
    return with_tasks(rows, QueueStore.for_server(LOCAL, host.server, report=lambda why: _warn(command, why)).refresh())


def with_tasks(rows: list[AgentRow], queue: QueueState) -> list[AgentRow]:
    """Each row with the work-queue task its agent holds (one read of this server's queue file)."""
    out = []
    for row in rows:
        task = queue.holder_of(row.pane_id)
        out.append(replace(row, task=task.id, task_state=task.state.value) if task is not None else row)
    return out


def _run_there(
    host: HostSpec, words: list[str], timeout: float = REMOTE_TIMEOUT, documents: frozenset[int] = frozenset()
) -> dict[str, Any]:
    """``nbs-tui WORDS --json`` run by another host's own nbs-tui (its service, its status files,
    its screens) over ssh, and the JSON document it printed. Its fleet API exit code is ours,
    except the ``documents`` codes, whose run still printed its document (``wait``'s 124)."""
    from nbs_tui.lifecycle.host import host_for

    there = host_for(host)
    try:
        done = there.run_nbs_tui([*host.server.tmux_args(), *words, "--json"], timeout)
    except (OSError, ValueError) as error:
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"--host {host.name}: {error}") from None
    finally:
        there.close()
    if done.lost:
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"--host {host.name}: {done.lost}")
    if done.returncode != 0 and done.returncode not in documents:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        codes = {int(code) for code in ExitCode}  # anything else (1: tmux unreachable there) is "no such agent"
        code = ExitCode(done.returncode) if done.returncode in codes else ExitCode.NO_SUCH_AGENT
        raise FleetApiError(code, f"--host {host.name}: {why}")
    try:
        out = json.loads(done.stdout)
    except ValueError as error:
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"--host {host.name}: not JSON ({error})") from None
    if not isinstance(out, dict):
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"--host {host.name}: not a JSON object")
    return out


def _remote_agents(host: HostSpec) -> list[AgentRow]:
    """Another host's agents, as its own ``nbs-tui agents --json`` lists them, renamed to the
    host's name here."""
    out = _run_there(host, ["agents"])
    try:
        return [row_from_json({**item, "host": host.name}) for item in out["agents"]]
    except (ValueError, KeyError, TypeError) as error:
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"--host {host.name}: not an agents listing ({error})") from None


def fleet_rows(command: str, settings: Settings) -> list[AgentRow]:
    """Every agent of every watched host (``--host`` repeated, else the server of -L/-S)."""
    rows: list[AgentRow] = []
    for host in settings.watched_hosts():
        rows += _local_agents(command, settings, host) if host.is_local else _remote_agents(host)
    return rows


def agents_document(settings: Settings) -> dict[str, Any]:
    """``nbs-tui agents --json``: every agent of every watched host."""
    return {"agents": [row.as_json() for row in fleet_rows("agents", settings)]}


def _agents(args: argparse.Namespace, settings: Settings) -> int:
    if args.json:
        print(json.dumps(agents_document(settings), ensure_ascii=False))
    else:
        print(agents_table(fleet_rows("agents", settings)))
    return ExitCode.DONE


def read_document(settings: Settings, target: str, lines: int = 0) -> dict[str, Any]:
    """``nbs-tui read TARGET --json``: the agent's screen as text (``lines`` of history above it
    too), with the state read from it and its detection."""
    if lines < 0:
        raise FleetApiError(ExitCode.BAD_INPUT, f"--lines {lines}: must be 0 or more")
    hosts = {host.name: host for host in settings.watched_hosts()}
    row = resolve_target(target, fleet_rows("read", settings))
    host = hosts[row.host]
    if host.is_local:
        return _read_here(settings, host, row, lines)
    out = _run_there(host, ["read", row.pane_id, "--lines", str(lines)])  # captured and fused there
    out["agent"] = row.as_json()  # the agent as named here
    return out


def _read(args: argparse.Namespace, settings: Settings) -> int:
    out = read_document(settings, args.target, args.lines)
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        agent = out["agent"]
        print(f"# {agent['target']} ({agent['address']} {agent['window_name']}): {out.get('state')} ({out.get('why')})")
        sys.stdout.write(str(out.get("text", "")))
    return ExitCode.DONE


def _read_here(settings: Settings, host: HostSpec, row: AgentRow, lines: int) -> dict[str, Any]:
    """One capture of the pane (``lines`` of history above the screen too: a second capture
    of the screen alone, for detection), its detection fused with the status file."""
    commands = TmuxServerCommands.for_server(host.server)
    try:
        text = capture(commands, row.pane_id, lines or None)
        screen = capture(commands, row.pane_id) if lines else text
        pid = _pane_pid(commands, row)
    except TmuxError as error:
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"{row.target}: {error}") from None
    detection = detect_text(screen)
    now = time.time()
    changed = now - row.quiet_seconds if row.quiet_seconds is not None else now
    readings = [screen_reading(detection, changed)]
    claude = find_claude_process(pid, process_table(), (settings.claude_home,))
    if claude is not None and claude.status is not None:
        readings.append(status_reading(claude.status))
    fused = fuse(readings, now)
    return {
        "agent": row.as_json(),
        "state": fused.state.value,
        "why": fused.why,
        "menu": detection_menu_id(detection) or None,
        "detection": detection_as_json(detection),
        "text": text,
    }


def _pane_pid(commands: TmuxServerCommands, row: AgentRow) -> int:
    pid = commands.display(row.pane_id, "#{pane_pid}")
    return int(pid) if pid.isdigit() else -1
