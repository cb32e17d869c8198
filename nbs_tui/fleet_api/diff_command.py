"""``nbs-tui diff TARGET [--stat] [--json]``: what an agent changed, against the base it started
from (docs/review.md).

`diff_document` is the work (the JSON document, or `FleetApiError`); `nbs-tui mcp` calls it too.
For an agent of this machine:

* its folder is its pane's (tmux's ``pane_current_path``: Claude Code's own folder, a worktree's
  for ``--worktree``); outside git the document says so (``"repository": false``, a message);
* its base is the one ``new`` left on its pane (``@nbs_base``: `nbs_tui.core.review.agent_base`)
  when that commit is in the repository, else `nbs_tui.files.git_changes.fallback_base`;
* who wrote each file comes from the hook spool (`nbs_tui.claude.hook_writes.read_writes`); an
  agent is alone in its worktree unless another agent of the server works in the same one, and
  then it sees only its own files.

Another host's agent is diffed by that host's own nbs-tui (its git, its spool), named as here.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from nbs_tui.claude.hook_writes import read_writes
from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import LOCAL, HostSpec
from nbs_tui.core.fleet_api.agent_row import AgentRow
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError
from nbs_tui.core.fleet_api.target import resolve_target
from nbs_tui.core.review.agent_base import BASE_OPTION, parse_base
from nbs_tui.core.review.agent_changes import AgentChanges, attribute, not_in_git
from nbs_tui.files.git_changes import (
    GitError,
    fallback_base,
    file_diff,
    has_commit,
    read_folder_changes,
    worktree_root,
)
from nbs_tui.fleet_api.read_commands import REMOTE_TIMEOUT, _run_there, fleet_rows
from nbs_tui.server_options import add_server_options
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError

COMMANDS = ("diff",)


def add_parsers(commands: argparse._SubParsersAction[Any]) -> None:
    diff = commands.add_parser("diff", help="what an agent changed since it started: its files, lines added and removed, the diff")
    diff.add_argument("target", metavar="TARGET", help="%%3, session:window.pane, a window or worker name, or host/server/%%3")
    form = diff.add_mutually_exclusive_group()
    form.add_argument("--stat", action="store_true", help="one line per file: status, lines added and removed, who wrote it")
    form.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_server_options(diff, inherit=True)


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        return _diff(args, settings)
    except FleetApiError as error:
        print(f"nbs-tui {args.command}: {error.message}", file=sys.stderr)
        return error.code


def diff_document(settings: Settings, target: str) -> dict[str, Any]:
    """The agent ``target`` names, its changes as ``nbs-tui diff --json`` prints them (module
    docstring); raises `FleetApiError`."""
    rows = fleet_rows("diff", settings)
    row = resolve_target(target, rows)
    host = {h.name: h for h in settings.watched_hosts()}[row.host]
    if not host.is_local:
        return _named_here(_run_there(host, ["diff", row.pane_id]), row)
    return agent_changes(settings, host, row, rows).as_json()


def _named_here(document: dict[str, Any], row: AgentRow) -> dict[str, Any]:
    """Another host's document with its agents named as this machine names them."""
    document["target"] = row.target
    for item in document.get("files") or ():
        by = item.get("by") if isinstance(item, dict) else None
        if isinstance(by, str) and by.startswith(f"{LOCAL}/"):
            item["by"] = f"{row.host}/{by[len(LOCAL) + 1 :]}"
    return document


