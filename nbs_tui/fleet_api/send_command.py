"""``nbs-tui send TARGET (TEXT | --file F) [--wait-idle SECONDS] [--json]``: a text typed into
an agent's input box once, whole, and submitted once, by the server's lease holder under the
sidecar's rules (docs/fleet-api.md).

This process types nothing: it asks the holder through tmux (`nbs_tui.sidecar.send_channel`),
starting the service when no live sidecar holds the lease (`ensure_service`, in `fleet_rows`), and
waits for the answer. Exit codes: 0 submitted; 2 refused or failed, with the reason; 3 no such
agent; 4 bad input; 124 no answer (or not idle within ``--wait-idle``). `send_document` is the
work without argparse or printing (``nbs-tui mcp`` calls it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet_api.agent_row import AgentRow
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError
from nbs_tui.core.fleet_api.target import resolve_target
from nbs_tui.core.fleet_api.wait_rules import Until
from nbs_tui.core.sidecar.delivery_rules import Delivery, Refusal, SendRequest, clean_text
from nbs_tui.core.sidecar.lease_rules import LEASE_OPTION, parse_lease
from nbs_tui.fleet_api.read_commands import REMOTE_TIMEOUT, _run_there, fleet_rows
from nbs_tui.fleet_api.service_up import ensure_service
from nbs_tui.fleet_api.wait_command import wait_here
from nbs_tui.server_options import add_server_options
from nbs_tui.sidecar.send_channel import SendChannel
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError

COMMANDS = ("send",)
ANSWER_WAIT = 60.0
"""Seconds the holder has to take a request and answer it (a paste and a submit take a few ticks)."""
TYPED_GRACE = 30.0
"""More seconds given to a holder that has pasted the text when the answer wait runs out."""
NO_HOLDER_WAIT = 10.0
"""Seconds a request waits with no sidecar holding the lease at all before it is taken back
(``service = "off"`` and no dashboard contending: nobody would ever answer)."""
LOOK_EVERY = 0.1
SERVE_AGAIN = 2.0
"""Seconds between two judgements of the lease while a request waits (`ensure_service`: one tmux
round trip while a live holder holds it): a holder that died meanwhile is replaced within
seconds, not after the request's minute (``wait`` judges every 10 s: it may wait for hours)."""


def add_parsers(commands: argparse._SubParsersAction[Any]) -> None:
    send = commands.add_parser(
        "send", help="type a text into an agent's input box once and submit it (by the sidecar, under its rules)"
    )
    send.add_argument("target", metavar="TARGET", help="%%3, session:window.pane, a window or worker name, or host/server/%%3")
    send.add_argument("text", nargs="?", metavar="TEXT", help="the text (or --file)")
    send.add_argument("--file", metavar="F", help="send the text of file F (- for stdin)")
    send.add_argument("--text", dest="text_option", help=argparse.SUPPRESS)  # --text=... : how a host is asked
    send.add_argument("--wait-idle", type=float, metavar="SECONDS", help="first wait up to SECONDS for the agent to be idle")
    send.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_server_options(send, inherit=True)


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        doc = send_document(settings, args.target, _given_text(args), args.wait_idle)
    except FleetApiError as error:
        print(f"nbs-tui send: {error.message}", file=sys.stderr)
        return error.code
    if args.json:
        print(json.dumps(doc, ensure_ascii=False))
    else:
        agent = doc["agent"]
        print(f"sent to {agent['target']} ({agent['address']} {agent['window_name']}): {doc['message']}")
    return ExitCode.DONE


def _given_text(args: argparse.Namespace) -> str:
    given = [t for t in (args.text, args.text_option) if t is not None]
    if args.file is not None:
        try:
            given.append(sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            raise FleetApiError(ExitCode.BAD_INPUT, f"--file {args.file}: {error}") from None
    if len(given) != 1:
        raise FleetApiError(ExitCode.BAD_INPUT, "give the text to send, or --file F (one of them)")
    return given[0]


def send_document(settings: Settings, target: str, text: str, wait_idle: float | None = None) -> dict[str, Any]:
    """Have the lease holder type ``text`` into ``target`` once and submit it; the JSON document
    ``nbs-tui send --json`` prints. Raises `FleetApiError`: refused or failed (2, the reason),
    no such agent (3), bad input (4), no answer or not idle in time (124)."""
    try:
        text = clean_text(text)
    except ValueError as error:
        raise FleetApiError(ExitCode.BAD_INPUT, str(error)) from None
    if wait_idle is not None and wait_idle < 0:
        raise FleetApiError(ExitCode.BAD_INPUT, f"--wait-idle {wait_idle:g}: must be 0 or more")
    hosts = {host.name: host for host in settings.watched_hosts()}
    row = resolve_target(target, fleet_rows("send", settings))  # starts the service unless a live sidecar holds the lease
    host = hosts[row.host]
    if not host.is_local:  # that host's own nbs-tui asks its holder; the agent as named here
        words = ["send", f"--text={text}", row.pane_id]
        if wait_idle is not None:
            words[1:1] = ["--wait-idle", f"{wait_idle:g}"]
        out = _run_there(host, words, timeout=REMOTE_TIMEOUT + ANSWER_WAIT + TYPED_GRACE + (wait_idle or 0))
        out["agent"] = row.as_json()
        return out
    commands = TmuxServerCommands.for_server(host.server)
    started = time.monotonic()
    try:
        waited = _wait_idle(settings, host, row, wait_idle) if wait_idle is not None else None
        delivery, request = _ask_holder(settings, commands, row, text)
    except TmuxError as error:
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"{row.target}: {error}") from None
    if not delivery.ok:
        why = f" ({delivery.reason})" if delivery.reason else ""
        raise FleetApiError(ExitCode.REFUSED, f"{delivery.result.value}{why}: {delivery.message}")
    return {
        "agent": row.as_json(),
        **delivery.as_json(),
        "request": request.id,
        "characters": len(text),
        "lines": text.count("\n") + 1,
        "waited_idle": None if waited is None else round(waited, 3),
        "seconds": round(time.monotonic() - started, 3),
    }


