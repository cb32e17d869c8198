"""The POSIX shell nbs-tui runs on another host through ssh, and what its output means.

`nbs_tui.tmux.ssh` runs these; they are kept apart so that the runner reads as processes and a
connection, and the scripts as what they do on the host. Each is text for ``sh`` (the remote
login shell parses it): POSIX sh, awk and ps only, nothing installed on the host.
"""

from __future__ import annotations

import shlex

from nbs_tui.tmux.discovery import FIELDS

REAP = r"""
{list_clients} 2>/dev/null | while read -r pid control; do
  [ "$control" = 1 ] || continue
  ppid=$(sed 's/.*) [^ ]* //;s/ .*//' "/proc/$pid/stat" 2>/dev/null || ps -o ppid= -p "$pid" 2>/dev/null)
  if [ "$(echo $ppid)" = 1 ] && kill -TERM "$pid" 2>/dev/null; then echo "reaped $pid"; fi
done
"""
"""Stop orphaned control clients: a control client whose parent is PID 1 (its ssh session is gone)."""

TIED_CLIENT = (
    r"""{ sh -c 'echo $$; exec cat'; [ $? -lt 128 ] && kill -TERM 0; } 2>/dev/null"""
    r""" | { read -r relay; "$@"; status=$?; kill -TERM "$relay" 2>/dev/null; exit "$status"; }"""
)
"""How a control client runs on the host (``sh -c TIED_CLIENT NAME TMUX ARGS...``): it dies with
its ssh session. ``cat`` relays our stdin to tmux; when it ends (we closed the session, our ssh
or the whole connection died) the session's process group gets SIGTERM, the tmux client with it.
Without this, a client whose session closed while tmux had output queued for it is never let go
by the server (tmux 3.3a-3.5a, see `nbs_tui.tmux.tied`): it stays attached, keeps its ssh
channel (and so the master) open, and a ``kill-server`` never finishes. When tmux ends by itself
(``%exit``) the relay is stopped instead and the session ends with tmux's own exit status. The
relay says its pid on the first line, read before tmux starts reading the pipe."""

CONNECTED = "nbs-tui-connected"
"""The connect script's last line: the master is up and everything the script had to say is said."""
PANES_BEGIN = "nbs-tui-panes"
AGENTS_BEGIN = "nbs-tui-agents"

TREE = r"""
if command -v ps >/dev/null 2>&1; then ps -e -o pid= -o ppid= -o args=; else
  for d in /proc/[0-9]*; do
    ppid=$(sed 's/.*) [^ ]* //;s/ .*//' "$d/stat" 2>/dev/null) || continue
    printf '%s %s %s\n' "${{d#/proc/}}" "$ppid" "$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)"
  done
fi | awk -v want={pids} '
{{ pid = $1; pp = $2; $1 = ""; $2 = ""; sub(/^ +/, ""); args[pid] = $0; kids[pp] = kids[pp] " " pid }}
END {{
  n = split(want, w, " ")
  for (j = 1; j <= n; j++) {{
    if (!(w[j] in args)) {{ print w[j], "-"; continue }}
    queue = w[j]; seen = 0
    while (queue != "" && seen < 64) {{
      cur = queue; sub(/ .*/, "", cur); sub(/^[^ ]+ */, "", queue); seen++
      print w[j], cur, args[cur]
      queue = queue kids[cur]; sub(/^ +/, "", queue)
    }}
  }}
}}'"""
"""The one walk of process trees on another host (``ps``, else ``/proc``; POSIX awk): for each of
the pids ``{pids}`` (a shell word, formatted in), ``ROOT PID ARGS`` for the root and every
process below it, nearest first, at most 64 per root, or ``ROOT -`` when the root is gone. Both
host scripts that look below a pane read it: `AGENTS` (is Claude Code there) and `CLAUDE_BELOW`
(which process is it, and its status file)."""

