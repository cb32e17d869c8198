"""The time to open a 5,000-line diff in the review screen, against git printing it.

    .venv/bin/python bench/bench_review.py                     # 5,000 lines, 15 rounds
    .venv/bin/python bench/bench_review.py --lines 5000 20000 --rounds 9

A real repository: ``main`` holds a Python file of N lines; an agent's worktree rewrites every
line of it (N removed, N added: a diff of 2N lines plus headers). Each round, in one headless
160x48 app with the review screen up (side by side at that width):

- **git diff**: ``git diff BASE -- FILE`` alone, as a process (the floor: the review never
  computes a diff);
- **read**: `nbs_tui.files.git_changes.file_diff` and `parse_file_diff` (git's text into
  numbered hunks);
- **show**: `ReviewScreen.show_diff` of the read diff and every visible row drawn (the rows
  built, the 46 on screen highlighted), called directly;
- **open**: read, show, and the app's next frame (what the operator waits for after choosing
  the file: Textual's refresh cycle included);
- the same for a 50-line rewrite, in the same run.

Medians of ``--rounds`` rounds in ms, and open / git diff from the same run (this machine is
shared: compare ratios, not two runs' absolute times).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from textual.app import App

from nbs_tui.app import css_path
from nbs_tui.core.review.agent_changes import FileChange
from nbs_tui.core.review.unified_diff import parse_file_diff
from nbs_tui.files.git_changes import file_diff
from nbs_tui.widgets.review_screen import ReviewScreen

IDENTITY = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True, env={**os.environ, **IDENTITY})
    return done.stdout.strip()


def repository(root: Path, lines: int) -> tuple[Path, str]:
    """A repository whose worktree rewrote every line of ``big.py``; (worktree, base commit)."""
    main = root / f"main-{lines}"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    (main / "big.py").write_text("".join(f"value_{n} = compute({n}, 'old')  # line {n}\n" for n in range(lines)))
    git(main, "add", "-A")
    git(main, "commit", "-qm", "base")
    base = git(main, "rev-parse", "HEAD")
    tree = root / f"agent-{lines}"
    git(main, "worktree", "add", "-q", "-b", "agent", str(tree))
    (tree / "big.py").write_text("".join(f"value_{n} = compute({n}, 'new')  # line {n}\n" for n in range(lines)))
    return tree, base


class Bench(App[None]):
    CSS_PATH = css_path()  # the dashboard's styles: the files beside the diff

    def on_mount(self) -> None:
        self.push_screen(ReviewScreen("bench:0.0"))


async def measure(lines: list[int], rounds: int) -> dict[int, dict[str, list[float]]]:
    results: dict[int, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="nbs-bench-review-") as scratch:
        trees = {n: repository(Path(scratch), n) for n in sorted({*lines, 50})}
        app = Bench()
        async with app.run_test(size=(160, 48)) as pilot:
            screen = app.screen
            assert isinstance(screen, ReviewScreen)
            for n, (tree, base) in trees.items():
                change = FileChange("big.py", "modified", n, n)
                screen.loaded("agent → main", [change], own_worktree=True)
                await pilot.pause()
                times: dict[str, list[float]] = {"git diff": [], "read": [], "show": [], "open": []}
                for _ in range(rounds):
                    started = time.perf_counter()
                    subprocess.run(["git", "-C", str(tree), "diff", base, "--", "big.py"], capture_output=True, check=True)
                    times["git diff"].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    parsed = parse_file_diff("big.py", file_diff(str(tree), base, change).text)
                    times["read"].append(time.perf_counter() - started)
                    assert parsed.line_count == 2 * n, parsed.line_count
                    screen.diff_view.show(type(parsed)("other.py", ()), ())  # a different file first: a real switch
                    await pilot.pause()
                    started = time.perf_counter()
                    screen.show_diff(parsed)
                    for y in range(screen.diff_view.size.height):
                        screen.diff_view.render_line(y)
                    times["show"].append(time.perf_counter() - started)
                    screen.diff_view.show(type(parsed)("other.py", ()), ())
                    await pilot.pause()
                    started = time.perf_counter()
                    parsed = parse_file_diff("big.py", file_diff(str(tree), base, change).text)
                    screen.show_diff(parsed)
                    await pilot.pause()  # the refresh: the visible rows drawn
                    assert screen.diff_view.rows and screen.diff_view.split
                    times["open"].append(time.perf_counter() - started)
                results[n] = times
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, nargs="+", default=[5000])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    results = asyncio.run(measure(args.lines, args.rounds))
    load = os.getloadavg()[0]
    print(f"# bench_review.py, {time.strftime('%Y-%m-%d %H:%M')} UTC, load {load:.1f}, {args.rounds} rounds, medians in ms\n")
    print("| lines rewritten | diff rows | git diff | read (git + parse) | show and draw | open (read, show, next frame) | open / git diff |")
    print("|---|---|---|---|---|---|---|")
    for n, times in results.items():
        med = {k: statistics.median(v) * 1000 for k, v in times.items()}
        print(
            f"| {n:,} | {2 * n:,} | {med['git diff']:.1f} | {med['read']:.1f} | {med['show']:.1f} | {med['open']:.1f} "
            f"| {med['open'] / med['git diff']:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
