"""``nbs-tui answer TARGET CHOICE [--menu ID]``: answer the permission prompt, question or plan
menu an agent waits on, as the dashboard's answer card does (`nbs_tui.core.detection.answer`).

Every menu has an id (`nbs_tui.core.detection.answer.menu_id`: a short hash of its kind, question
and options), shown as ``menu`` by ``agents --json`` and ``read --json``. The pane is captured and
read; the menu found must be the one ``--menu`` names (without it: the one just read); the
choice must be on it (a digit, ``y``, ``n``, ``esc``, or an option's label). Right before the key
the pane is captured again and must still show that very menu, and the key goes in one tmux
step guarded on the pane's process (the same agent, alive), no poll of the sidecar in flight and
no ``nbs-tui new`` taking the pane through its start. Anything else is refused (exit 2) with
nothing pressed. One key, once: never retried.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from nbs_tui.config import Settings
from nbs_tui.core.detection.answer import AnswerCard, Choice, card_for, choose_answer, recheck
from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet.model import Detection
from nbs_tui.core.fleet_api.agent_row import AgentRow
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError
from nbs_tui.core.fleet_api.target import resolve_target
from nbs_tui.core.sidecar.lease_rules import INFLIGHT_OPTION, START_CLAIM_OPTION
from nbs_tui.fleet_api.agent_listing import capture
from nbs_tui.fleet_api.read_commands import _run_there, fleet_rows
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.server_options import add_server_options
from nbs_tui.tmux.commands import Guard, TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError, TmuxTimeout

COMMANDS = ("answer",)


def add_parsers(commands: argparse._SubParsersAction[Any]) -> None:
    answer = commands.add_parser("answer", help="answer the permission prompt, question or plan menu an agent waits on")
    answer.add_argument("target", metavar="TARGET", help="%%3, session:window.pane, a window or worker name, or host/server/%%3")
    answer.add_argument("choice", metavar="CHOICE", help="an option's digit or label (or y, n, esc)")
    answer.add_argument("--menu", metavar="ID", help="answer only if the menu on screen is this one (its id from read/agents --json)")
    answer.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_server_options(answer, inherit=True)


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        out = answer_document(settings, args.target, args.choice, args.menu)
    except FleetApiError as error:
        print(f"nbs-tui answer: {error.message}", file=sys.stderr)
        return error.code
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        agent = out["agent"]
        print(f"{agent['target']} ({agent['address']} {agent['window_name']}): {out['kind']} answered {out['answered']}")
    return ExitCode.DONE


def answer_document(settings: Settings, target: str, choice: str, menu: str | None = None) -> dict[str, Any]:
    """Answer the menu ``target`` waits on with ``choice``, only if it is the menu ``menu`` names
    (None: the one read now). The document says which menu and which key; raises
    `FleetApiError`: refused (2, nothing pressed), no such agent (3), bad input (4)."""
    if not choice.strip():
        raise FleetApiError(ExitCode.BAD_INPUT, "empty CHOICE: give an option's digit or label")
    if menu is not None and not menu.strip():
        raise FleetApiError(ExitCode.BAD_INPUT, "empty --menu: give the id read/agents --json showed")
    hosts = {host.name: host for host in settings.watched_hosts()}
    row = resolve_target(target, fleet_rows("answer", settings))
    host = hosts[row.host]
    if not host.is_local:  # that host's own nbs-tui reads its screen and presses its key
        out = _run_there(host, ["answer", row.pane_id, choice, *(["--menu", menu] if menu else [])])
        out["agent"] = row.as_json()
        return out
    return _answer_here(settings, host, row, choice, menu)


def _answer_here(settings: Settings, host: HostSpec, row: AgentRow, choice: str, menu: str | None) -> dict[str, Any]:
    commands = TmuxServerCommands.for_server(host.server)
    log = ActionLog(settings.action_log, lambda _source, message: print(f"nbs-tui answer: {message}", file=sys.stderr))
    card: AnswerCard | None = None
    picked: Choice | None = None
    try:
        identity = commands.pane_identity(row.pane_id)
        if identity is None or identity.dead:
            raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"{row.target}: the pane is gone or its program has exited")
        read = _read(commands, row)
        card = card_for(row.pane_id, identity.pid, read)
        if card is None:
            raise FleetApiError(ExitCode.REFUSED, f"{row.target} shows no menu to answer: it is {read.state.value} ({read.reason})")
        if menu is not None and menu.strip().lower() != card.menu_id:
            raise FleetApiError(
                ExitCode.REFUSED, f"the {card.title} on {row.target}'s screen is menu {card.menu_id}, not {menu.strip()}: read it again"
            )
        chosen = choose_answer(card, choice)
        if isinstance(chosen, str):
            raise FleetApiError(ExitCode.REFUSED, f"{row.target}: {chosen}")
        picked = chosen
        live = _read(commands, row)  # right before the key: still that very menu?
        changed = recheck(card, live) or ("" if _same_menu(card, live) else f"the {card.title} changed: it is another menu now")
        if changed:
            raise FleetApiError(ExitCode.REFUSED, f"{row.target}: {changed}")
        if not commands.run_guarded(_still_safe(row, identity.pid), [("send-keys", "-t", row.pane_id, picked.key)]):
            raise FleetApiError(
                ExitCode.REFUSED,
                f"{row.target}: not pressed: the pane's process changed, or the sidecar is typing in it, or nbs-tui new is starting it",
            )
    except FleetApiError as error:
        if card is not None:  # a menu was read: the refusal is an action the operator may look for
            _log(log, row, picked.key if picked else choice, Outcome.SKIPPED, error.message)
        raise
    except TmuxTimeout as error:  # tmux did not answer: the key may or may not have gone in
        _log(log, row, picked.key if picked else choice, Outcome.FAILED, str(error))
        said = "the key may have been pressed: read the screen before answering again"
        raise FleetApiError(ExitCode.TIMEOUT, f"{row.target}: {error}; {said}" if picked else f"{row.target}: {error}") from None
    except TmuxError as error:
        _log(log, row, picked.key if picked else choice, Outcome.FAILED, str(error))
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"{row.target}: {error}") from None
    _log(log, row, picked.key, Outcome.SENT, picked.said)
    return {
        "agent": row.as_json(),
        "menu": card.menu_id,
        "kind": card.title,
        "question": card.prompt,
        "options": [{"number": o.number, "label": o.label} for o in card.options],
        "key": picked.key,
        "answered": picked.said,
    }


def _read(commands: TmuxServerCommands, row: AgentRow) -> Detection:
    return detect_text(capture(commands, row.pane_id))


def _same_menu(card: AnswerCard, live: Detection) -> bool:
    again = card_for(card.pane_id, card.pid, live)
    return again is not None and again.menu_id == card.menu_id


def _still_safe(row: AgentRow, pid: int) -> Guard:
    """Inside tmux, in the step that presses the key: the same process, alive, no poll of the
    sidecar in flight (``@nbs_inflight``), no ``nbs-tui new`` starting it (``@nbs_starting``)."""
    checks = [
        f"#{{==:#{{pane_pid}},{pid}}}",
        "#{==:#{pane_dead},0}",
        f"#{{==:#{{{INFLIGHT_OPTION}}},}}",
        f"#{{==:#{{{START_CLAIM_OPTION}}},}}",
    ]
    condition = checks[-1]
    for check in reversed(checks[:-1]):
        condition = f"#{{&&:{check},{condition}}}"
    return Guard(condition, target=row.pane_id)


def _log(log: ActionLog, row: AgentRow, sent: str, outcome: Outcome, reason: str) -> None:
    log.append(ActionRecord(time.time(), "answer", row.pane_id, row.address, sent, "nbs-tui answer", outcome, reason))
