"""Every ssh the dashboard runs until its first full frame over ssh: what, when, for how long.

Runs bench_remote.py's dash-ssh (the real dashboard in a pty on H lab hosts x 20 panes) with an
``ssh`` on PATH that logs each call's start and end before and after running the real one (its own
``sh`` adds a few ms to each), and prints one row per kind of call: how many per host, when they
started (seconds after the launch) and how long they took (a session still open at the frame, a
control client or the master, "stays open"). The master's own connect time is read from the
dashboard's log.

    .venv/bin/python bench/profile_remote_start.py              # 5 hosts, 3 launches
    .venv/bin/python bench/profile_remote_start.py --hosts 1 --runs 5
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import bench_remote  # noqa: E402

from tests.remote.conftest import running_lab  # noqa: E402

SHIM = r"""#!/bin/sh
last=""; dest=""; prev=""
for a in "$@"; do last="$a"; [ "$a" = "--" ] && dest="$prev"; prev="$a"; done
printf 'S %s %s %s %s\n' "$(date +%s.%N)" "$$" "$dest" "$(printf '%s' "$last" | tr '\n' ' ')" >> "$SSH_PROFILE_LOG"
{real} "$@"
status=$?
printf 'E %s %s\n' "$(date +%s.%N)" "$$" >> "$SSH_PROFILE_LOG"
exit $status
"""


def kind(command: str) -> str:
    if "nbs-tui-connected" in command:
        return "master: login + connect script" if "exec cat" in command else "connect script on the master"
    if "ps -e" in command:
        return "agent walk (ps + awk)"
    if "command -v" in command:
        return "login + prepare (tmux -V, reaping)"
    if "attach-session" in command:
        return "control client" + (" (guard, no-output)" if "no-output" in command else "")
    if "list-panes" in command:
        return "list-panes -a"
    if command.rstrip().endswith("-V"):
        return "tmux -V (the lease)"
    if "@nbs_sidecar" in command:
        return "lease compare-and-set" if "if-shell" in command else "lease read"
    return command[:60]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=5)
    parser.add_argument("--panes", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    real = shutil.which("ssh")
    if real is None:
        raise SystemExit("ssh is not installed")
    folder = Path(tempfile.mkdtemp(prefix="nbs-ssh-profile-"))
    (folder / "ssh").write_text(SHIM.replace("{real}", real))
    (folder / "ssh").chmod(0o755)
    log = folder / "calls.log"
    script = folder / "writer.py"
    script.write_text(bench_remote.WRITER)
    rows: dict[str, list[tuple[float, float | None]]] = defaultdict(list)
    frames: list[float] = []
    connects: list[int] = []
    path = os.environ["PATH"]
    try:
        with running_lab(tuple(f"host{i}" for i in range(args.hosts))) as lab:
            bench_remote.prepare(lab, args.panes, script)
            os.environ.update(PATH=f"{folder}:{path}", SSH_PROFILE_LOG=str(log))
            for _ in range(args.runs):
                log.unlink(missing_ok=True)
                launched = time.time()
                frame = bench_remote.run_dashboard(lab, "dash-ssh", args.panes, 0.2)["connect_s"]
                frames.append(frame)
                started: dict[str, tuple[float, str]] = {}
                for line in log.read_text().splitlines():
                    parts = line.split(" ", 4)
                    if parts[0] == "S":
                        started[parts[2]] = (float(parts[1]), parts[4] if len(parts) > 4 else "")
                    elif parts[2] in started:
                        began, command = started.pop(parts[2])
                        ended = float(parts[1])
                        if began - launched <= frame:
                            took = ended - began if ended - launched <= frame else None
                            rows[kind(command)].append((began - launched, took))
                for began, command in started.values():
                    if began - launched <= frame:
                        rows[kind(command)].append((began - launched, None))
            dashboard_log = lab.root / "dash-dash-ssh" / "state" / "nbs-tui" / "nbs-tui.log"
            if dashboard_log.exists():
                connects = [int(ms) for ms in re.findall(r"connected in (\d+) ms", dashboard_log.read_text())]
    finally:
        os.environ["PATH"] = path
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{args.hosts} hosts x {args.panes} panes; first full frame: {', '.join(f'{f:.2f}' for f in frames)} s")
    if connects:
        print(f"master login + connect script (the log): {statistics.median(connects):.0f} ms [{min(connects)}-{max(connects)}]")
    print("\n| ssh, until the first full frame | per host | started (s after launch) | took (ms, median [min-max]) |")
    print("|---|---|---|---|")
    for name, calls in sorted(rows.items(), key=lambda kv: min(c[0] for c in kv[1])):
        lasted = [c[1] * 1000 for c in calls if c[1] is not None]
        said = f"{statistics.median(lasted):.0f} [{min(lasted):.0f}-{max(lasted):.0f}]" if lasted else "stays open"
        first, last = min(c[0] for c in calls), max(c[0] for c in calls)
        print(f"| {name} | {len(calls) / args.hosts / args.runs:.1f} | {first:.2f}-{last:.2f} | {said} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
