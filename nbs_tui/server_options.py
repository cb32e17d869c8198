"""The tmux server options, declared once: ``-L NAME`` or ``-S PATH``, and ``--host DEST``.

The dashboard and every subcommand that works on a tmux server (``web``, ``service``, ``new``,
``restore``, ``stop``, ``restart``) take them, under one "tmux server" heading, into the same
names: ``socket_name``, ``socket_path`` and ``hosts`` (a list). Only argparse here, so the web
view (import-linted away from tmux) and the runtime can use it.
"""

from __future__ import annotations

import argparse

WATCH_HOSTS = (
    "watch this host through ssh (user@box, an ~/.ssh/config alias, a [[hosts]] name, or 'local'); repeatable"
)
"""``--host`` of the dashboard and of ``web``: every host named is watched."""

ON_HOST = "on this host, through ssh (user@box, an ~/.ssh/config alias, a [[hosts]] name, or 'local')"
"""``--host`` of the lifecycle commands: one host, where the agent is started, stopped or restored."""


def add_server_options(
    parser: argparse.ArgumentParser, *, inherit: bool = False, host_help: str | None = WATCH_HOSTS
) -> None:
    """Add ``-L``/``-S`` (one or the other) and, unless ``host_help`` is None, ``--host``.

    ``inherit`` (a subcommand's copy): an option not given there keeps the value given before the
    subcommand (``nbs-tui -L work new DIR``), instead of argparse resetting it to None."""
    unset = argparse.SUPPRESS if inherit else None
    group = parser.add_argument_group("tmux server")
    picked = group.add_mutually_exclusive_group()
    picked.add_argument("-L", dest="socket_name", metavar="NAME", default=unset, help="tmux socket name, as tmux -L")
    picked.add_argument("-S", dest="socket_path", metavar="PATH", default=unset, help="tmux socket path, as tmux -S")
    if host_help is not None:
        group.add_argument("--host", dest="hosts", action="append", metavar="DEST", default=unset, help=host_help)
