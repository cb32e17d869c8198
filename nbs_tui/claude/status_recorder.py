"""The status-line recorder: Claude Code's ``statusLine`` command, wrapped so each document it
hands the status line after a turn is also appended to nbs-tui's usage spool (issue 37).

Claude Code (2.1.332, notes "Usage in the status line") runs the ``statusLine`` command through
``/bin/sh -c`` after each turn with one JSON document on stdin: ``cost.total_cost_usd``,
``context_window`` (tokens), and with subscription auth ``rate_limits.five_hour`` /
``seven_day`` (``used_percentage``, ``resets_at``). Its environment has the agent's
``CLAUDE_CONFIG_DIR`` (the account) and ``TMUX_PANE``.

Installed by ``nbs-tui hooks install`` beside the hooks (`nbs_tui.claude.hooks`), with the same
care: the settings' ``statusLine`` command is replaced by `recorder_command`, which carries the
user's own command as its last word. The recorder script appends one line to the spool (one
``write()`` on an ``O_APPEND`` descriptor, as the hook script does), then runs the user's own
command with the same stdin and lets it print to Claude Code directly: what it printed and its
exit status are exactly its own. When the script is gone the user's command still runs. A
second install changes nothing; uninstall puts the user's command back (`unwrapped`), and the
hooks' backup brings the file's exact bytes back.
"""

from __future__ import annotations

import copy
import shlex
from pathlib import Path
from typing import Any

from nbs_tui.files.atomic import write_atomic

USAGE_SPOOL_NAME = "usage.jsonl"
RECORDER_NAME = "nbs-tui-statusline.sh"
RECORDER_MARKER = "#nbs-tui-statusline"
_ARGV0 = "nbs-tui-statusline"
_LAUNCH = '[ -r "$1" ] && exec /bin/sh "$@"; exec /bin/sh -c "$3"'
"""Run the recorder when it is there, else the user's own command (``$3``) alone."""

RECORDER_SCRIPT = r"""#!/bin/sh
# nbs-tui status-line recorder (written by `nbs-tui hooks install`): append Claude Code's
# status-line JSON with $TMUX_PANE, the tmux socket and the account ($CLAUDE_CONFIG_DIR, else
# ~/.claude) to the usage spool named in $1 as ONE line in ONE write() on an O_APPEND
# descriptor, then run the user's own statusLine command ($2, may be empty) with the same stdin.
# Its output goes to Claude Code untouched and its exit status is this script's. Few processes:
# Claude Code waits for this after every turn (bench/bench_status_recorder.py).
spool=$1
own=$2
input=$(cat; printf x)
input=${input%x}
nl='
'
if [ -n "$input" ] && [ -d "${spool%/*}" ]; then
    pane=${TMUX_PANE:-}
    case $pane in *[!%0-9]*) pane= ;; esac
    sock=${TMUX:-}
    sock=${sock%%,*}
    case $sock in *[\"\\]*) sock= ;; esac
    config=${CLAUDE_CONFIG_DIR:-${HOME:-}/.claude}
    case $config in *[\"\\]*) config= ;; esac
    now=$(date +%s.%N 2>/dev/null)
    case $now in ''|*[!0-9.]*) now=$(date +%s 2>/dev/null) ;; esac
    case $now in ''|*[!0-9.]*) now=0 ;; esac
    [ -e "$spool" ] || (umask 077; : >>"$spool") 2>/dev/null
    doc=${input%"$nl"}
    {
        printf '{"nbs_pane":"%s","nbs_tmux":"%s","nbs_time":%s,"nbs_config_dir":"%s","payload":' "$pane" "$sock" "$now" "$config"
        case $doc in
            *"$nl"*) printf '%s' "$doc" | tr -d '\r\n' ;;  # pretty-printed: one line
            *) printf '%s' "$doc" ;;
        esac
        printf '}\n'
    } 2>/dev/null | dd of="$spool" bs=64M iflag=fullblock oflag=append conv=notrunc 2>/dev/null
fi
[ -n "$own" ] || exit 0
printf '%s' "$input" | /bin/sh -c "$own"
"""


def usage_spool_for(hook_spool: Path) -> Path:
    """The usage spool beside the hook spool (one state folder, one pair)."""
    return hook_spool.parent / USAGE_SPOOL_NAME


def recorder_path(usage_spool: Path) -> Path:
    return usage_spool.parent / RECORDER_NAME


def recorder_command(usage_spool: Path, own: str) -> str:
    """The ``statusLine`` command: the recorder with the spool and the user's own command."""
    words = ["/bin/sh", "-c", _LAUNCH, _ARGV0, str(recorder_path(usage_spool)), str(usage_spool), own]
    return f"{shlex.join(words)} {RECORDER_MARKER}"


def parse_recorder(command: Any) -> tuple[Path, str] | None:
    """(usage spool, the user's own command) of a command `recorder_command` made, else None."""
    if not isinstance(command, str) or RECORDER_MARKER not in command:
        return None
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    if len(words) != 7 or words[:4] != ["/bin/sh", "-c", _LAUNCH, _ARGV0]:
        return None
    return Path(words[5]), words[6]


def recorded(settings: dict[str, Any]) -> tuple[Path, str] | None:
    line = settings.get("statusLine")
    return parse_recorder(line.get("command")) if isinstance(line, dict) else None


def why_not_wrapped(settings: dict[str, Any]) -> str | None:
    """Why the settings' status line cannot be wrapped (a kind we do not know), or None."""
    line = settings.get("statusLine")
    if line is None:
        return None
    if not isinstance(line, dict) or line.get("type", "command") != "command" or not isinstance(line.get("command", ""), str):
        return "its statusLine is not a {\"type\": \"command\"} entry, so it is left alone and usage is not recorded there"
    return None


def unwrapped(settings: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``settings`` with the user's own status line back (none when there was none)."""
    result = copy.deepcopy(settings)
    found = recorded(result)
    if found is None:
        return result
    own = found[1]
    line = result["statusLine"]
    if not own and set(line) <= {"type", "command"}:
        del result["statusLine"]
    else:
        line["command"] = own
    return result


def wrapped(settings: dict[str, Any], usage_spool: Path) -> dict[str, Any]:
    """``settings`` (already without our entries) with its status line wrapped by the recorder;
    unchanged when the status line is of a kind we do not know (`why_not_wrapped`)."""
    if why_not_wrapped(settings) is not None:
        return settings
    result = copy.deepcopy(settings)
    line = result.get("statusLine")
    if line is None:
        result["statusLine"] = {"type": "command", "command": recorder_command(usage_spool, "")}
    else:
        line["command"] = recorder_command(usage_spool, line.get("command", ""))
    return result


def write_recorder(usage_spool: Path) -> Path:
    """(Re)write the recorder script beside the usage spool, mode 0755 (the folder is the hook
    spool's, made 0700 by `nbs_tui.claude.hooks.write_script`)."""
    usage_spool.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    script = recorder_path(usage_spool)
    if not script.exists() or script.read_text(encoding="utf-8") != RECORDER_SCRIPT:
        write_atomic(script, RECORDER_SCRIPT.encode("utf-8"), make_parents=True)
    script.chmod(0o755)
    return script


def recorder_ok(usage_spool: Path) -> bool:
    try:
        return recorder_path(usage_spool).read_text(encoding="utf-8") == RECORDER_SCRIPT
    except OSError:
        return False