def agent_changes(settings: Settings, host: HostSpec, row: AgentRow, rows: list[AgentRow]) -> AgentChanges:
    """A local agent's changes (module docstring); raises `FleetApiError` when tmux or git fails."""
    commands = TmuxServerCommands.for_server(host.server)
    folder = row.folder
    root = worktree_root(folder) if folder else None
    if root is None:
        return not_in_git(row.target, folder, None if folder else f"{row.target}: its folder is not known")
    try:
        remembered = parse_base(commands.display(row.pane_id, f"#{{{BASE_OPTION}}}"))
        socket = commands.display(row.pane_id, "#{socket_path}")
    except TmuxError as error:
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"{row.target}: {error}") from None
    try:
        base = remembered.commit if remembered is not None and has_commit(root, remembered.commit) else fallback_base(root)
        changes = read_folder_changes(root, base)
    except GitError as error:
        raise FleetApiError(ExitCode.REFUSED, f"{row.target}: {error}") from None
    neighbours = [r for r in rows if (r.host, r.server) == (row.host, row.server)]
    targets = {r.pane_id: r.target for r in neighbours}
    writers = read_writes(settings.hook_spool, socket).writers_under(root)
    written = {path: targets.get(pane, f"{row.host}/{row.server}/{pane}") for path, pane in writers.items()}
    return attribute(changes, target=row.target, agent_folder=folder, written=written, shared=_shared(root, row, neighbours))


def _shared(root: str, row: AgentRow, rows: list[AgentRow]) -> bool:
    """Another agent works in the same worktree (a folder under the root that git places in
    this worktree, not in a worktree nested below it such as ``.claude/worktrees/NAME``)."""
    inside = root.rstrip("/") + "/"
    return any(
        other.pane_id != row.pane_id
        and (other.folder == root or other.folder.startswith(inside))
        and worktree_root(other.folder) == root
        for other in rows
    )


# -- printing ---------------------------------------------------------------------------------


def _diff(args: argparse.Namespace, settings: Settings) -> int:
    if args.json:
        print(json.dumps(diff_document(settings, args.target), ensure_ascii=False))
        return ExitCode.DONE
    rows = fleet_rows("diff", settings)
    row = resolve_target(args.target, rows)
    host = {h.name: h for h in settings.watched_hosts()}[row.host]
    if not host.is_local:
        return _text_there(host, row, args.stat)
    changes = agent_changes(settings, host, row, rows)
    sys.stdout.write(stat_text(changes) if args.stat else patch_text(changes))
    return ExitCode.DONE


def _text_there(host: HostSpec, row: AgentRow, stat: bool) -> int:
    """Another host's text forms, as its own nbs-tui prints them."""
    from nbs_tui.lifecycle.host import host_for

    there = host_for(host)
    try:
        done = there.run_nbs_tui([*host.server.tmux_args(), "diff", row.pane_id, *(["--stat"] if stat else [])], REMOTE_TIMEOUT)
    except (OSError, ValueError) as error:
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"--host {host.name}: {error}") from None
    finally:
        there.close()
    if done.lost or done.returncode != 0:
        why = done.lost or (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"--host {host.name}: {why}")
    sys.stdout.write(done.stdout)
    return ExitCode.DONE


def _head(changes: AgentChanges) -> str:
    if changes.repository is None:
        return f"# {changes.target}: {changes.message}\n"
    branch = changes.branch or "(detached HEAD)"
    base = changes.base[:12] if changes.base else "(no commit)"
    return f"# {changes.target}: {changes.repository} on {branch}, against {base}\n"


def stat_text(changes: AgentChanges) -> str:
    """``--stat``: a line per file (status, +added -removed, path, who wrote it), then the totals."""
    lines = [_head(changes)]
    for change in changes.files:
        counts = "binary" if change.binary else f"+{change.added} -{change.removed}"
        by = f"  ({change.by})" if change.by else ""
        lines.append(f"{change.status:<11} {counts:>13}  {change.path}{by}\n")
    if changes.repository is not None:
        count = len(changes.files)
        lines.append(f"{count} file{'s' if count != 1 else ''} changed, +{changes.added} -{changes.removed}\n")
    return "".join(lines)


def patch_text(changes: AgentChanges) -> str:
    """The unified diff of every file, as git prints each (`file_diff`)."""
    parts = [_head(changes)]
    if changes.repository is None:
        return parts[0]
    for change in changes.files:
        try:
            shown = file_diff(changes.repository, changes.base, change)
        except GitError as error:
            raise FleetApiError(ExitCode.REFUSED, f"{changes.target}: {error}") from None
        parts.append(shown.text)
        if shown.truncated:
            parts.append(f"# ... {change.path}: cut here (larger than the limit)\n")
    return "".join(parts)
