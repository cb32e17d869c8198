"""Which tmux server a command means, by tmux's own rule.

With ``-L NAME`` or ``-S PATH`` the choice is explicit. Without either, tmux uses the socket in
``$TMUX`` (its first comma-separated field) when run inside tmux, else
``$TMUX_TMPDIR`` (default /tmp) + ``/tmux-UID/default``. `default_server` applies that rule once,
where the command line is read, so the dashboard, ``--headless`` and ``nbs-tui service`` (whose
pid and log files are named after the address) all name the same server the same way, and every
tmux command after it can drop ``$TMUX`` from its environment without changing its meaning.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from nbs_tui.core.fleet.model import ServerAddress


def socket_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The folder of ``-L`` sockets: ``$TMUX_TMPDIR`` (or /tmp) + ``/tmux-UID``."""
    env = os.environ if environ is None else environ
    return Path(env.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"


def socket_path_of(server: ServerAddress, environ: Mapping[str, str] | None = None) -> Path:
    """Where tmux puts this server's socket, by tmux's own rule (``$TMUX_TMPDIR`` or /tmp)."""
    if server.socket_path:
        return Path(server.socket_path)
    return socket_dir(environ) / (server.socket_name or "default")


def default_server(environ: Mapping[str, str] | None = None) -> ServerAddress:
    """The server a plain ``tmux`` (no ``-L``/``-S``) would talk to in this environment.

    Inside tmux that is ``$TMUX``'s socket, named as briefly as tmux allows: the default server
    stays ``ServerAddress()`` and a socket in the ``-L`` folder becomes ``-L NAME``, so the same
    server gets the same service files whether the command runs inside a pane or outside."""
    env = os.environ if environ is None else environ
    socket = env.get("TMUX", "").split(",", 1)[0]
    if not socket:  # tmux ignores an empty $TMUX (or one starting with a comma) too
        return ServerAddress()
    path = Path(socket)
    if os.path.realpath(path.parent) == os.path.realpath(socket_dir(env)):
        return ServerAddress() if path.name == "default" else ServerAddress(socket_name=path.name)
    return ServerAddress(socket_path=socket)
