"""Benchmark the status-line recorder's cost per turn (issue 37): what Claude Code waits for when
it runs the ``statusLine`` command after a turn, with the recorder wrapped around the user's own
status line, beside the user's own status line alone.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_status_recorder.py              # 300 calls of each, interleaved
    .venv/bin/python bench/bench_status_recorder.py --calls 100

Each call is what Claude Code does: ``/bin/sh -c COMMAND`` with the status-line document (2.1.332's,
~2 KB, with ``rate_limits``) on stdin, stdout read to the end. Compared, interleaved call by call
so that load on the machine falls on every variant alike:

- ``own sh``: a user's status line in sh (``read``, ``printf`` the version: 2 processes);
- ``own jq``: a user's status line with ``jq`` (when installed), the commonest kind;
- ``recorder + own sh`` / ``recorder + own jq``: the same, installed under the recorder
  (`nbs_tui.claude.status_recorder.recorder_command`), appending to a usage spool in a temp folder;
- ``recorder alone``: the recorder with no status line of the user's.

Prints a markdown table (median and 90th percentile, in ms, and the recorder's extra cost per
turn); ``--out FILE`` also writes it there.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from nbs_tui.claude.status_recorder import recorder_command, write_recorder  # noqa: E402

DOCUMENT = {
    "session_id": "2672234e-c789-49cb-8204-83ab738167c1",
    "transcript_path": "/home/u/.claude-work/projects/-home-u-src-app/2672234e-c789-49cb-8204-83ab738167c1.jsonl",
    "cwd": "/home/u/src/app",
    "model": {"id": "claude-opus-5-5", "display_name": "Opus 5.5"},
    "workspace": {"current_dir": "/home/u/src/app", "project_dir": "/home/u/src/app", "added_dirs": []},
    "version": "2.1.332",
    "output_style": {"name": "default"},
    "cost": {"total_cost_usd": 1.2345, "total_duration_ms": 93_000, "total_api_duration_ms": 41_000,
             "total_lines_added": 120, "total_lines_removed": 14},
    "context_window": {"total_input_tokens": 182_000, "total_output_tokens": 9_100, "context_window_size": 1_000_000,
                       "current_usage": {"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0,
                                         "cache_read_input_tokens": 0}, "used_percentage": 18, "remaining_percentage": 82},
    "exceeds_200k_tokens": False,
    "prompt_cache": {"warm": True, "caching_observed": True, "ttl": "1h", "requests": 12, "misses": 1, "hit_ratio": 0.91},
    "fast_mode": False,
    "thinking": {"enabled": True},
    "rate_limits": {"five_hour": {"used_percentage": 42, "resets_at": 1796548996},
                    "seven_day": {"used_percentage": 11, "resets_at": 1796631796}},
}  # fmt: skip
OWN_SH = "read -r doc; printf 'v%s' \"$(printf '%s' \"$doc\" | sed -n 's/.*\"version\":\"\\([^\"]*\\)\".*/\\1/p')\""
OWN_JQ = "jq -r '\"\\(.model.display_name) · $\\(.cost.total_cost_usd) · 5h \\(.rate_limits.five_hour.used_percentage)%\"'"


def call(command: str, stdin: bytes) -> float:
    started = time.perf_counter()
    subprocess.run(["/bin/sh", "-c", command], input=stdin, stdout=subprocess.PIPE, check=False)
    return (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    stdin = json.dumps(DOCUMENT).encode() + b"\n"
    with tempfile.TemporaryDirectory(prefix="nbs-bench-recorder-") as tmp:
        spool = Path(tmp) / "state" / "usage.jsonl"
        write_recorder(spool)
        variants = {"own sh": OWN_SH, "recorder + own sh": recorder_command(spool, OWN_SH), "recorder alone": recorder_command(spool, "")}
        if shutil.which("jq"):
            variants |= {"own jq": OWN_JQ, "recorder + own jq": recorder_command(spool, OWN_JQ)}
        for command in variants.values():  # warm the page cache and check the outputs agree
            call(command, stdin)
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.calls):
            for name, command in variants.items():
                times[name].append(call(command, stdin))
        lines = spool.read_bytes().count(b"\n")
    def row(name: str) -> str:
        values = sorted(times[name])
        return f"| {name} | {statistics.median(values):.2f} | {values[int(len(values) * 0.9)]:.2f} |"

    out = [
        f"status-line recorder, {args.calls} calls of each, interleaved ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
        "",
        "| status line | median ms | p90 ms |",
        "|---|---|---|",
        *(row(name) for name in variants),
        "",
    ]
    for own in ("sh", "jq"):
        if f"own {own}" in times:
            extra = statistics.median(times[f"recorder + own {own}"]) - statistics.median(times[f"own {own}"])
            ratio = statistics.median(times[f"recorder + own {own}"]) / statistics.median(times[f"own {own}"])
            out.append(f"- recorder's extra cost per turn over the user's own {own} status line: {extra:.2f} ms (x{ratio:.2f})")
    out.append(f"- spool lines written: {lines} (one per recorded call)")
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
