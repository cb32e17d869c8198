"""One machine nbs-tui acts on: this one, or another host over ssh (docs/lifecycle.md).

A `Host` is decided once, from a tmux command path (`host_of`) or from the settings of a command
that acts on one host (`host_for_settings`); nothing outside the tmux port and this module asks
whether a runner is remote. Through a host go:

* its tmux command path (`Host.commands`: `TmuxServerCommands`, the one path to its server);
* its processes: which process at or below a pane is Claude Code, with its session id, command
  line and folder (`claude`), whether a process still runs (`alive`), what its Claude Code accepts
  (`flags`). On this machine that is ``/proc`` and the status file (``<config>/sessions/<pid>.json``,
  `nbs_tui.claude.status.find_claude_process`); on another host the same reads are one shell
  script over the host's ssh connection (`SshTmuxRunner.run_script` through its ControlMaster: a
  few ms, no second login), `nbs_tui.tmux.host_scripts.CLAUDE_BELOW`, which walks the pane's
  tree with the host scripts' one tree walker (`TREE`, also agent detection's). A status file whose
  ``procStart`` is not the live process's start is an older process's (as `find_claude_process`
  rules);
* nbs-tui run there (`nbs_tui_argv`, `run_nbs_tui`): this Python's ``-m nbs_tui`` here; on another
  host the command its ``nbs_tui`` setting names, through its ssh connection (``restore --host``,
  its service's start, its control plane's channel); ssh's own failure (exit 255) said as the
  host's problem;
* its NBS bus (`publish`): an event written into a folder of the host, as `nbs_tui.files.nbs_bus`
  does here: whole to a hidden ``.tmp`` name in that folder, then renamed (NBS lists only
  ``*.event``), ``processed/`` made if missing;
* ``new``'s checks of a spec (`prepare`): this machine's files (`nbs_tui.files.agent_input`), or
  the host's (`nbs_tui.lifecycle.remote_agent`);
* the git base a new agent starts from (`start_base`: git run there, ``@nbs_base``).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nbs_tui.claude.status import find_claude_process, subtree_table
from nbs_tui.core.control.nbs_events import BusEvent, event_file_name, event_text
from nbs_tui.core.fleet.agent_spec import (
    ASSUMED_FLAGS,
    CLAUDE_SESSION_ENV,
    ClaudeFlags,
    NewAgent,
    command_words,
)
from nbs_tui.core.fleet.host_spec import LOCAL, HostSpec
from nbs_tui.core.review.agent_base import AgentBase, parse_base
from nbs_tui.core.screen.text import loads_json
from nbs_tui.files.agent_input import PreparedAgent, prepare_local
from nbs_tui.files.git_changes import GitError, start_base
from nbs_tui.files.nbs_bus import publish
from nbs_tui.files.proc import cmdline
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError
from nbs_tui.tmux.host_scripts import CLAUDE_BELOW
from nbs_tui.tmux.ssh import SSH_FAILED, SshTmuxRunner

LOCAL_LOOK_EVERY = 0.1
"""Seconds between two reads of this machine's processes while waiting (``/proc``: cheap)."""
REMOTE_LOOK_EVERY = 0.3
"""Seconds between two reads of another host's processes (one ssh exec through its master)."""


@dataclass(frozen=True, slots=True)
class RunningClaude:
    """The Claude Code process below a pane."""

    pid: int
    session_id: str | None
    config: str
    """Its Claude config folder (the status file's)."""
    args: tuple[str, ...]
    """Its command line (``/proc/PID/cmdline``)."""
    cwd: str | None
    """Its folder, when readable."""


@dataclass(frozen=True, slots=True)
class PreparedStart:
    """A spec checked where the agent will run, and what its start needs from there."""

    agent: PreparedAgent
    flags: ClaudeFlags | None = None
    """What the host's Claude Code accepts, when the checks read it (another host's do)."""
    home: str | None = None
    """HOME on the host (the trust dialog may show a folder as ``~/...``); None: ours."""


@dataclass(frozen=True, slots=True)
class NbsTuiRun:
    """What nbs-tui, run on a host to its end, said (`Host.run_nbs_tui`)."""

    returncode: int
    stdout: str
    stderr: str
    lost: str | None = None
    """The way to the host failed (ssh's own exit 255): why, in one line; None: nbs-tui ran."""


