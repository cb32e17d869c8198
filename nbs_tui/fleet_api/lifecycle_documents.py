"""The lifecycle's commands ``new``, ``stop`` and ``restart`` as plain functions that return their ``--json`` document:
the command line prints it (or a sentence made from it), ``nbs-tui mcp`` returns it as a tool's
result (`nbs_tui.fleet_api.mcp_server`). Each takes the `Lifecycle` of the host it acts on and
closes it.

A command that did part of its work and then stopped (an agent started but stuck at a startup
screen, a restart whose new process stopped) raises `CommandFailed` with the document of what
was done; bad input raises `SpecError` before anything is made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from nbs_tui.core.fleet.agent_spec import NewAgent
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.files.agent_input import PreparedAgent
from nbs_tui.fleet_api.service_up import wait_published
from nbs_tui.lifecycle.agent_start import StartStopped
from nbs_tui.lifecycle.agent_stop import StopError
from nbs_tui.lifecycle.operations import Lifecycle
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.runtime.service_starter import sidecar_flags
from nbs_tui.tmux.errors import TmuxError

Warn = Callable[[str], None]
Confirm = Callable[[str, PaneId], bool]
"""Asked before a stop or restart with the pane's ``session:window.pane`` and id; False: not done."""


class CommandFailed(RuntimeError):
    """The command did not finish (exit 1): ``message`` says why; ``document`` is what was done
    (the ``--json`` line the command still prints), or None when nothing was."""

    def __init__(self, message: str, document: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.document = document


class NotConfirmed(Exception):
    """The person asked said no: nothing was done."""


def start_document(lifecycle: Lifecycle, found: PreparedAgent | NewAgent, warn: Warn) -> dict[str, Any]:
    """``nbs-tui new --json``: start the agent ``found`` (checked on this machine, or a spec
    for another host, checked there), then make sure the server's service runs so it is served,
    and give it a moment to publish the agent's state (`wait_published`). Raises `SpecError`
    (nothing made), `CommandFailed`."""
    spec = found.spec if isinstance(found, PreparedAgent) else found
    name = spec.name
    try:
        prepared = lifecycle.prepare(found)
        name = prepared.agent.spec.name
        started = lifecycle.start(prepared, warn=warn)
    except TmuxError as error:
        raise CommandFailed(f"{name}: tmux on {lifecycle.describe()}: {error}") from None
    except StartStopped as stop:
        where = f" in {stop.started.target} ({stop.started.pane_id})" if stop.started else ""
        document = None
        if stop.started:
            serve(lifecycle, warn)
            document = {**stop.started.as_json(), "stopped": stop.line}
        raise CommandFailed(f"{name}{where}: {stop.line}", document) from None
    else:
        serve(lifecycle, warn)
        try:  # addressable by the next command (`agents`, `wait`, `send`...) once start returns
            wait_published(lifecycle.host.commands, started.pane_id)
        except TmuxError as error:
            warn(f"{name}: not seen published by the server's service: {error}")
    finally:
        lifecycle.close()
    return started.as_json()


def serve(lifecycle: Lifecycle, warn: Warn) -> None:
    """The server's service made sure of after a start (`Lifecycle.serve`), with these settings'
    sidecar flags (a host's own paths are its own: only a service here gets this one's)."""
    try:
        lifecycle.serve(sidecar_flags(lifecycle.settings, local=not lifecycle.host.remote), warn)
    except TmuxError as error:  # the agent was started: say why it may go unserved, exit as started
        warn(f"the lease of {lifecycle.describe()} could not be read ({error}); no service started")


def stop_document(
    lifecycle: Lifecycle, command: str, pane: str, warn: Warn, confirm: Confirm | None = None
) -> dict[str, Any]:
    """``nbs-tui stop|restart PANE --json`` (``command``: which): ``pane`` is a pane id or
    tmux target (``agents:api``); ``confirm`` (when given) is asked first. Logged in the action
    log and told to every view. Raises `NotConfirmed`, `SpecError`, `CommandFailed` (a restart
    whose new process stopped: with its document)."""
    log = _ActionLine(lifecycle, warn)
    try:
        control = lifecycle.control()
        pane_id, _pid, target, _folder = control.resolve(pane)
        if confirm is not None and not confirm(target, pane_id):
            raise NotConfirmed(f"{command} {target} ({pane_id}): not confirmed")
        if command == "stop":
            stopped = control.stop(pane_id)
            log("stop", pane_id, target, stopped.how, True, "")
            return {"pane_id": pane_id, "target": target, "stopped_by": stopped.how}
        restarted = control.restart(pane_id)
        log(
            "restart", pane_id, target, f"claude --resume {restarted.session_id}",
            not restarted.stopped, restarted.stopped or f"stopped with {restarted.how}",
        )  # fmt: skip
        out = {"pane_id": pane_id, "target": target, "session_id": restarted.session_id, "stopped": restarted.stopped or None}
        if restarted.stopped:
            raise CommandFailed(f"{target}: {restarted.stopped}", out)
        return out
    except StopError as error:
        log(command, pane, pane, "", False, str(error))
        raise CommandFailed(str(error)) from None
    except TmuxError as error:
        raise CommandFailed(f"tmux on {lifecycle.describe()}: {error}") from None
    finally:
        lifecycle.close()


class _ActionLine:
    """A stop's or restart's line in the action log, and the event every view is told of."""

    def __init__(self, lifecycle: Lifecycle, warn: Warn) -> None:
        self._log = ActionLog(lifecycle.settings.action_log, lambda _source, message: warn(message))
        self._lifecycle = lifecycle
        self._warn = warn

    def __call__(self, action: str, pane_id: str, target: str, sent: str, ok: bool, reason: str) -> None:
        outcome = Outcome.SENT if ok else Outcome.FAILED
        record = ActionRecord(time.time(), action, pane_id, target, sent, f"operator (nbs-tui {action})", outcome, reason)
        why = self._lifecycle.record(self._log, record)
        if why:
            self._warn(f"the dashboards were not told of this {action}: {why}")

