"""Which hosts nbs-tui watches: the config file's ``[[hosts]]`` table and ``--host DEST``.

Pure: no ssh, no tmux, no file I/O. ``nbs_tui.tmux.ssh`` runs tmux on a `HostSpec` that is not
local; docs/remote.md describes the transport.

Rules:

* ``--host DEST`` (repeatable) chooses the watched hosts: a ``[[hosts]]`` entry's ``name``, the word
  ``local`` (this machine), or any destination OpenSSH accepts (``user@box``, an alias of
  ``~/.ssh/config``), which then needs no entry;
* without ``--host``, the ``[[hosts]]`` entries are watched when there are any, else this machine;
* ``-L``/``-S`` choose the tmux server on every host that does not name its own socket.

Pane ids with several hosts: tmux numbers panes per server, so two hosts both have a ``%3``. The
local host's panes keep their ids (``%3``: hooks and status files name them so); every other
host's are qualified, ``hosta:%3`` (a host name has no ``:``). With one host, nothing changes.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nbs_tui.core.fleet.model import PaneId, ServerAddress

LOCAL = "local"
"""The host name of this machine (its tmux runs without ssh)."""


class HostsError(ValueError):
    """A ``[[hosts]]`` entry or ``--host`` value nbs-tui cannot use; the message says which."""


@dataclass(frozen=True, slots=True)
class HostSpec:
    """One host to watch, as the config and the command line describe it."""

    name: str
    destination: str = ""
    """Whatever OpenSSH accepts (``user@box``, ``box``, an alias); empty for this machine."""
    ssh_options: tuple[str, ...] = ()
    """Extra arguments for ssh, e.g. ``("-p", "2222")`` or ``("-F", "/path/config")``."""
    socket_name: str | None = None
    socket_path: str | None = None
    tmux: str = "tmux"
    """The tmux command on that host (a full path when a non-interactive ssh has no tmux on PATH)."""
    nbs_tui: str | None = None
    """The nbs-tui command on that host, when it has one (its service and control plane run there)."""

    @property
    def is_local(self) -> bool:
        return not self.destination

    @property
    def server(self) -> ServerAddress:
        return ServerAddress(socket_name=self.socket_name, socket_path=self.socket_path)


_KEYS = frozenset({"name", "ssh", "ssh_options", "tmux_socket_name", "tmux_socket_path", "tmux", "nbs_tui"})


def _text(where: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise HostsError(f"{where}: {key} must be a non-empty string, not {value!r}")
    return value.strip()


def _name(where: str, value: Any) -> str:
    name = _text(where, "name", value)
    if any(ch.isspace() for ch in name) or ":" in name:
        raise HostsError(f"{where}: name {name!r} may not contain spaces or ':' (it is used as 'host:NAME')")
    return name


def parse_hosts(entries: Any) -> tuple[HostSpec, ...]:
    """The ``[[hosts]]`` array of tables, checked: every mistake is one line naming the entry."""
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise HostsError("hosts must be an array of tables ([[hosts]] sections)")
    hosts: list[HostSpec] = []
    for number, entry in enumerate(entries, 1):
        where = f"[[hosts]] entry {number}"
        unknown = sorted(set(entry) - _KEYS)
        if unknown:
            raise HostsError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
        if "name" in entry:
            name = _name(where, entry["name"])
        elif "ssh" in entry:
            name = _name(where, _text(where, "ssh", entry["ssh"]))
        else:
            raise HostsError(f"{where}: give it a name, an ssh destination, or both")
        where = f"[[hosts]] {name!r}"
        destination = "" if name == LOCAL and "ssh" not in entry else _text(where, "ssh", entry.get("ssh"))
        if name == LOCAL and destination:
            raise HostsError(f"{where}: 'local' is this machine and takes no ssh destination")
        options = entry.get("ssh_options", ())
        if isinstance(options, str):
            options = shlex.split(options)
        if not isinstance(options, (list, tuple)) or not all(isinstance(o, str) for o in options):
            raise HostsError(f"{where}: ssh_options must be a list of strings or one string")
        if destination == "" and options:
            raise HostsError(f"{where}: ssh_options make no sense for this machine")
        if "tmux_socket_name" in entry and "tmux_socket_path" in entry:
            raise HostsError(f"{where}: give tmux_socket_name or tmux_socket_path, not both")
        socket_name = _text(where, "tmux_socket_name", entry["tmux_socket_name"]) if "tmux_socket_name" in entry else None
        socket_path = _text(where, "tmux_socket_path", entry["tmux_socket_path"]) if "tmux_socket_path" in entry else None
        hosts.append(
            HostSpec(
                name=name,
                destination=destination,
                ssh_options=tuple(options),
                socket_name=socket_name,
                socket_path=socket_path,
                tmux=_text(where, "tmux", entry["tmux"]) if "tmux" in entry else "tmux",
                nbs_tui=_text(where, "nbs_tui", entry["nbs_tui"]) if "nbs_tui" in entry else None,
            )
        )
    names = [h.name for h in hosts]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise HostsError(f"[[hosts]]: the name {twice[0]!r} is used twice")
    return tuple(hosts)


def choose_hosts(
    defined: Sequence[HostSpec], chosen: Sequence[str], server: ServerAddress, *, server_is_local: bool = False
) -> tuple[HostSpec, ...]:
    """The hosts to watch (see the module docstring); ``server`` is the ``-L``/``-S`` choice, given
    to every host without a socket of its own. ``server_is_local``: it was not chosen but read
    from this machine's ``$TMUX`` (a socket here), so it goes to this machine only and another
    host gets its own default server."""
    by_name = {h.name: h for h in defined}
    if chosen:
        picked: list[HostSpec] = []
        for raw in chosen:
            dest = raw.strip()
            if not dest or any(ch.isspace() for ch in dest):
                raise HostsError(f"--host {raw!r}: give an ssh destination, a [[hosts]] name or 'local'")
            if dest in by_name:
                picked.append(by_name[dest])
            elif dest == LOCAL:
                picked.append(HostSpec(LOCAL))
            else:
                picked.append(HostSpec(name=dest.replace(":", "_"), destination=dest))
    else:
        picked = list(defined) or [HostSpec(LOCAL)]
    names = [h.name for h in picked]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise HostsError(f"--host: {twice[0]!r} is chosen twice")
    return tuple(
        h
        if h.socket_name or h.socket_path or (server_is_local and not h.is_local)
        else replace(h, socket_name=server.socket_name, socket_path=server.socket_path)
        for h in picked
    )


def qualify_pane_id(host: HostSpec, pane_id: PaneId) -> PaneId:
    """The id of ``host``'s pane ``pane_id`` in a dashboard of several hosts (module docstring)."""
    return pane_id if host.is_local else f"{host.name}:{pane_id}"


def split_pane_id(pane_id: PaneId) -> tuple[str, PaneId]:
    """(host name, the id on that host's server); ``LOCAL`` for an unqualified id."""
    host, sep, raw = pane_id.rpartition(":")
    return (host, raw) if sep else (LOCAL, pane_id)


@dataclass(frozen=True, slots=True)
class HostState:
    """One watched host as the status bar and ``--headless`` tell it."""

    name: str
    connected: bool | None = None
    """None: not answered yet."""
    message: str = ""
    """Why it is away (or how it connected)."""
    lease: str = ""
    """Who acts as its sidecar (`nbs_tui.core.sidecar.lease_rules.describe_holder`); empty: no lease in use."""
    acting: bool = False
    """This process holds that host's lease."""
