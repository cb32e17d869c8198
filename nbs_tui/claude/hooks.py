"""Install, remove and report nbs-tui's Claude Code hooks in a settings file.

Each hook runs a tiny POSIX sh script written next to the spool. The script appends the
hook's stdin JSON, ``$TMUX_PANE`` and the tmux socket as one line to the spool with a single
``write()`` on an ``O_APPEND`` descriptor, and always exits 0, so a hook can never fail the
agent's turn, not even when nbs-tui is gone or the spool folder is unwritable.

Our entries are whole matcher groups whose command carries :data:`MARKER`; install appends
them after the user's own groups (never touching those), uninstall removes exactly the
groups that carry the marker. Every install that changes the file first copies the original
bytes to ``<settings>.nbs-tui-backup-<timestamp>``; uninstall puts those exact bytes back when
the file minus our entries still equals them, so a round trip is byte-identical, and
re-serialises (keeping the file's indent) only when someone changed the file in between.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from nbs_tui.claude.status_recorder import (
    recorded,
    recorder_command,
    recorder_ok,
    recorder_path,
    unwrapped,
    usage_spool_for,
    why_not_wrapped,
    wrapped,
    write_recorder,
)
from nbs_tui.config import legacy_spool, script_path, xdg_spool
from nbs_tui.files.atomic import write_atomic

HOOK_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PermissionRequest",
    "Notification",
    "Stop",
    "SessionEnd",
)
"""The events nbs-tui listens to, in the order they are written."""

MARKER = "#nbs-tui-hook"
"""Every command we install ends with this shell comment; uninstall looks for nothing else."""

BACKUP_INFIX = ".nbs-tui-backup-"
ABSENT_SUFFIX = ".absent"
HOOK_TIMEOUT_S = 10

HOOK_SCRIPT = r"""#!/bin/sh
# nbs-tui hook (written by `nbs-tui hooks install`): append this hook's stdin JSON with
# $TMUX_PANE and the tmux socket to the spool named in $1 as ONE line in ONE write() on an
# O_APPEND descriptor (dd gathers the whole line first: iflag=fullblock), so lines from
# concurrent agents never interleave. Always exits 0: a hook must never fail the agent's
# turn, whether or not nbs-tui is running.
umask 077
spool=$1
pane=${TMUX_PANE:-}
case $pane in *[!%0-9]*) pane= ;; esac
sock=${TMUX:-}
sock=${sock%%,*}
case $sock in *[\"\\]*) sock= ;; esac
[ -d "${spool%/*}" ] || { cat >/dev/null 2>&1; exit 0; }
now=$(date +%s.%N 2>/dev/null)
case $now in ''|*[!0-9.]*) now=$(date +%s 2>/dev/null) ;; esac
case $now in ''|*[!0-9.]*) now=0 ;; esac
{
    printf '{"nbs_pane":"%s","nbs_tmux":"%s","nbs_time":%s,"payload":' "$pane" "$sock" "$now"
    tr -d '\r\n'
    printf '}\n'
} 2>/dev/null | dd of="$spool" bs=64M iflag=fullblock oflag=append conv=notrunc 2>/dev/null
exit 0
"""


class HooksError(Exception):
    """The settings file cannot be read, parsed or written; the message says which and why."""


def hook_command(spool: Path) -> str:
    """The shell command Claude Code runs for every hook event.

    It runs the script only if it is still there, drains stdin either way and exits 0.
    """
    script = shlex.quote(str(script_path(spool)))
    target = shlex.quote(str(spool))
    return f"[ -r {script} ] && /bin/sh {script} {target}; cat >/dev/null 2>&1; exit 0 {MARKER}"


def is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and MARKER in str(hook.get("command", ""))


def _our_group(spool: Path) -> dict[str, Any]:
    return {"hooks": [{"type": "command", "command": hook_command(spool), "timeout": HOOK_TIMEOUT_S}]}


def strip_ours(settings: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of ``settings`` without our hook entries, and without the containers
    (group, event list, ``hooks`` object) that removing them left empty; the status line is the
    user's own again (`nbs_tui.claude.status_recorder.unwrapped`)."""
    result = unwrapped(settings)
    hooks = result.get("hooks")
    if not isinstance(hooks, dict):
        return result
    emptied_all = False
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept: list[Any] = []
        removed = False
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                inner = [h for h in group["hooks"] if not is_ours(h)]
                if len(inner) != len(group["hooks"]):
                    removed = True
                    if not inner:
                        continue
                    group = {**group, "hooks": inner}
            kept.append(group)
        if removed and not kept:
            del hooks[event]
            emptied_all = True
        else:
            hooks[event] = kept
    if emptied_all and not hooks:
        del result["hooks"]
    return result


