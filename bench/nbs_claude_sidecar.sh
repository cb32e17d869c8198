#!/usr/bin/env bash
# One agent's nbs-claude sidecar, rebuilt for the benchmarks: the once-a-second loop nbs-tui
# replaces, as the seeds describe it (../shared/seeds/000 "Sidecar Architecture" and 001's
# check_control_inbox and detect_control_commands), with the same processes per second.
#
#   nbs_claude_sidecar.sh SOCKET PANE PROJECT [POLL_INTERVAL]
#
# Every second: the inbox's line count (wc), whether the pane still exists (list-panes), the
# pane's last lines (capture-pane -S -5), their hash (echo | md5sum | cut), the plan-menu check
# (echo | grep); when the hash changed also the `\nbs-` scan (echo | grep -o) and, per command
# found, its verb and path (echo | awk, twice) and the registry check (grep -q); when still for
# POLL_INTERVAL seconds, the prompt check (echo | tail | grep).
#
# It types nothing: where nbs-claude would select a plan option or inject /nbs-poll, this
# only decides to, like the benches' other ways (nbs-tui runs with --poll-interval 3600
# beside it). Its registry is a file of its own ($NBS_CLAUDE_REGISTRY, or a temporary file
# removed at exit), so the project's stays as nbs-tui keeps it. It ends when its pane does.
set -u
socket=$1 pane=$2 project=$3 poll_interval=${4:-3600}
inbox=$project/.nbs/control-inbox
registry=${NBS_CLAUDE_REGISTRY:-}
if [[ -z $registry ]]; then
    registry=$(mktemp "${TMPDIR:-/tmp}/nbs-claude-registry.XXXXXX")
    trap 'rm -f "$registry"' EXIT
fi
: >> "$registry"
trap 'exit 0' TERM INT
inbox_line=0 idle=0 last_hash=""

while :; do
    sleep 1

    if [[ -f $inbox ]]; then  # forward-only: the lines after the last count
        total=$(wc -l < "$inbox")
        if (( total > inbox_line )); then
            tail -n +"$((inbox_line + 1))" "$inbox" > /dev/null
            inbox_line=$total
        fi
    fi

    tmux -L "$socket" list-panes -t "$pane" > /dev/null 2>&1 || break
    content=$(tmux -L "$socket" capture-pane -t "$pane" -p -S -5 2>/dev/null) || continue
    hash=$(echo "$content" | md5sum | cut -d' ' -f1)

    if [[ $hash != "$last_hash" ]]; then
        idle=0 last_hash=$hash
        echo "$content" | grep -qF 'Would you like to proceed?' || true  # nbs-claude: select option 2
        commands=$(echo "$content" | grep -oE '\\nbs-[a-z-]+ [^ ]+')
        while IFS= read -r command; do
            [[ -z $command ]] && continue
            verb=$(echo "$command" | awk '{print $1}')
            path=$(echo "$command" | awk '{print $2}')
            if ! grep -qF "${verb#\\nbs-register-}:$path" "$registry"; then
                echo "${verb#\\nbs-register-}:$path" >> "$registry"
            fi
        done <<< "$commands"
        continue
    fi

    idle=$((idle + 1))
    echo "$content" | grep -qF 'Would you like to proceed?' || true
    if (( idle >= poll_interval )); then
        echo "$content" | tail -3 | grep -qE '❯|>\s*$' || true  # nbs-claude: inject /nbs-poll
        idle=0
    fi
done
