"""``nbs-tui usage``: every account's 5-hour and 7-day use, cost and agents (issue 37 item 3).

The figures are what Claude Code handed the status line after each turn, as the recorder
appended them to the usage spool (`nbs_tui.claude.status_recorder`, `nbs_tui.claude.usage_spool`),
read here directly: no tmux, no service needed. ``--host`` asks that host's own nbs-tui (its
spool). `usage_document` is the JSON (``{"accounts": [...]}``, Claude Code's own field names)
that ``--json`` prints and the MCP tool of the same name returns.

``nbs-tui new --account NAME|auto`` (and the start form's choice) is resolved by
`nbs_tui.claude.usage_spool.account_config_dir`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from nbs_tui.claude.usage_spool import local_usage
from nbs_tui.config import Settings
from nbs_tui.core.fleet.usage import account_lines
from nbs_tui.core.fleet.usage import usage_document as document_of
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError
from nbs_tui.fleet_api.read_commands import _run_there
from nbs_tui.server_options import add_server_options

COMMANDS = ("usage",)


def add_parsers(commands: argparse._SubParsersAction[Any]) -> None:
    usage = commands.add_parser(
        "usage", help="each account's 5-hour and 7-day use, reset times, burn rate and cost, and its agents"
    )
    usage.add_argument("--json", action="store_true", help="one JSON document on stdout: {\"accounts\": [...]}")
    add_server_options(usage, inherit=True)


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        now = time.time()
        document = usage_document(settings, now=now)
    except FleetApiError as error:
        print(f"nbs-tui usage: {error.message}", file=sys.stderr)
        return error.code
    if args.json:
        print(json.dumps(document, ensure_ascii=False))
        return ExitCode.DONE
    here = local_usage(settings, now) if any(h.is_local for h in settings.watched_hosts()) else []
    if not document["accounts"]:
        print("no usage recorded yet: `nbs-tui hooks install` (per account: --account NAME) records each turn")
    for usage in here:
        print("\n".join(account_lines(usage, now)))
    for account in document["accounts"]:
        if "host" in account:
            print(_remote_lines(account))
    return ExitCode.DONE


def usage_document(settings: Settings, *, now: float | None = None) -> dict[str, Any]:
    """The JSON of ``nbs-tui usage --json`` for every watched host: this machine's from its
    usage spool, another host's from its own ``nbs-tui usage --json`` (each account then says
    ``"host"``). Raises `FleetApiError` when a host cannot be asked."""
    accounts: list[dict[str, Any]] = []
    for host in settings.watched_hosts():
        if host.is_local:
            accounts += document_of(local_usage(settings, now))["accounts"]
            continue
        there = _run_there(host, ["usage"])
        listed = there.get("accounts")
        if not isinstance(listed, list):
            raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"--host {host.name}: not a usage document")
        accounts += [{**item, "host": host.name} for item in listed if isinstance(item, dict)]
    return {"accounts": accounts}


def _remote_lines(account: dict[str, Any]) -> str:
    five = account.get("five_hour") or {}
    seven = account.get("seven_day") or {}
    return (
        f"{account.get('host')}/{account.get('name')} ({account.get('kind')}, {account.get('config_dir')})\n"
        f"  5-hour {five.get('used_percentage', '--')} % · 7-day {seven.get('used_percentage', '--')} % · "
        f"cost ${float(account.get('cost_usd') or 0):.2f}"
    )
