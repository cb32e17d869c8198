"""The name of one agent's answer card across processes: ``host/server-key/pane-id``.

A push notification (sent by the sidecar service) and the browser view (`nbs-tui web`, which
starts a dashboard with ``--open-card TARGET``) must name the same pane without sharing a
process. A tmux pane id (``%3``) is unique only on its server, and a server only on its host, so
the target names all three: the host as the dashboard names it (``local`` for this machine), the
server as `server_key` writes it (``default``, ``L-work``, ``S-_tmp_sock``) and the pane's id on
that server, never the qualified ``host:%3`` a dashboard of several hosts shows.

Examples: ``local/default/%3``, ``build-box/L-agents/%12``.

A link may open the agent's review instead of its card (a push after a turn that changed
files): its target is the same name after ``review:`` (`REVIEW_PREFIX`), ``review:local/default/%3``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from nbs_tui.core.fleet.host_spec import LOCAL, HostSpec, qualify_pane_id, split_pane_id
from nbs_tui.core.fleet.model import PaneId, ServerAddress, server_key

_PANE = re.compile(r"%[0-9]+")
_SERVER = re.compile(r"[A-Za-z0-9._-]+")


class CardTargetError(ValueError):
    """A target that names no pane; the message says what is wrong with it."""


@dataclass(frozen=True, slots=True)
class CardTarget:
    host: str
    """The host's name in the dashboard's ``[[hosts]]`` (``local`` for this machine)."""
    server: str
    """`server_key` of the tmux server on that host."""
    pane: PaneId
    """The pane's id on that server (``%3``)."""

    def __str__(self) -> str:
        return f"{self.host}/{self.server}/{self.pane}"

    def dashboard_pane_id(self, hosts: Sequence[HostSpec]) -> PaneId | None:
        """The id a dashboard watching ``hosts`` shows for the pane (``%3`` or ``host:%3``), or
        None when it watches no such host and server."""
        for host in hosts:
            if host.name == self.host and server_key(host.server) == self.server:
                return qualify_pane_id(host, self.pane)
        return None


def format_card_target(host: str, server: ServerAddress, pane_id: PaneId) -> str:
    """The target of pane ``pane_id`` (``%3``, or a dashboard's ``host:%3``) of the tmux
    ``server`` on the host named ``host`` (empty: this machine)."""
    _, raw = split_pane_id(pane_id)
    host = host or LOCAL
    return str(_checked(host, server_key(server), raw, f"{host}/{server_key(server)}/{raw}"))


def parse_card_target(text: str) -> CardTarget:
    """``host/server-key/pane-id`` as a `CardTarget`; raises `CardTargetError` saying what is wrong."""
    host, sep1, rest = text.strip().partition("/")
    server, sep2, pane = rest.partition("/")
    if not (sep1 and sep2):
        raise CardTargetError(f"card target {text!r} is not host/server/pane (e.g. local/default/%3)")
    return _checked(host, server, pane, text)


def _checked(host: str, server: str, pane: str, text: str) -> CardTarget:
    if not host or any(ch.isspace() or ch in ":/" for ch in host):
        raise CardTargetError(f"card target {text!r}: host {host!r} is not a host name")
    if not _SERVER.fullmatch(server):
        raise CardTargetError(f"card target {text!r}: server {server!r} is not a server key (default, L-NAME, S-PATH)")
    if not _PANE.fullmatch(pane):
        raise CardTargetError(f"card target {text!r}: pane {pane!r} is not a tmux pane id (%N)")
    return CardTarget(host, server, pane)


REVIEW_PREFIX = "review:"
"""A link target that opens the agent's review (`nbs_tui.dashboard.review`), not its card."""


def review_link_target(card: str) -> str:
    """The link target of ``card``'s agent's review."""
    return REVIEW_PREFIX + card


def split_link_target(text: str) -> tuple[bool, CardTarget]:
    """(is it a review, the agent) of a link's target; raises `CardTargetError`."""
    review = text.startswith(REVIEW_PREFIX)
    return review, parse_card_target(text.removeprefix(REVIEW_PREFIX))