def claude_env() -> dict[str, str]:
    """Our environment without what would make Claude Code think it runs inside another one."""
    return {k: v for k, v in os.environ.items() if k not in (*CLAUDE_SESSION_ENV, "TMUX", "TMUX_PANE")}


def read_helps(
    argv0: Sequence[str], subcommands: Sequence[Sequence[str]], timeout: float, *, with_stderr: bool = False
) -> list[str] | None:
    """``claude_command [SUBCOMMAND...] --help`` on this machine for each of ``subcommands``, run
    side by side (each is a whole Claude Code start): their outputs, "" for one that failed or ran
    out of time; None when the command cannot be started at all. ``with_stderr``: what it says on
    standard error counts too (a release that lacks a subcommand says so there)."""
    procs: list[subprocess.Popen[str]] = []
    try:
        for sub in subcommands:
            proc = subprocess.Popen(
                [*argv0, *sub, "--help"], stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if with_stderr else subprocess.DEVNULL, text=True,
                stdin=subprocess.DEVNULL, env=claude_env(),
            )  # fmt: skip
            procs.append(proc)
    except OSError:
        for proc in procs:
            proc.kill()
            proc.wait()
        return None
    texts = []
    for proc in procs:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            out = ""
        texts.append(out if proc.returncode == 0 else "")
    return texts


def read_flags(argv0: Sequence[str], timeout: float = 30.0) -> ClaudeFlags:
    """What this machine's Claude Code accepts, from ``claude_command --help`` and ``agents
    --help``; `ASSUMED_FLAGS` when its help cannot be read."""
    texts = read_helps(argv0, ((), ("agents",)), timeout)
    return ClaudeFlags.from_help(texts[0], texts[1]) if texts and texts[0] else ASSUMED_FLAGS


def local_nbs_tui_argv(words: Sequence[str]) -> list[str]:
    """``nbs-tui WORDS`` on this machine: this Python's own nbs-tui."""
    return [sys.executable, "-m", "nbs_tui", *words]


class Host:
    """Where one tmux server runs and its agents' processes live (module docstring)."""

    name: str
    """`LOCAL`, or the host's name in ``[[hosts]]``."""
    spec: HostSpec | None
    """The other host's settings (None: this machine)."""
    remote: bool
    """Whether the host is another machine, decided once where the host is built."""
    look_every: float
    """Seconds between two process reads while waiting for one to change."""

    def __init__(self, commands: TmuxServerCommands) -> None:
        self.commands = commands

    def describe(self) -> str:
        return self.commands.describe()

    def config_dirs(self, claude_home: Path) -> tuple[str, ...]:
        """The Claude config folders tried first for a pane's status file: the settings' (a path
        of this machine) here; none on another host (each process's environment says)."""
        raise NotImplementedError

    def claude(self, pane_pid: int, config_dirs: tuple[str, ...] = ()) -> RunningClaude | None:
        """The Claude Code process at or below ``pane_pid`` with a live status file; None: none."""
        raise NotImplementedError

    def alive(self, pid: int) -> bool:
        """The process still runs."""
        raise NotImplementedError

    def flags(self, claude_command: str) -> ClaudeFlags:
        """What the host's Claude Code accepts (its ``--help`` and ``agents --help`` there)."""
        raise NotImplementedError

    def publish(self, folder: str, event: BusEvent) -> str:
        """An NBS bus event written into the events folder ``folder`` of the host; its path.
        Raises OSError (folder missing, not writable, the host not answering)."""
        raise NotImplementedError

    def prepare(self, spec: NewAgent, claude_command: str) -> PreparedStart:
        """``new``'s every check of ``spec`` where the agent will run, made once, all problems
        at once (`SpecError`); nothing is made."""
        raise NotImplementedError

    def start_base(self, folder: str) -> AgentBase | None:
        """Where ``folder``'s git worktree stands on the host (HEAD's commit and branch): the
        base a new agent's changes are counted from; None outside git (or the host not answering)."""
        raise NotImplementedError

    def nbs_tui_argv(self, words: Sequence[str]) -> list[str] | None:
        """The command line that runs ``nbs-tui WORDS`` on the host; None: the host has none set
        (``nbs_tui`` in its ``[[hosts]]`` entry)."""
        raise NotImplementedError

    def run_nbs_tui(self, words: Sequence[str], timeout: float) -> NbsTuiRun:
        """``nbs-tui WORDS`` run on the host to its end, no stdin. Raises OSError (it could not be
        started or ran out of time) and ValueError (the host has no nbs-tui set)."""
        argv = self.nbs_tui_argv(words)
        if argv is None:
            raise ValueError(f"{self.name}: no nbs_tui set for the host")
        try:
            done = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                env=self.commands.runner.env(), check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired as error:
            raise OSError(str(error)) from None
        return NbsTuiRun(done.returncode, done.stdout, done.stderr, self._lost(done.returncode, done.stderr))

    def _lost(self, returncode: int, stderr: str) -> str | None:
        return None

    def master_up(self) -> bool:
        """The way to the host is up (another host's ssh ControlMaster: a session rides on it)."""
        return True

    def close(self) -> None:
        """Let go of what this host opened for itself (an ssh connection of its own)."""


