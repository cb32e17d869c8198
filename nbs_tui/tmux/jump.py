"""Jump from the dashboard into an agent's pane, and back.

Two ways, chosen by where nbs-tui runs (`plan_jump`):

- **switch**: nbs-tui runs inside tmux *on the server it watches*. ``switch-client -c TTY -t %N``
  moves the operator's own client (the one showing nbs-tui's pane, ``$TMUX_PANE``; never one
  of nbs-tui's control-mode connections) to the agent's session, window and pane. To come back with one key,
  `Jumper.switch` binds ``prefix B`` (configurable) to ``switch-client -t <dashboard pane>``,
  unless the operator already bound that key to something else; then tmux's own ``prefix L``
  (last session) still works and the message says so.
- **attach**: nbs-tui runs outside tmux, or inside tmux on *another* server (``switch-client``
  cannot cross servers). The app suspends itself and runs
  ``tmux <-L/-S> attach-session -t %N`` with ``$TMUX`` unset in the foreground; attaching to a
  pane target selects its window and pane. When the operator detaches (``prefix d``), the
  command returns and the app resumes.

On another host (``--host``, docs/remote.md) the agent's pane is reached with
``ssh -t DEST tmux attach -t %N``: inside tmux (any local server), in a new window of the
operator's own session (closing when they detach); outside tmux, in the foreground as above.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet.model import PaneId, ServerAddress
from nbs_tui.tmux.address import socket_path_of
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxCommandError, TmuxError

JumpMode = Literal["switch", "attach"]

BACK_NOTE = "nbs-tui: back to the dashboard"


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def inside_server(server: ServerAddress, environ: Mapping[str, str] | None = None) -> bool:
    """True when this process runs in a pane of ``server`` (``$TMUX`` names its socket)."""
    env = os.environ if environ is None else environ
    tmux = env.get("TMUX", "")
    if not tmux or not env.get("TMUX_PANE"):
        return False
    socket = tmux.split(",", 1)[0]
    return bool(socket) and _same_file(Path(socket), socket_path_of(server, env))


@dataclass(frozen=True, slots=True)
class JumpPlan:
    """How a jump will be done, before doing it: for the log and for the operator's notice."""

    mode: JumpMode
    pane_id: PaneId
    argv: list[str]
    env: dict[str, str] = field(repr=False)
    why: str

    def describe(self) -> str:
        return f"{self.mode} ({self.why}): {' '.join(self.argv)}"


def remote_attach_argv(host: HostSpec, pane_id: PaneId) -> list[str]:
    """``ssh -t DEST -- tmux -u [-L|-S] attach-session -t PANE``: interactive, so a prompt for a
    password or a new host key is fine here (unlike the fleet's BatchMode connections)."""
    remote = shlex.join([host.tmux, "-u", *host.server.tmux_args(), "attach-session", "-t", pane_id])
    return ["ssh", *host.ssh_options, "-t", host.destination, "--", remote]


def plan_jump(
    server: ServerAddress,
    pane_id: PaneId,
    environ: Mapping[str, str] | None = None,
    *,
    force_attach: bool = False,
    host: HostSpec | None = None,
) -> JumpPlan:
    env = dict(os.environ if environ is None else environ)
    if host is not None and not host.is_local:
        ssh = remote_attach_argv(host, pane_id)
        if not force_attach and env.get("TMUX") and env.get("TMUX_PANE"):
            # The operator's own (local) tmux: a new window, next to the dashboard's.
            window = ["tmux", "new-window", "-n", f"{host.name}:{pane_id}", shlex.join(ssh)]
            return JumpPlan("switch", pane_id, window, env, f"inside tmux; {pane_id} is on {host.name}")
        env.pop("TMUX", None)
        env.pop("TMUX_PANE", None)
        return JumpPlan("attach", pane_id, ssh, env, f"{pane_id} is on {host.name}")
    tmux = ["tmux", *server.tmux_args()]
    if not force_attach and inside_server(server, env):
        return JumpPlan("switch", pane_id, [*tmux, "switch-client", "-t", pane_id], env, "inside tmux on the same server")
    if force_attach and inside_server(server, env):
        why = "asked to attach"
    elif env.get("TMUX"):
        why = "inside tmux on another server"
    else:
        why = "outside tmux"
    env.pop("TMUX", None)
    env.pop("TMUX_PANE", None)
    return JumpPlan("attach", pane_id, [*tmux, "attach-session", "-t", pane_id], env, why)


@dataclass(frozen=True, slots=True)
class JumpResult:
    mode: JumpMode
    pane_id: PaneId
    ok: bool
    message: str
    """For the operator: what happened and how to come back, or why it failed."""


