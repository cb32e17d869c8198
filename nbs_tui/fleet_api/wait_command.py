"""``nbs-tui wait TARGET... --until idle|needs|done|gone [--timeout S] [--any]``: block until the
agents reach a state, judged by `nbs_tui.core.fleet_api.wait_rules` (docs/fleet-api.md).

It reads what the lease holder publishes, never a screen: one tmux command line every
`LOOK_EVERY` seconds (the lease, and each target's pane by id, or one ``list-panes -a`` for many
targets), whatever the number of agents. The holder publishes once a tick (1 s), so two looks a
tick see every state it published. Every `SERVE_AGAIN` seconds the lease is judged as every
command judges it (`ensure_service`): one found free, dead or expired meanwhile (the service
died) gets the service started again.

All targets must reach the state (``--any``: one of them). Targets on another host are waited
for by that host's own nbs-tui (`_run_there`), one host per wait.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
from collections.abc import Sequence
from typing import Any

from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet_api.agent_row import AgentRow
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError
from nbs_tui.core.fleet_api.target import resolve_target
from nbs_tui.core.fleet_api.wait_rules import (
    Holder,
    PaneLook,
    TargetWait,
    Until,
    all_reached,
    hopeless,
)
from nbs_tui.core.sidecar.lease_rules import (
    LEASE_OPTION,
    NEEDS_OPTION,
    STATE_OPTION,
    Lease,
    LeaseValue,
    parse_lease,
)
from nbs_tui.fleet_api.read_commands import REMOTE_TIMEOUT, _run_there, fleet_rows
from nbs_tui.fleet_api.service_up import ensure_service
from nbs_tui.server_options import add_server_options
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import ServerGone, TmuxCommandError, TmuxError

COMMANDS = ("wait",)
LOOK_EVERY = 0.5
"""Seconds between two looks at the published states: half the holder's tick."""
FEW_PANES = 8
"""Up to this many targets, a look asks for each pane by id instead of listing every pane."""
SERVE_AGAIN = 10.0
"""Seconds between two looks at whether the lease still has a live holder (more than the
default ttl, so a value that stood still between two looks is expired)."""
REMOTE_FOREVER = 7 * 86400.0
"""The ssh command's own limit for a wait with no --timeout on another host."""

_LOOK_FIELDS = ("#{pane_id}", "#{pane_pid}", "#{pane_dead}", f"#{{{STATE_OPTION}}}", f"#{{{NEEDS_OPTION}}}")


def add_parsers(commands: argparse._SubParsersAction[Any]) -> None:
    wait = commands.add_parser(
        "wait", help="wait until agents are idle, need you, are done (worked, then idle) or are gone"
    )
    wait.add_argument("targets", nargs="+", metavar="TARGET", help="%%3, session:window.pane, a window or worker name, or host/server/%%3")
    wait.add_argument("--until", required=True, choices=[u.value for u in Until], help="the state to wait for")
    wait.add_argument("--timeout", type=float, default=None, metavar="S", help="give up after S seconds (exit 124)")
    wait.add_argument("--any", dest="any_one", action="store_true", help="until one target gets there, not all")
    wait.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_server_options(wait, inherit=True)


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        out = wait_document(settings, args.targets, args.until, args.timeout, any_one=args.any_one)
    except FleetApiError as error:
        print(f"nbs-tui wait: {error.message}", file=sys.stderr)
        return error.code
    except KeyboardInterrupt:
        return 130  # as a shell reports SIGINT: neither done nor timed out
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        for item in out["agents"]:
            agent = item["agent"]
            said = f"{item['state'] or 'unknown'}" + (f" ({item['gone']})" if item.get("gone") else "")
            mark = f"reached {out['until']} after {item['after']:g} s" if item["reached"] else "not reached"
            print(f"{agent['target']} ({agent['address']} {agent['window_name']}): {said}; {mark}")
    if out["timed_out"]:
        print(f"nbs-tui wait: timed out after {out['timeout']:g} s waiting until {out['until']}", file=sys.stderr)
        return ExitCode.TIMEOUT
    return ExitCode.DONE


def wait_document(
    settings: Settings, targets: Sequence[str], until: str, timeout: float | None = None, *, any_one: bool = False
) -> dict[str, Any]:
    """Wait until every agent ``targets`` name (``any_one``: one of them) reaches ``until``, or
    ``timeout`` seconds pass (None: no limit). The document says, per agent, the state last
    seen and whether it got there; ``timed_out`` is true when the time ran out first (the CLI's
    exit 124). Raises `FleetApiError`: bad input (4), no such agent (3, also when an agent it
    needs is gone while waiting for another state)."""
    try:
        goal = Until(until)
    except ValueError:
        raise FleetApiError(ExitCode.BAD_INPUT, f"--until {until}: one of {', '.join(u.value for u in Until)}") from None
    if timeout is not None and not (math.isfinite(timeout) and timeout >= 0):
        raise FleetApiError(ExitCode.BAD_INPUT, f"--timeout {timeout:g}: seconds, 0 or more (leave it out to wait as long as it takes)")
    if not targets:
        raise FleetApiError(ExitCode.BAD_INPUT, "no target: name at least one agent")
    started = time.monotonic()
    rows = fleet_rows("wait", settings)
    chosen: dict[str, AgentRow] = {}
    for text in targets:
        row = resolve_target(text, rows)
        chosen.setdefault(row.target, row)
    on = {row.host for row in chosen.values()}
    if len(on) > 1:
        raise FleetApiError(ExitCode.BAD_INPUT, f"targets on {len(on)} hosts ({', '.join(sorted(on))}): wait on one host at a time")
    host = next(h for h in settings.watched_hosts() if h.name in on)
    agents = list(chosen.values())
    if not host.is_local:
        return _wait_there(host, agents, goal, timeout, any_one)
    return wait_here(settings, host, agents, goal, timeout, any_one=any_one, started=started)