def _local_cwd(pid: int) -> str | None:
    try:
        return str(Path(f"/proc/{pid}/cwd").resolve(strict=True))
    except OSError:
        return None


class LocalHost(Host):
    """This machine: ``/proc``, the status files, this Python's nbs-tui."""

    name = LOCAL
    spec = None
    remote = False
    look_every = LOCAL_LOOK_EVERY

    def config_dirs(self, claude_home: Path) -> tuple[str, ...]:
        return (str(claude_home),)

    def claude(self, pane_pid: int, config_dirs: tuple[str, ...] = ()) -> RunningClaude | None:
        table = subtree_table(pane_pid)
        found = find_claude_process(pane_pid, table, [Path(d) for d in config_dirs]) if table else None
        if found is None:
            return None
        session = found.status.session_id if found.status is not None else None
        return RunningClaude(found.pid, session, str(found.config_dir), cmdline(found.pid), _local_cwd(found.pid))

    def alive(self, pid: int) -> bool:
        return Path(f"/proc/{pid}").exists()

    def flags(self, claude_command: str) -> ClaudeFlags:
        return read_flags(command_words(claude_command))

    def publish(self, folder: str, event: BusEvent) -> str:
        return str(publish(folder, event))

    def prepare(self, spec: NewAgent, claude_command: str) -> PreparedStart:
        return PreparedStart(prepare_local(spec, claude_command=claude_command))

    def start_base(self, folder: str) -> AgentBase | None:
        try:
            return start_base(folder)
        except GitError:
            return None

    def nbs_tui_argv(self, words: Sequence[str]) -> list[str]:
        return local_nbs_tui_argv(words)


def parse_found(out: str) -> RunningClaude | None:
    """The first process `CLAUDE_BELOW` printed whose status file is its own (pure: tested apart)."""
    lines = out.splitlines()
    for i in range(0, len(lines) - 2):
        head, args, status = lines[i].split("\t"), lines[i + 1], lines[i + 2]
        if head[0] != "PROC" or len(head) != 5 or not args.startswith("ARGS\t") or not status.startswith("STATUS\t"):
            continue
        _, pid, start, config, cwd = head
        try:
            data = loads_json(status[len("STATUS\t") :])
        except ValueError:
            data = None
        if not pid.isdigit():
            continue
        session: str | None = None
        if isinstance(data, dict):
            proc_start = data.get("procStart")
            if proc_start is not None and str(proc_start) != start:
                continue  # an older process's file under a reused pid
            sid = data.get("sessionId")
            session = sid if isinstance(sid, str) and sid else None
        words = tuple(w for w in args[len("ARGS\t") :].split("\x1f") if w)
        return RunningClaude(int(pid), session, config, words, cwd or None)
    return None


_HELP_SEP = "----nbs-tui-agents-help----"