def _canonical(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` without our entries and without empty hook containers, for comparing."""
    result = strip_ours(settings)
    hooks = result.get("hooks")
    if isinstance(hooks, dict):
        for event in [e for e, groups in hooks.items() if groups == []]:
            del hooks[event]
        if not hooks:
            del result["hooks"]
    return result


def installed_events(settings: dict[str, Any]) -> dict[str, list[str]]:
    """Event name -> the commands of ours installed for it."""
    found: dict[str, list[str]] = {}
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                for hook in group["hooks"]:
                    if is_ours(hook):
                        found.setdefault(event, []).append(str(hook["command"]))
    return found


def with_ours(settings: dict[str, Any], spool: Path) -> dict[str, Any]:
    """``settings`` minus any old entries of ours, plus one group of ours per event, appended,
    and the status line wrapped by the usage recorder."""
    result = strip_ours(settings)
    hooks = result.get("hooks")
    if hooks is None:
        hooks = result["hooks"] = {}
    if not isinstance(hooks, dict):
        raise HooksError(f"'hooks' is a {type(hooks).__name__}, not an object: fix it by hand first")
    for event in HOOK_EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise HooksError(f"'hooks.{event}' is a {type(groups).__name__}, not a list: fix it by hand first")
        groups.append(_our_group(spool))
    return wrapped(result, usage_spool_for(spool))


# -- reading and writing the settings file ---------------------------------------------------


def _read(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as error:
        raise HooksError(f"cannot read {path}: {error.strerror}") from None
    if not raw.strip():
        return raw, {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise HooksError(f"{path} is not valid JSON ({error}); nbs-tui leaves it alone") from None
    if not isinstance(data, dict):
        raise HooksError(f"{path} holds a JSON {type(data).__name__}, not an object; nbs-tui leaves it alone")
    return raw, data


def _indent_of(raw: bytes | None) -> int | str:
    """The indent the file already uses (2 when it has none), so a rewrite looks like it."""
    if raw:
        match = re.search(rb"\n([ \t]+)\S", raw)
        if match:
            unit = match.group(1).decode()
            return unit if "\t" in unit else len(unit)
    return 2


def _serialise(data: dict[str, Any], raw: bytes | None) -> bytes:
    text = json.dumps(data, indent=_indent_of(raw), ensure_ascii=False)
    if raw is None or raw.endswith(b"\n"):
        text += "\n"
    return text.encode("utf-8")


def _backups(path: Path) -> list[Path]:
    """This settings file's backups, newest first (the timestamp sorts as text)."""
    return sorted(path.parent.glob(f"{path.name}{BACKUP_INFIX}*"), reverse=True)


def _new_backup_path(path: Path, now: float) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}"
    candidate = path.with_name(f"{path.name}{BACKUP_INFIX}{stamp}")
    counter = 1
    while candidate.exists() or candidate.with_name(candidate.name + ABSENT_SUFFIX).exists():
        candidate = path.with_name(f"{path.name}{BACKUP_INFIX}{stamp}-{counter}")
        counter += 1
    return candidate


# -- the three actions -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    changed: bool
    message: str
    backup: Path | None = None


def write_script(spool: Path) -> Path:
    """Create the spool folder (0700 when new: events carry prompts and tool output) and
    (re)write the hook script next to it, mode 0755."""
    spool.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    script = script_path(spool)
    if not script.exists() or script.read_text(encoding="utf-8") != HOOK_SCRIPT:
        write_atomic(script, HOOK_SCRIPT.encode("utf-8"), make_parents=True)
    script.chmod(0o755)
    return script


def install(settings_path: Path, spool: Path, now: Callable[[], float] = time.time) -> Outcome:
    """Add our hooks to ``settings_path`` (idempotent; the user's hooks are kept as they are)."""
    spool = spool.expanduser().absolute()
    raw, data = _read(settings_path)
    write_script(spool)
    write_recorder(usage_spool_for(spool))
    wanted = with_ours(data, spool)
    left_alone = why_not_wrapped(strip_ours(data))
    note = f"\nnote: {left_alone}" if left_alone else ""
    if raw is not None and wanted == data:
        return Outcome(False, f"already installed in {settings_path} (spool {spool}){note}")
    backup = _new_backup_path(settings_path, now())
    if raw is None:
        backup = backup.with_name(backup.name + ABSENT_SUFFIX)
        backup.parent.mkdir(parents=True, exist_ok=True)
        backup.write_bytes(b"")
    else:
        backup.write_bytes(raw)
        os.chmod(backup, settings_path.stat().st_mode & 0o7777)
    write_atomic(settings_path, _serialise(wanted, raw), make_parents=True)
    events = ", ".join(HOOK_EVENTS)
    return Outcome(
        True,
        f"installed hooks for {events} and the status-line usage recorder in {settings_path} "
        f"(spool {spool}; usage {usage_spool_for(spool)}; backup {backup}).\n"
        f"Claude Code 2.1.332 picks them up within seconds; older versions (2.1.197) on their next start.{note}",
        backup,
    )


def uninstall(settings_path: Path) -> Outcome:
    """Remove exactly our entries; restore the pre-install bytes when nothing else changed."""
    raw, data = _read(settings_path)
    if raw is None:
        return Outcome(False, f"{settings_path} does not exist; nothing to remove")
    if not installed_events(data) and recorded(data) is None:
        return Outcome(False, f"no nbs-tui hooks in {settings_path}; nothing to remove")
    remaining = strip_ours(data)
    for backup in _backups(settings_path):
        if backup.name.endswith(ABSENT_SUFFIX):
            if _canonical(remaining) == {}:
                settings_path.unlink()
                return Outcome(True, f"removed nbs-tui hooks; {settings_path} did not exist before, so it is gone again")
            continue
        try:
            original_raw, original = _read(backup)
        except HooksError:
            continue
        if (
            original_raw is not None
            and not installed_events(original)
            and recorded(original) is None
            and _canonical(original) == _canonical(remaining)
        ):
            write_atomic(settings_path, original_raw, make_parents=True)
            return Outcome(True, f"removed nbs-tui hooks from {settings_path} (restored the exact bytes of {backup.name})")
    write_atomic(settings_path, _serialise(remaining, raw), make_parents=True)
    return Outcome(True, f"removed nbs-tui hooks from {settings_path} (the file had changed since install, so it was rewritten)")


@dataclass(frozen=True, slots=True)
class HookStatus:
    settings_path: Path
    exists: bool
    events: dict[str, list[str]]
    missing: tuple[str, ...]
    spool: Path
    script_ok: bool
    spool_size: int | None
    spool_mtime: float | None
    backups: tuple[Path, ...]
    recorder: str | None = None
    """The status line's command when the usage recorder wraps it, else None."""
    recorder_ok: bool = False
    status_line_left_alone: str | None = None
    """Why the status line is not wrapped (a kind we do not know), else None."""

    @property
    def installed(self) -> bool:
        hooks_ok = not self.missing and self.script_ok and all(
            hook_command(self.spool) in commands for commands in self.events.values()
        )
        return hooks_ok and (self.status_line_left_alone is not None or (self.recorder is not None and self.recorder_ok))


def status(settings_path: Path, spool: Path) -> HookStatus:
    spool = spool.expanduser().absolute()
    raw, data = _read(settings_path)
    events = installed_events(data)
    script = script_path(spool)
    try:
        script_ok = script.read_text(encoding="utf-8") == HOOK_SCRIPT
    except OSError:
        script_ok = False
    try:
        stat = spool.stat()
        size, mtime = stat.st_size, stat.st_mtime
    except OSError:
        size, mtime = None, None
    found = recorded(data)
    usage = usage_spool_for(spool)
    return HookStatus(
        recorder=recorder_command(usage, found[1]) if found is not None and found[0] == usage else None,
        recorder_ok=recorder_ok(usage),
        status_line_left_alone=why_not_wrapped(strip_ours(data)),
        settings_path=settings_path,
        exists=raw is not None,
        events=events,
        missing=tuple(e for e in HOOK_EVENTS if e not in events),
        spool=spool,
        script_ok=script_ok,
        spool_size=size,
        spool_mtime=mtime,
        backups=tuple(_backups(settings_path)),
    )


def _print_status(report: HookStatus, out: TextIO) -> None:
    print(f"settings file: {report.settings_path}{'' if report.exists else ' (does not exist)'}", file=out)
    if not report.events:
        print("nbs-tui hooks: not installed", file=out)
    else:
        state = "installed" if report.installed else "partly installed or for another spool"
        print(f"nbs-tui hooks: {state}", file=out)
        for event in HOOK_EVENTS:
            commands = report.events.get(event)
            if not commands:
                print(f"  {event}: missing", file=out)
            elif hook_command(report.spool) in commands:
                print(f"  {event}: ok", file=out)
            else:
                print(f"  {event}: points elsewhere: {commands[0]}", file=out)
        others = sorted(set(report.events) - set(HOOK_EVENTS))
        for event in others:
            print(f"  {event}: extra nbs-tui entry", file=out)
    print(f"hook script: {script_path(report.spool)} ({'ok' if report.script_ok else 'missing or outdated'})", file=out)
    usage = usage_spool_for(report.spool)
    if report.status_line_left_alone:
        print(f"usage recorder: not installed: {report.status_line_left_alone}", file=out)
    elif report.recorder is None:
        print("usage recorder: not installed (status line)", file=out)
    else:
        state = "ok" if report.recorder_ok else "script missing or outdated"
        print(f"usage recorder: {recorder_path(usage)} ({state}), usage spool {usage}", file=out)
    if report.spool_size is None:
        print(f"spool: {report.spool} (no events yet)", file=out)
    else:
        age = time.time() - (report.spool_mtime or 0)
        print(f"spool: {report.spool} ({report.spool_size} bytes, last event {age:.0f}s ago)", file=out)
    if report.backups:
        print(f"backups: {len(report.backups)}, newest {report.backups[0]}", file=out)
    new = xdg_spool()
    if report.spool == legacy_spool() and report.spool != new:
        print(
            f"note: this spool is the one used before nbs-tui followed $XDG_STATE_HOME; nbs-tui reads it "
            f"as long as no hooks were installed for {new}. To move there: "
            f"nbs-tui hooks install --spool {shlex.quote(str(new))} (same scope flags as before)",
            file=out,
        )


def hooks_command(action: str, settings_path: Path, spool: Path, out: TextIO | None = None) -> int:
    """``nbs-tui hooks install|uninstall|status``: 0 on success (status: 0 only when fully installed)."""
    stream = out or sys.stdout
    settings_path = settings_path.expanduser()
    try:
        if action == "install":
            print(install(settings_path, spool).message, file=stream)
            return 0
        if action == "uninstall":
            print(uninstall(settings_path).message, file=stream)
            return 0
        if action == "status":
            report = status(settings_path, spool)
            _print_status(report, stream)
            return 0 if report.installed else 1
    except HooksError as error:
        print(f"nbs-tui: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"nbs-tui: {error}", file=sys.stderr)
        return 1
    print(f"nbs-tui: unknown hooks action {action!r}", file=sys.stderr)
    return 4


__all__: Sequence[str] = (
    "HOOK_EVENTS",
    "MARKER",
    "HookStatus",
    "HooksError",
    "Outcome",
    "hook_command",
    "hooks_command",
    "install",
    "installed_events",
    "status",
    "strip_ours",
    "uninstall",
    "with_ours",
)