def wait_here(
    settings: Settings,
    host: HostSpec,
    agents: list[AgentRow],
    goal: Until,
    timeout: float | None,
    *,
    any_one: bool = False,
    started: float | None = None,
) -> dict[str, Any]:
    """The wait on this machine's server (``wait_document`` without resolving targets; ``send
    --wait-idle`` calls it too): its document, ``timed_out`` when ``timeout`` ran out first.
    Raises `FleetApiError` (3) when an agent it needs is gone."""
    started = time.monotonic() if started is None else started
    commands = TmuxServerCommands.for_server(host.server)
    waits = [TargetWait(row.pane_id, 0, goal, started) for row in agents]
    deadline = None if timeout is None else started + timeout
    looks = 0
    served, warned = started, False
    while True:
        lease, seen = _look(commands, [w.pane_id for w in waits if not w.ended])  # a gone one: asked no more
        holder = Holder(lease.token, lease.seq) if isinstance(lease, Lease) else None
        looks += 1
        now = time.monotonic()
        if seen is not None:  # None: tmux did not answer this time; no news, not "gone"
            for wait in waits:
                wait.look(seen.get(wait.pane_id), now, holder)
        if all_reached(waits, any_one) or hopeless(waits, any_one):
            break
        if deadline is not None and now >= deadline:
            break
        if now - served >= SERVE_AGAIN:  # a holder gone (free, dead, expired): its states would stand still
            served = now
            if settings.service == "auto":
                with contextlib.suppress(TmuxError):  # the next look says what became of the server
                    ensure_service(settings, commands, _say)
            elif lease is None and not warned:
                warned = True
                _say("no sidecar holds the lease and service is off: the published states will not change")
        time.sleep(LOOK_EVERY if deadline is None else max(0.0, min(LOOK_EVERY, deadline - time.monotonic())))
    reached = all_reached(waits, any_one)
    if not reached and hopeless(waits, any_one):
        gone = "; ".join(f"{row.target}: {w.gone_why}" for row, w in zip(agents, waits, strict=True) if w.gone_why)
        raise FleetApiError(ExitCode.NO_SUCH_AGENT, f"gone before {goal.value}: {gone}")
    return {
        "until": goal.value,
        "any": any_one,
        "timeout": timeout,
        "timed_out": not reached,
        "waited": round(time.monotonic() - started, 3),
        "looks": looks,
        "agents": [{"agent": row.as_json(), **w.as_json()} for row, w in zip(agents, waits, strict=True)],
    }


def _say(said: str) -> None:
    print(f"nbs-tui wait: {said}", file=sys.stderr)


def _look(commands: TmuxServerCommands, pane_ids: list[str]) -> tuple[LeaseValue, dict[str, PaneLook] | None]:
    """The lease (None: free), and the panes' published states, in one tmux command line;
    None: not read this time (tmux did not answer), {} when the server is gone. A few panes are
    asked for by id (tmux's work does not grow with the server's panes); many, or one gone (its
    ``display-message`` fails the line), by one ``list-panes -a``."""
    lease = ("display-message", "-p", f"#{{{LEASE_OPTION}}}")
    fmt = "\t".join(_LOOK_FIELDS)
    listing: tuple[str, ...] = ("list-panes", "-a", "-F", fmt)
    by_id: list[tuple[str, ...]] = [("display-message", "-p", "-t", p, fmt) for p in pane_ids] if len(pane_ids) <= FEW_PANES else []
    try:
        try:
            out = commands.run_many([lease, *(by_id or [listing])])
        except TmuxCommandError:
            if not by_id:
                raise
            out = commands.run_many([lease, listing])  # a pane gone failed the line: every pane, then
    except ServerGone:
        return None, {}
    except TmuxError:
        return None, None
    seen: dict[str, PaneLook] = {}
    for line in out.lines[1:]:
        fields = line.split("\t")
        if len(fields) != len(_LOOK_FIELDS) or not fields[1].isdigit():
            continue
        pane_id, pid, dead, state, needs = fields
        seen[pane_id] = PaneLook(int(pid), dead == "1", state, needs)
    return parse_lease(out.first), seen


def _wait_there(
    host: HostSpec, agents: list[AgentRow], goal: Until, timeout: float | None, any_one: bool
) -> dict[str, Any]:
    """The wait run by the host's own nbs-tui; its document, each agent as named here."""
    words = ["wait", *(row.pane_id for row in agents), "--until", goal.value]
    words += ["--timeout", f"{timeout:g}"] if timeout is not None else []
    words += ["--any"] if any_one else []
    limit = REMOTE_FOREVER if timeout is None else timeout + REMOTE_TIMEOUT
    out = _run_there(host, words, timeout=limit, documents=frozenset({ExitCode.TIMEOUT}))
    mine = {row.pane_id: row for row in agents}
    for item in out.get("agents", []):
        row = mine.get(str(item.get("pane_id")))
        if row is not None:
            item["agent"] = row.as_json()
    return out
