"""``nbs-tui send``'s request to the lease holder, through tmux (docs/fleet-api.md), both ends.

As a view's poll request (docs/lease.md), and with no port or file: the caller loads the text
into a named tmux buffer (``nbs-send-ID``: any length, any bytes, no quoting) and sets the pane
option `SEND_REQUEST_OPTION` to ``ID DEADLINE`` only while it is unset (``if-shell -F``: the check
and the set one step inside tmux, so a second send to the pane while one is pending is refused,
never overwrites). The holder reads the request with its switches each tick, hands the text to
its `SendDesk`, and pastes it through a fence that also requires the request to stand and
writes ``ID typed TOKEN`` into `SEND_ANSWER_OPTION` in the same step. Its answer replaces that
with ``ID RESULT REASON MESSAGE`` and unsets the request, again only while the request stands.
A caller that gives up withdraws its request only while nothing was typed (the same kind of
step), so either the text was never typed or the caller keeps waiting for what became of it.
"""

from __future__ import annotations

import contextlib
import secrets

from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.sidecar.delivery_rules import (
    SEND_ANSWER_OPTION,
    SEND_REQUEST_OPTION,
    TYPED,
    Delivery,
    SendAnswer,
    SendRequest,
    buffer_name,
    parse_send_answer,
    parse_send_request,
    render_answer,
    typed_answer,
)
from nbs_tui.core.sidecar.lease_rules import escape_format_literal
from nbs_tui.sidecar.pane_options import option_command
from nbs_tui.tmux.commands import Guard, TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError


def _request_stands(request: SendRequest) -> str:
    """A format true while the pane's request is still ``request``."""
    return f"#{{==:#{{{SEND_REQUEST_OPTION}}},{escape_format_literal(request.render())}}}"


def _not_typed(request: SendRequest) -> str:
    """A format true while no holder has written that it typed ``request``."""
    return f"#{{?#{{m:{request.id} {TYPED} *,#{{{SEND_ANSWER_OPTION}}}}},0,1}}"


class SendChannel:
    """One tmux server's send requests: `post`, `answer`, `withdraw` (the caller), `text`,
    `typing_fence`, `reply` (the holder). Every call blocks for a tmux round trip or two."""

    def __init__(self, commands: TmuxServerCommands) -> None:
        self.commands = commands

    # -- the caller ----------------------------------------------------------------------------

    def post(self, pane_id: PaneId, text: str, deadline: float) -> SendRequest | None:
        """Ask the holder to send ``text``; None when the pane has a request pending already
        (nothing changed). The text goes first, so a holder never finds a request without it."""
        request = SendRequest(secrets.token_hex(8), int(deadline))
        name = buffer_name(request.id)
        self.commands.run("load-buffer", "-b", name, "-", stdin=text.encode("utf-8"))
        free = Guard(f"#{{==:#{{{SEND_REQUEST_OPTION}}},}}", target=pane_id)
        try:
            posted = self.commands.run_guarded(free, [option_command(pane_id, SEND_REQUEST_OPTION, request.render())])
        except TmuxError:
            self._drop_buffer(request)
            raise
        if not posted:
            self._drop_buffer(request)
            return None
        return request

    def pending(self, pane_id: PaneId) -> tuple[SendRequest | None, SendAnswer | None]:
        """The pane's request and answer as tmux has them now."""
        fmt = f"#{{{SEND_REQUEST_OPTION}}}\t#{{{SEND_ANSWER_OPTION}}}"
        request, _, answer = self.commands.display(pane_id, fmt).partition("\t")
        return parse_send_request(request), parse_send_answer(answer)

    def answer(self, pane_id: PaneId, request: SendRequest) -> SendAnswer | None:
        """The holder's answer to ``request`` so far (``typed``, or final); None: none yet."""
        found = parse_send_answer(self.commands.display(pane_id, f"#{{{SEND_ANSWER_OPTION}}}"))
        return found if found is not None and found.id == request.id else None

    def withdraw(self, request: SendRequest, pane_id: PaneId) -> bool:
        """Take the request back, only while it stands and nothing was typed; True if it was
        (no holder will type it now)."""
        guard = Guard(f"#{{&&:{_request_stands(request)},{_not_typed(request)}}}", target=pane_id)
        withdrawn = self.commands.run_guarded(guard, [option_command(pane_id, SEND_REQUEST_OPTION, "")])
        if withdrawn:
            self._drop_buffer(request)
        return withdrawn

    # -- the holder ----------------------------------------------------------------------------

    def text(self, request: SendRequest) -> str | None:
        """The request's text (None: its buffer is gone)."""
        try:
            return self.commands.run("show-buffer", "-b", buffer_name(request.id)).text
        except TmuxError:
            return None

    def typing_fence(self, request: SendRequest, pane_id: PaneId, token: str) -> Guard:
        """What the holder's paste of the text goes through besides the lease's fence: the
        request still stands, and ``ID typed TOKEN`` is written in the same step."""
        return Guard(
            _request_stands(request),
            (option_command(pane_id, SEND_ANSWER_OPTION, typed_answer(request.id, token)),),
            target=pane_id,
        )

    def reply(self, request: SendRequest, pane_id: PaneId, delivery: Delivery) -> bool:
        """Answer the request and unset it, only while it stands (a withdrawn one, or a later
        request's ``typed``, is never overwritten); the buffer goes either way."""
        guard = Guard(_request_stands(request), target=pane_id)
        try:
            return self.commands.run_guarded(
                guard,
                [
                    option_command(pane_id, SEND_ANSWER_OPTION, render_answer(request.id, delivery)),
                    option_command(pane_id, SEND_REQUEST_OPTION, ""),
                ],
            )
        finally:
            self._drop_buffer(request)

    def _drop_buffer(self, request: SendRequest) -> None:
        with contextlib.suppress(TmuxError):  # gone already (another party dropped it)
            self.commands.run("delete-buffer", "-b", buffer_name(request.id))
