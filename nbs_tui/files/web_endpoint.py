"""Where the browser view is, for the processes that put links to it in push notifications.

`nbs-tui web` writes ``$XDG_STATE_HOME/nbs-tui/web-endpoint.json`` when it starts serving: its
public base URL, its process id and its link key (`nbs_tui.core.fleet.web_links`), and removes it when
it stops. The file is the key's only copy outside that process, so it is written mode 0600
atomically and read only when it is still 0600 and owned by this user. A sender that finds no
file, a file of a process that is gone, or a file anyone else could read sends its push without
a link.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from nbs_tui.files.atomic import write_atomic
from nbs_tui.files.proc import pid_alive

ENDPOINT_NAME = "web-endpoint.json"
PRIVATE_MODE = 0o600


@dataclass(frozen=True, slots=True)
class WebEndpoint:
    """A running browser view: where it is and the key its one-time links are signed with."""

    url: str
    """Base URL as the operator opens it (``https://host:port/``), ending in ``/``."""
    pid: int
    link_key: bytes


def endpoint_path(state_dir: Path) -> Path:
    return state_dir / ENDPOINT_NAME


def write_endpoint(path: Path, endpoint: WebEndpoint) -> None:
    """Publish ``endpoint`` (atomic, mode 0600 even if an older file had another mode)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # an old file's mode would be kept by write_atomic
    body = {"url": endpoint.url, "pid": endpoint.pid, "link_key": base64.b64encode(endpoint.link_key).decode()}
    write_atomic(path, json.dumps(body) + "\n", new_mode=PRIVATE_MODE, make_parents=True)


def remove_endpoint(path: Path, pid: int) -> None:
    """Remove the file if it is still ``pid``'s (a newer web view's file stays)."""
    current = read_endpoint(path, require_alive=False)
    if current is not None and current.pid == pid:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def read_endpoint(path: Path, *, require_alive: bool = True) -> WebEndpoint | None:
    """The running browser view, or None (no file, unreadable, not private, or its process gone)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if stat.S_IMODE(info.st_mode) != PRIVATE_MODE or info.st_uid != os.getuid():
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            body = json.loads(handle.read(65536))
        endpoint = WebEndpoint(str(body["url"]), int(body["pid"]), base64.b64decode(body["link_key"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finally:
        os.close(fd)
    if require_alive and not pid_alive(endpoint.pid):
        return None
    return endpoint