def _wait_idle(settings: Settings, host: HostSpec, row: AgentRow, seconds: float) -> float:
    """Wait as ``nbs-tui wait --until idle`` does (`wait_here`) until the holder publishes the
    agent idle; the seconds waited."""
    out = wait_here(settings, host, [row], Until.IDLE, seconds)
    if out["timed_out"]:
        state = out["agents"][0]["state"]
        raise FleetApiError(ExitCode.TIMEOUT, f"{row.target} not idle within {seconds:g} s ({state or 'no state published'})")
    return float(out["waited"])


def _ask_holder(settings: Settings, commands: TmuxServerCommands, row: AgentRow, text: str) -> tuple[Delivery, SendRequest]:
    channel = SendChannel(commands)
    request = _post(channel, row, text)
    started = time.monotonic()
    until = started + ANSWER_WAIT
    answer = None
    held_at = served = started  # when a holder was last seen; when the lease was last judged
    while time.monotonic() < until:
        answer = channel.answer(row.pane_id, request)
        if answer is not None and answer.delivery is not None:
            return answer.delivery, request
        now = time.monotonic()
        if settings.service == "auto" and now - served >= SERVE_AGAIN:  # a holder that died meanwhile is replaced
            served = now
            with contextlib.suppress(TmuxError):  # tmux slow this once: the request still waits
                ensure_service(settings, commands, _say)
        if now - held_at >= 1.0:  # once a second: is anyone there to answer?
            if _holder(commands) != NO_HOLDER:
                held_at = now
            elif now - held_at >= NO_HOLDER_WAIT and answer is None and channel.withdraw(request, row.pane_id):
                raise FleetApiError(
                    ExitCode.REFUSED,
                    f"refused ({Refusal.NOT_HOLDER.value}): {NO_HOLDER} (service = \"off\" and no dashboard "
                    "acts for this server): withdrawn, nothing typed",
                )
        time.sleep(LOOK_EVERY)
    if channel.withdraw(request, row.pane_id):
        who = _holder(commands)
        raise FleetApiError(ExitCode.TIMEOUT, f"no answer within {ANSWER_WAIT:g} s ({who}): withdrawn, nothing typed")
    until = time.monotonic() + TYPED_GRACE  # a holder took it: what became of it is coming
    while time.monotonic() < until:
        answer = channel.answer(row.pane_id, request)
        if answer is not None and answer.delivery is not None:
            return answer.delivery, request
        time.sleep(LOOK_EVERY)
    said = "pasted by the sidecar" if answer is not None else "taken by the sidecar"
    raise FleetApiError(
        ExitCode.TIMEOUT, f"{said} but not answered within {ANSWER_WAIT + TYPED_GRACE:g} s: look at the pane before sending again"
    )


def _post(channel: SendChannel, row: AgentRow, text: str) -> SendRequest:
    """Post the request; a pending one whose caller gave up and that nothing typed is taken back first."""
    for _ in range(2):
        request = channel.post(row.pane_id, text, time.time() + ANSWER_WAIT)
        if request is not None:
            return request
        pending, _answer = channel.pending(row.pane_id)
        if pending is None or pending.deadline >= time.time() or not channel.withdraw(pending, row.pane_id):
            break
    raise FleetApiError(
        ExitCode.REFUSED, f"refused ({Refusal.PENDING.value}): another send to {row.target} is pending; nothing typed"
    )


NO_HOLDER = "no sidecar holds the lease"


def _say(said: str) -> None:
    print(f"nbs-tui send: {said}", file=sys.stderr)


def _holder(commands: TmuxServerCommands) -> str:
    holder = parse_lease(commands.display("", f"#{{{LEASE_OPTION}}}"))
    return NO_HOLDER if holder is None else f"the sidecar is {holder.describe()}"