class Jumper:
    """Do jumps for one watched server. Blocking: ``switch`` from a thread worker, ``attach`` while suspended."""

    def __init__(
        self,
        server: ServerAddress,
        environ: Mapping[str, str] | None = None,
        back_key: str = "B",
        host: HostSpec | None = None,
        commands: TmuxServerCommands | None = None,
    ) -> None:
        self.server = server
        self.host = host if host is not None and not host.is_local else None
        """The watched server's host when it is another machine (jumps go through ssh)."""
        self.environ = dict(os.environ if environ is None else environ)
        self.back_key = back_key
        self.tmux = commands or TmuxServerCommands.for_server(server)
        """The watched server's commands (switch, bind the back key, find the operator's client)."""
        self.last_jump: PaneId | None = None
        self.last_client: str | None = None

    @property
    def home_pane(self) -> PaneId | None:
        """The dashboard's own pane when it runs inside the watched server."""
        return self.environ.get("TMUX_PANE") if inside_server(self.server, self.environ) else None

    def plan(self, pane_id: PaneId) -> JumpPlan:
        return plan_jump(self.server, pane_id, self.environ, host=self.host)

    def attach_plan(self, pane_id: PaneId) -> JumpPlan:
        """The attach command line, whatever the environment (for the suspend path)."""
        return plan_jump(self.server, pane_id, self.environ, force_attach=True, host=self.host)

    def _install_back_key(self, home: PaneId) -> str:
        """Bind ``prefix <back_key>`` to come home unless the operator uses that key; say which key works."""
        try:
            current = self.tmux.run("list-keys", "-T", "prefix", self.back_key).text.strip()
        except TmuxCommandError:
            current = ""  # "unknown key": not bound, free to take
        if current and "switch-client -t" not in current:
            return "prefix L (last session) returns to the dashboard"
        self.tmux.run(
            "bind-key", "-N", BACK_NOTE, "-T", "prefix", self.back_key, "switch-client", "-t", home
        )
        return f"prefix {self.back_key} returns to the dashboard"

    def operator_client(self, home: PaneId) -> str | None:
        """The tty of the operator's client: the one showing the dashboard pane.

        Control-mode clients (nbs-tui's own mirror connections) are never chosen; tmux's own
        "current client" guess could pick one of them, as they are the most recently active.
        Failing an exact match, the most recently active client on the dashboard's session.
        """
        # list-clients turns a tab into "_", so "|" separates, and the free-text name comes last.
        fmt = "#{client_tty}|#{client_control_mode}|#{pane_id}|#{client_activity}|#{session_name}"
        try:
            out = self.tmux.run("list-clients", "-F", fmt)
            home_session = self.tmux.display(home, "#{session_name}")
        except TmuxCommandError:
            return None
        rows = [line.split("|", 4) for line in out.lines if line]
        people = [r for r in rows if len(r) == 5 and r[1] != "1" and r[3].isdigit()]
        for wanted in (lambda r: r[2] == home, lambda r: r[4] == home_session):
            found = sorted((r for r in people if wanted(r)), key=lambda r: int(r[3]), reverse=True)
            if found:
                return found[0][0]
        return None

    def switch(self, pane_id: PaneId) -> JumpResult:
        """Move the operator's tmux client to ``pane_id`` (only valid in ``switch`` mode)."""
        plan = self.plan(pane_id)
        if self.host is not None and plan.mode == "switch":
            return self._remote_window(plan)
        home = self.home_pane
        if plan.mode != "switch" or home is None:
            return JumpResult("switch", pane_id, False, "not inside tmux on the watched server: attach instead")
        client = self.operator_client(home)
        if client is None:
            return JumpResult("switch", pane_id, False, "no tmux client is showing the dashboard")
        try:
            back = self._install_back_key(home)
            self.tmux.run("switch-client", "-c", client, "-t", pane_id)
        except TmuxCommandError as error:
            return JumpResult("switch", pane_id, False, f"switch-client failed: {error}")
        self.last_jump = pane_id
        self.last_client = client
        with contextlib.suppress(TmuxCommandError):  # the hint is a courtesy; the jump succeeded
            self.tmux.run("display-message", "-c", client, "-d", "4000", f"nbs-tui: {back}")
        return JumpResult("switch", pane_id, True, f"switched to {pane_id}; {back}")

    def _remote_window(self, plan: JumpPlan) -> JumpResult:
        assert self.host is not None and plan.argv[0] == "tmux"
        try:
            TmuxServerCommands.own(plan.env).run(*plan.argv[1:])
        except TmuxError as error:
            return JumpResult("switch", plan.pane_id, False, f"tmux new-window failed: {error}")
        self.last_jump = plan.pane_id
        return JumpResult(
            "switch",
            plan.pane_id,
            True,
            f"opened a window attached to {plan.pane_id} on {self.host.name} over ssh; it closes "
            "when that tmux detaches (nested: the prefix twice, then d)",
        )

    def back(self) -> JumpResult:
        """Return the operator's client to the dashboard pane (what the back key does)."""
        home = self.home_pane
        if home is None or self.last_client is None:
            return JumpResult("switch", "", False, "no jump to come back from")
        try:
            self.tmux.run("switch-client", "-c", self.last_client, "-t", home)
        except TmuxCommandError as error:
            return JumpResult("switch", home, False, f"switch-client failed: {error}")
        return JumpResult("switch", home, True, "back at the dashboard")

    def attach(self, pane_id: PaneId) -> JumpResult:
        """Attach in the foreground until the operator detaches; the caller must have suspended its UI."""
        plan = self.attach_plan(pane_id)
        try:
            done = subprocess.run(plan.argv, env=plan.env, check=False)
        except FileNotFoundError:
            return JumpResult("attach", pane_id, False, "tmux is not installed")
        self.last_jump = pane_id
        if done.returncode != 0:
            return JumpResult("attach", pane_id, False, f"tmux attach exited with {done.returncode}")
        return JumpResult("attach", pane_id, True, f"attached to {pane_id} and detached again")
