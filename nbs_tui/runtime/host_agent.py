"""An agent's Claude Code process as its host sees it, here or over ssh (docs/lifecycle.md).

``nbs-tui new``, ``stop`` and ``restart`` read, for the pane they act on: which process below the
pane is Claude Code (the one with a live status file, ``<config>/sessions/<pid>.json``), its
session id, its command line and folder, and whether it still runs. On this machine that is
``/proc`` and the status file (`LocalAgentHost`); on another host the same reads are one shell
script over the host's ssh connection (`SshAgentHost`, `SshTmuxRunner.run_script` through its
ControlMaster: a few ms, no second login). The script walks the pane's process tree through each
task's ``children`` file, takes each process's ``CLAUDE_CONFIG_DIR`` (else ``$HOME/.claude``) from
its environment, and prints the status file of every process that has one with its start time
(field 22 of ``/proc/PID/stat``), command line and folder; a status file whose ``procStart`` is
not the live process's start is an older process's (as `find_claude_process` rules).

`SshAgentHost.publish` writes an NBS bus event into a folder of the host, as `nbs_tui.files.nbs_bus`
does here: whole to a hidden ``.tmp`` name in that folder, then renamed (NBS lists only
``*.event``), ``processed/`` made if missing.
"""

from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from nbs_tui.claude.status import find_claude_process, subtree_table
from nbs_tui.core.control.nbs_events import BusEvent, event_file_name, event_text
from nbs_tui.core.fleet.agent_spec import ASSUMED_FLAGS, ClaudeFlags
from nbs_tui.core.screen.text import loads_json
from nbs_tui.files.nbs_bus import publish
from nbs_tui.files.proc import cmdline
from nbs_tui.tmux.errors import TmuxError
from nbs_tui.tmux.ssh import SshTmuxRunner


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


class AgentHost(Protocol):
    """Where a pane's processes run (module docstring)."""

    remote: bool

    def claude(self, pane_pid: int, config_dirs: tuple[str, ...] = ()) -> RunningClaude | None:
        """The Claude Code process at or below ``pane_pid`` with a live status file; None: none."""

    def alive(self, pid: int) -> bool:
        """The process still runs."""

    def publish(self, folder: str, event: BusEvent) -> str:
        """An NBS bus event written into the events folder ``folder`` of the host; its path.
        Raises OSError (folder missing, not writable, the host not answering)."""


def _local_cwd(pid: int) -> str | None:
    try:
        return str(Path(f"/proc/{pid}/cwd").resolve(strict=True))
    except OSError:
        return None


class LocalAgentHost:
    """This machine: ``/proc`` and the status files."""

    remote = False

    def claude(self, pane_pid: int, config_dirs: tuple[str, ...] = ()) -> RunningClaude | None:
        table = subtree_table(pane_pid)
        found = find_claude_process(pane_pid, table, [Path(d) for d in config_dirs]) if table else None
        if found is None:
            return None
        session = found.status.session_id if found.status is not None else None
        return RunningClaude(found.pid, session, str(found.config_dir), cmdline(found.pid), _local_cwd(found.pid))

    def alive(self, pid: int) -> bool:
        return Path(f"/proc/{pid}").exists()

    def publish(self, folder: str, event: BusEvent) -> str:
        return str(publish(folder, event))


_FIND = r"""
root=$1
all=$root
todo=$root
depth=0
while [ -n "$todo" ] && [ $depth -lt 32 ]; do
  next=
  for p in $todo; do
    for c in /proc/$p/task/*/children; do
      [ -r "$c" ] && next="$next $(cat "$c" 2>/dev/null)"
    done
  done
  todo=$(echo $next)
  all="$all $todo"
  depth=$((depth + 1))
done
for p in $all; do
  env=$( { tr '\0' '\n' < /proc/$p/environ; } 2>/dev/null ) || continue
  cfg=$(printf '%s\n' "$env" | sed -n 's/^CLAUDE_CONFIG_DIR=//p' | head -n 1)
  home=$(printf '%s\n' "$env" | sed -n 's/^HOME=//p' | head -n 1)
  eval "set -- $EXTRA"
  [ -n "$cfg" ] && set -- "$@" "$cfg"
  [ -n "$home" ] && set -- "$@" "$home/.claude"
  for d in "$@"; do
    f="$d/sessions/$p.json"
    [ -f "$f" ] || continue
    start=$(sed 's/^.*) //' /proc/$p/stat 2>/dev/null | cut -d' ' -f20)
    printf 'PROC\t%s\t%s\t%s\t%s\n' "$p" "$start" "$d" "$(readlink /proc/$p/cwd 2>/dev/null)"
    printf 'ARGS\t'; { tr '\0' '\037' < /proc/$p/cmdline; } 2>/dev/null; echo
    printf 'STATUS\t'; tr -d '\n' < "$f"; echo
    break
  done
done
"""


_HELP_SEP = "----nbs-tui-agents-help----"


def parse_found(out: str) -> RunningClaude | None:
    """The first process `_FIND` printed whose status file is its own (pure: tested apart)."""
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


class SshAgentHost:
    """Another host, through its ssh connection (module docstring)."""

    remote = True

    def __init__(self, runner: SshTmuxRunner) -> None:
        self.runner = runner

    def claude(self, pane_pid: int, config_dirs: tuple[str, ...] = ()) -> RunningClaude | None:
        extra = " ".join(shlex.quote(d) for d in config_dirs)
        script = f"set -- {int(pane_pid)}\nEXTRA={shlex.quote(extra)}\n{_FIND}"
        return parse_found(self._sh(script))

    def flags(self, claude_command: str) -> ClaudeFlags:
        """What the host's Claude Code accepts (its ``--help`` and ``agents --help`` there, run by
        the login shell: ``claude_command`` is found on its PATH, as ``new --host`` finds it)."""
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
            raise OSError(f"{self.runner.host.name}: no NBS events folder {folder} there, or not writable ({error})") from None
        if not out.startswith("OK "):
            raise OSError(f"{self.runner.host.name}: the event was not written in {folder}")
        return f"{folder}/{out[3:].strip()}"
