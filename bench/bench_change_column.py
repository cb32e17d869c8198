"""What the fleet list's change column costs: `ChangeCounter` (the column's whole backend: its
thread, one watchfiles watch over every worktree, the git commands it runs) at N agents whose
files change every second, beside the same fleet without it.

    .venv/bin/python bench/bench_change_column.py                 # 50 agents, gaps 2.0 s, 20 s windows
    .venv/bin/python bench/bench_change_column.py --agents 50 --gaps 2.0 0.5 --seconds 30

The fleet: N git repositories (one agent each, a worktree of its own, as ``new --worktree``
makes them), 40 tracked files of 200 lines. A writer process (the agents' stand-in, measured by
neither side) rewrites one tracked file in every repository once a second, and every tenth
second adds a new untracked file there. Then, one after the other on the same fleet and writer:

* without: nothing else runs; this process's CPU (its threads and the children it reaped);
* with, per ``--gaps`` value: a `ChangeCounter` given the N agent panes (the fanout's
  ``set_panes``), started, its first read of every worktree let finish (and 2 s), then the same
  window: this
  process's CPU, git's included (each read is ``git status`` and ``git diff --raw --numstat``,
  reaped children). Also the worktree reads per second, and how stale a count gets: after the
  window the writer stops and the time until every agent's count is final is measured.

Not included: the dashboard's repaint of the changed cells (one cell per agent per gap: the
fleet list's direct painter, see 2026-11-26-direct-paint.md). CPU is % of one core. Results: a
markdown table on stdout; a dated copy goes in bench/results/ by hand.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from nbs_tui.config import Settings  # noqa: E402
from nbs_tui.core.fleet.model import PaneId, PaneInfo  # noqa: E402
from nbs_tui.core.review.agent_changes import ChangeCount  # noqa: E402
from nbs_tui.runtime import change_counter  # noqa: E402
from nbs_tui.runtime.change_counter import CPU_BUDGET, ChangeCounter  # noqa: E402

WRITER = r"""
import os, sys, time
repos = sys.argv[1:]
n = 0
while True:
    n += 1
    for repo in repos:
        with open(os.path.join(repo, f"src/m{n % 40}.py"), "a") as fh:
            fh.write(f"line {n}\n")
        if n % 10 == 0:
            with open(os.path.join(repo, f"new_{n}.txt"), "w") as fh:
                fh.write("x\n" * n)
    time.sleep(max(0.0, 1.0 - time.monotonic() % 1.0))
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def make_fleet(root: Path, agents: int) -> list[Path]:
    repos = []
    for i in range(agents):
        repo = root / f"agent{i}"
        (repo / "src").mkdir(parents=True)
        for f in range(40):
            (repo / "src" / f"m{f}.py").write_text("".join(f"x{n} = {n}\n" for n in range(200)))
        git(repo, "init", "-q", "-b", "main")
        git(repo, "-c", "user.email=b@b", "-c", "user.name=b", "add", "-A")
        git(repo, "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "base")
        repos.append(repo)
    return repos


def cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def git_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def window(seconds: float) -> tuple[float, float]:
    """This process's CPU over ``seconds`` (% of one core), and the part of it its children's (git)."""
    before, children, started = cpu(), git_cpu(), time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - started
    return 100 * (cpu() - before) / elapsed, 100 * (git_cpu() - children) / elapsed


class Counted:
    def __init__(self) -> None:
        self.counts: dict[PaneId, ChangeCount] = {}
        self.at = time.monotonic()
        self.lock = threading.Lock()

    def __call__(self, counts: Mapping[PaneId, ChangeCount]) -> None:
        with self.lock:
            self.counts.update(counts)
            self.at = time.monotonic()


def with_counter(
    repos: list[Path], busy: int, spool: Path, gap: float, seconds: float, writer: subprocess.Popen[bytes]
) -> dict[str, float]:
    counted = Counted()
    counter = ChangeCounter(Settings(hook_spool=spool), lambda: None, "/nonexistent", counted, lambda s, m: print(s, m), min_gap=gap)
    panes = [PaneInfo(f"%{i}", "s", i, "w", 0, "", "claude", str(repo), 1, 80, 24, is_agent=True) for i, repo in enumerate(repos)]
    counter.start()
    counter.set_panes(panes)
    deadline = time.monotonic() + 120.0  # the first read of every worktree, within the budget too
    while len(counted.counts) < len(panes) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2.0)
    reads = counter.reads
    percent, of_git = window(seconds)
    reads_per_s = (counter.reads - reads) / seconds
    gap_used = busy / reads_per_s if reads_per_s else float("inf")
    writer.kill()
    writer.wait()
    stopped = time.monotonic()
    time.sleep(min(60.0, gap_used) + 2.0)
    with counted.lock:
        settle = counted.at - stopped
    counter.stop()
    return {"cpu": percent, "git": of_git, "reads": reads_per_s, "gap": gap_used, "settle": max(0.0, settle)}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--gaps", type=float, nargs="+", default=[2.0], help="MIN_GAP values (the budget may lengthen it)")
    parser.add_argument("--budgets", type=float, nargs="+", default=[CPU_BUDGET], help="CPU_BUDGET values, with the first gap")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--busy", type=int, default=0, help="only this many agents change files (0: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repos = make_fleet(Path(tmp), args.agents)
        spool = Path(tmp) / "hooks.jsonl"

        def start_writer() -> subprocess.Popen[bytes]:
            return subprocess.Popen([sys.executable, "-c", WRITER, *map(str, repos[: args.busy or None])])

        writer = start_writer()
        time.sleep(2.0)
        without, _ = window(args.seconds)
        writer.kill()
        writer.wait()
        rows = [f"| without the column | {without:.1f} % | - | - | - | - |"]
        runs = [(gap, args.budgets[0]) for gap in args.gaps] + [(args.gaps[0], b) for b in args.budgets[1:]]
        for gap, budget in runs:
            change_counter.CPU_BUDGET = budget
            writer = start_writer()
            result = with_counter(repos, args.busy or len(repos), spool, gap, args.seconds, writer)
            rows.append(
                f"| with it, MIN_GAP {gap:g} s, CPU_BUDGET {budget:g} | {result['cpu']:.1f} % | {result['git']:.1f} % |"
                f" {result['reads']:.1f} | {result['gap']:.1f} s | {result['settle']:.1f} s |"
            )
    busy = f"{args.busy} of them" if args.busy else "each"
    print(f"{args.agents} agents, a file changed in {busy} every second, {args.seconds:g} s windows ({time.strftime('%Y-%m-%d')})\n")
    print("| | CPU, % of one core (git included) | of which git | worktree reads/s | each busy worktree read every | last count after the writes stopped |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