AGENTS = (
    TREE
    + r""" | awk '
function claude(a,   k, m, i, base, first) {{
  m = split(a, k, " ")
  for (i = 1; i <= m && i <= 4; i++) {{
    base = k[i]; sub(/.*\//, "", base)
    if (i == 1) first = base
    if (i == 1 && base == "claude") return 1
    if (i > 1 && base == "claude" && (first == "node" || first == "bun" || first == "deno")) return 1
    if (i == 2 && base == "claude" && first ~ /^(python[0-9.]*|sh|bash|env)$/) return 1
    if (k[i] ~ /claude-code/ && k[i] ~ /\.(js|mjs|cjs)$/) return 1
    if (k[i] == "nbs_tui.demo.agent") return 1
  }}
  return 0
}}
{{
  root = $1
  if (!(root in hit)) {{ hit[root] = 0; order[++n] = root }}
  if ($2 == "-") {{ hit[root] = "gone"; next }}
  if (hit[root] == 1) next
  $1 = ""; $2 = ""; sub(/^ +/, "")
  if (claude($0)) hit[root] = 1
}}
END {{ for (i = 1; i <= n; i++) print order[i], hit[order[i]] }}'
"""
)
"""Which of the given pane pids has Claude Code (or the demo agent) in its process tree (`TREE`),
on the host: the remote half of `nbs_tui.tmux.discovery.agent_verdict`. The local walk also
trusts a process named ``claude`` (its comm); here a script named ``claude`` shows as
``INTERPRETER .../claude``, so that form counts too. Prints ``PID 1``, ``PID 0`` or ``PID gone``
per pid."""

CLAUDE_BELOW = (
    "for p in $("
    + TREE.format(pids='"$1"')
    + r""" | awk '$2 != "-" { print $2 }'); do
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
)
"""Every process at or below the pane pid ``$1`` (`TREE`) that has a Claude Code status file,
``<config>/sessions/<pid>.json``: the config folders tried are ``$EXTRA`` (shell words), the
process's ``CLAUDE_CONFIG_DIR`` and its ``$HOME/.claude``. Per process found: ``PROC PID START
CONFIG CWD`` (START: field 22 of ``/proc/PID/stat``, to tell an older process's file under a reused
pid), ``ARGS`` (its command line, words split by 0x1f) and ``STATUS`` (the file on one line); read
by `nbs_tui.lifecycle.host.parse_found`. The caller sets ``$1`` and ``EXTRA``."""


def parse_agents(out: str) -> dict[int, bool]:
    found: dict[int, bool] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1] in ("0", "1"):
            found[int(parts[0])] = parts[1] == "1"
    return found


def connect_script(tmux: str, list_clients: str, list_panes: str, *, hold: bool) -> str:
    """One round trip on (re)connect: is tmux there, its version, orphans reaped, every pane
    listed (``list_panes``, a whole remote command) and which of them run an agent; the last line
    is `CONNECTED`. ``hold``: the master's own session, which then waits on its stdin (our pipe),
    so that the connection lives exactly as long as we do."""
    quoted = shlex.quote(tmux)
    pid_field = FIELDS.index("pane_pid") + 1
    script = (
        f'command -v {quoted} >/dev/null 2>&1 || {{ echo "{quoted}: command not found" >&2; exit 127; }}\n'
        f"{shlex.join([tmux, '-V'])}\n"
        + REAP.format(list_clients=list_clients)
        + f"if panes=$({list_panes}); then\n"
        f"  echo {PANES_BEGIN}\n"
        "  printf '%s\\n' \"$panes\"\n"
        f"  pids=$(printf '%s\\n' \"$panes\" | awk -F '\\037' '{{ print ${pid_field} }}')\n"
        f"  echo {AGENTS_BEGIN}\n"
        + AGENTS.format(pids='"$pids"')
        + "fi\n"
        f"echo {CONNECTED}\n"
    )
    return script + ("exec cat >/dev/null\n" if hold else "")


def split_connect_output(out: str) -> tuple[list[str], str | None, dict[int, bool]]:
    """The connect script's output: its first lines (version, ``reaped PID``), the pane listing
    (None when ``list-panes`` failed: no server, say) and the agent verdicts."""
    section = ""
    listed = False
    head: list[str] = []
    listing: list[str] = []
    agents: list[str] = []
    for line in out.splitlines():
        if line in (PANES_BEGIN, AGENTS_BEGIN, CONNECTED):
            section = line
            listed = listed or line == PANES_BEGIN
            continue
        {"": head, PANES_BEGIN: listing, AGENTS_BEGIN: agents}.get(section, head).append(line)
    text = "".join(line + "\n" for line in listing) if listed else None
    return head, text, parse_agents("\n".join(agents))


def reaped(out: str) -> list[int]:
    """The pids a `REAP` said it stopped (``reaped PID`` lines)."""
    pids = []
    for line in out.splitlines():
        if line.startswith("reaped "):
            try:
                pids.append(int(line.split()[1]))
            except (ValueError, IndexError):
                continue
    return pids
