"""TARGET, as every fleet API command takes it, resolved to one agent of those listed.

A TARGET is a pane id (``%3``), ``session:window.pane``, a window name, an NBS worker name, or
``host/server/%3`` (`nbs_tui.core.fleet.card_target`). One that names several agents (the same
window name in two sessions, ``%3`` on two hosts) is bad input listing them; one that names
none is "no such agent".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nbs_tui.core.fleet.card_target import CardTargetError, parse_card_target
from nbs_tui.core.fleet_api.agent_row import AgentRow
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError

_PANE_ID = re.compile(r"%[0-9]+")
_ADDRESS = re.compile(r"(?P<session>.+):(?P<window>[0-9]+)\.(?P<pane>[0-9]+)")


def resolve_target(text: str, rows: Sequence[AgentRow]) -> AgentRow:
    """The one agent of ``rows`` that ``text`` names; raises `FleetApiError` (bad input: not a
    target, or ambiguous; no such agent: none matches)."""
    text = text.strip()
    if not text:
        raise FleetApiError(ExitCode.BAD_INPUT, "empty target: give a pane id (%3), session:window.pane, a window or worker name, or host/server/%3")
    if text.count("/") == 2 and not any(text in (r.window_name, r.worker) for r in rows):
        try:
            card = parse_card_target(text)
        except CardTargetError as error:
            raise FleetApiError(ExitCode.BAD_INPUT, str(error)) from None
        found = [r for r in rows if (r.host, r.server, r.pane_id) == (card.host, card.server, card.pane)]
    elif _PANE_ID.fullmatch(text):
        found = [r for r in rows if r.pane_id == text]
    elif (address := _ADDRESS.fullmatch(text)) is not None:
        where = (address["session"], int(address["window"]), int(address["pane"]))
        found = [r for r in rows if (r.session, r.window_index, r.pane_index) == where]
    else:
        found = [r for r in rows if text in (r.window_name, r.worker)]
    if not found:
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"no such agent: {text}")
    if len(found) > 1:
        listed = ", ".join(f"{r.target} ({r.address} {r.window_name})" for r in found)
        raise FleetApiError(ExitCode.BAD_INPUT, f"ambiguous target {text}: {len(found)} agents match: {listed}")
    return found[0]
