"""The fleet API's command modules, in the order ``nbs-tui --help`` lists them.

Each module names its subcommands in ``COMMANDS`` and has ``add_parsers(subparsers)`` and
``run(args, settings) -> int`` (an `nbs_tui.core.fleet_api.exit_codes.ExitCode`). A new command
is a module here and one line below; `nbs_tui.cli` knows only this file.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType
from typing import Any

from nbs_tui.config import Settings

MODULES = (
    "nbs_tui.fleet_api.read_commands",  # agents, read
    "nbs_tui.fleet_api.usage_command",  # usage
    "nbs_tui.fleet_api.send_command",  # send
    "nbs_tui.fleet_api.wait_command",  # wait
    "nbs_tui.fleet_api.answer_command",  # answer
    "nbs_tui.fleet_api.diff_command",  # diff
    "nbs_tui.fleet_api.queue_commands",  # queue add|ls|cancel|pause|resume
    "nbs_tui.fleet_api.mcp_server",  # mcp
)


def _modules() -> list[ModuleType]:
    return [importlib.import_module(name) for name in MODULES]


def add_parsers(commands: argparse._SubParsersAction[Any]) -> None:
    for module in _modules():
        module.add_parsers(commands)


def command_names() -> frozenset[str]:
    return frozenset(name for module in _modules() for name in module.COMMANDS)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run ``args.command`` (one of `command_names`)."""
    for module in _modules():
        if args.command in module.COMMANDS:
            code: int = module.run(args, settings)
            return code
    raise ValueError(f"not a fleet API command: {args.command}")
