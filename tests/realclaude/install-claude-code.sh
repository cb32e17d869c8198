#!/usr/bin/env bash
# Install pinned Claude Code versions with npm into a cache outside the repository, and print
# where each binary is (one "VERSION<TAB>PATH" line per version on stdout).
#
#   bash tests/realclaude/install-claude-code.sh                  # the primary version
#   bash tests/realclaude/install-claude-code.sh 2.1.150 2.1.332  # several (corpus capture)
#
# Primary version: $NBS_CLAUDE_VERSION, else the PRIMARY_VERSION below. Cache root:
# $NBS_CLAUDE_CACHE, else ~/.cache/nbs-tui/claude-code; each version lives in <root>/<version>/.
# Idempotent: a version whose binary already answers `--version` is not downloaded again.
# Without npm it says so and exits 0, so the test run goes on and the realclaude tests skip.
# Timing and size of each fresh install go to stderr.
set -euo pipefail

PRIMARY_VERSION=2.1.332
CACHE_ROOT=${NBS_CLAUDE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nbs-tui/claude-code}

if [ $# -eq 0 ]; then
    set -- "${NBS_CLAUDE_VERSION:-$PRIMARY_VERSION}"
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "install-claude-code: npm not found; the realclaude tests will be skipped" >&2
    exit 0
fi

status=0
for version in "$@"; do
    dir="$CACHE_ROOT/$version"
    # Newer versions link bin/claude.exe (a native binary from a per-platform optional
    # dependency); older ones (2.1.100 and before) link cli.js, which runs on node.
    bin="$dir/node_modules/.bin/claude"
    if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "^$version"; then
        printf '%s\t%s\n' "$version" "$(readlink -f "$bin")"
        continue
    fi
    echo "== installing Claude Code $version into $dir" >&2
    mkdir -p "$dir"
    start=$(date +%s.%N)
    ok=0
    for attempt in 1 2; do  # one retry for a registry hiccup
        if npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
                "@anthropic-ai/claude-code@$version" >&2; then
            ok=1
            break
        fi
        echo "install-claude-code: npm install of $version failed (attempt $attempt)" >&2
    done
    if [ $ok -ne 1 ]; then
        status=1
        continue
    fi
    end=$(date +%s.%N)
    if [ ! -x "$bin" ] || ! "$bin" --version >/dev/null 2>&1; then
        echo "install-claude-code: $version installed but $bin does not run" \
             "(no native binary for this platform?)" >&2
        status=1
        continue
    fi
    size=$(du -sm "$dir" | cut -f1)
    printf 'install-claude-code: %s took %.1f s, %s MiB on disk\n' \
        "$version" "$(awk "BEGIN{print $end - $start}")" "$size" >&2
    printf '%s\t%s\n' "$version" "$(readlink -f "$bin")"
done
exit $status