class RemoteHost(Host):
    """Another host, through its ssh connection (module docstring). ``own``: the connection is
    this host's to close (a command's own), not a watching fleet's."""

    remote = True
    look_every = REMOTE_LOOK_EVERY

    def __init__(self, commands: TmuxServerCommands, runner: SshTmuxRunner, *, own: bool = False) -> None:
        super().__init__(commands)
        self.runner = runner
        self.spec = runner.host
        self.name = runner.host.name
        self._own = own

    def config_dirs(self, claude_home: Path) -> tuple[str, ...]:
        return ()

    def claude(self, pane_pid: int, config_dirs: tuple[str, ...] = ()) -> RunningClaude | None:
        extra = " ".join(shlex.quote(d) for d in config_dirs)
        script = f"set -- {int(pane_pid)}\nEXTRA={shlex.quote(extra)}\n{CLAUDE_BELOW}"
        return parse_found(self._sh(script))

    def flags(self, claude_command: str) -> ClaudeFlags:
        # run by the login shell: ``claude_command`` is found on its PATH, as ``new --host`` finds it
        out = self.runner.run_script(
            f"{claude_command} --help 2>/dev/null </dev/null\necho {_HELP_SEP}\n"
            f"{claude_command} agents --help 2>/dev/null </dev/null\ntrue\n",
            timeout=60.0,
        )
        help_text, _, agents_help = out.partition(_HELP_SEP + "\n")
        return ClaudeFlags.from_help(help_text, agents_help) if help_text.strip() else ASSUMED_FLAGS

    def alive(self, pid: int) -> bool:
        return self._sh(f"[ -d /proc/{int(pid)} ] && echo yes || echo no\n").strip() == "yes"

    def _sh(self, script: str, stdin: bytes | None = None) -> str:
        """``script`` run by the host's ``sh`` whatever its login shell is."""
        return self.runner.run_script(f"exec sh -c {shlex.quote(script)}", timeout=15.0, stdin=stdin)

    def publish(self, folder: str, event: BusEvent) -> str:
        now = time.time()
        name = event_file_name(event, int(now * 1_000_000), os.getpid())
        tmp = f".{name}.{os.getpid()}.tmp"
        q = shlex.quote
        script = (
            f"cd {q(folder)} || exit 3\n"
            "mkdir -p processed || exit 3\n"
            f"n={q(name)}\n"
            '{ [ -e "$n" ] || [ -e "processed/$n" ]; } && exit 4\n'
            f"cat > {q(tmp)} || {{ rm -f {q(tmp)}; exit 3; }}\n"
            f"sync {q(tmp)} 2>/dev/null\n"
            f'mv {q(tmp)} "$n" && echo "OK $n"\n'
        )
        try:
            out = self._sh(script, stdin=event_text(event, now).encode("utf-8"))
        except TmuxError as error:  # folder missing or not writable (exit 3), the host not answering
            raise OSError(f"{self.name}: no NBS events folder {folder} there, or not writable ({error})") from None
        if not out.startswith("OK "):
            raise OSError(f"{self.name}: the event was not written in {folder}")
        return f"{folder}/{out[3:].strip()}"

    def prepare(self, spec: NewAgent, claude_command: str) -> PreparedStart:
        from nbs_tui.lifecycle.remote_agent import prepare_remote

        remote = prepare_remote(spec, self.runner, claude_command)
        return PreparedStart(remote.prepared, remote.flags, remote.home)

    def start_base(self, folder: str) -> AgentBase | None:
        script = (
            f"cd {shlex.quote(folder)} 2>/dev/null || exit 0\n"
            "git rev-parse --verify -q 'HEAD^{commit}' 2>/dev/null || exit 0\n"
            "git symbolic-ref -q --short HEAD 2>/dev/null\n"
        )
        try:
            out = self._sh(script).split()
        except TmuxError:
            return None
        return parse_base(" ".join(out[:2])) if out else None

    def nbs_tui_argv(self, words: Sequence[str]) -> list[str] | None:
        if not self.runner.host.nbs_tui:
            return None
        # the host's setting is a command for its shell, as written (``~/.local/bin/nbs-tui``)
        return self.runner.ssh_argv(f"{self.runner.host.nbs_tui} {shlex.join(words)}")

    def master_up(self) -> bool:
        return self.runner.master_pid() is not None

    def _lost(self, returncode: int, stderr: str) -> str | None:
        return self.runner.explain(returncode, stderr) if returncode == SSH_FAILED else None

    def close(self) -> None:
        if self._own:
            self.runner.close()


def host_of(commands: TmuxServerCommands) -> Host:
    """The host of a command path (a watching fleet's: its connection stays the fleet's)."""
    runner = commands.runner
    if isinstance(runner, SshTmuxRunner):
        return RemoteHost(commands, runner)
    return LocalHost(commands)


def host_for(spec: HostSpec) -> Host:
    """A host for a command that acts on it alone (``nbs-tui new/stop/restart/restore --host``):
    another host gets an ssh connection of its own, closed with `Host.close`."""
    if spec.is_local:
        return LocalHost(TmuxServerCommands.for_server(spec.server))
    runner = SshTmuxRunner(spec)
    return RemoteHost(TmuxServerCommands(runner), runner, own=True)
