"""The queue view's cost on the UI thread: a queue of N tasks shown, then its ages moving.

    .venv/bin/python bench/bench_queue_view.py               # 50 and 500 tasks, 7 rounds
    .venv/bin/python bench/bench_queue_view.py --tasks 2000

`nbs_tui.widgets.queue_view.QueueView` in an app of its own at 160x48 (no fleet, no tmux). Per N:
the first `show` of the queue (every row added), an age tick a minute later (`draw_if_shown`:
every row's age changed, so each row's age cell is updated in place), and an age tick a second
later (no row's text changed: nothing is touched). Each is the call alone and the call with the
frame that follows (`pilot.pause()`, which also waits on Textual's own timers: compare it with
the "nothing changed" row, its floor). Medians over ``--rounds``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.app import App, ComposeResult

from nbs_tui.core.queue.records import TaskAdded
from nbs_tui.core.queue.task_states import fold
from nbs_tui.files.queue_watch import QueueSnapshot
from nbs_tui.widgets.queue_view import QueueView


class ViewApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.now = 100_000.0
        self.view = QueueView(id="queue", wall=lambda: self.now)

    def compose(self) -> ComposeResult:
        yield self.view


async def one_round(tasks: int) -> dict[str, tuple[float, float]]:
    app = ViewApp()
    out: dict[str, tuple[float, float]] = {}
    async with app.run_test(size=(160, 48)) as pilot:
        queue = fold(TaskAdded(task=str(n), at=float(n), text=f"task {n}: " + "do the thing " * 6) for n in range(1, tasks + 1))
        await pilot.pause()
        for name, step, act in (
            ("first show", 0.0, lambda: app.view.show(QueueSnapshot.of(queue))),
            ("ages, a minute later", 60.0, app.view.draw_if_shown),
            ("ages, a second later", 1.0, app.view.draw_if_shown),
        ):
            app.now += step
            started = time.perf_counter()
            act()
            called = time.perf_counter() - started
            await pilot.pause()
            out[name] = (called, time.perf_counter() - started)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, nargs="*", default=[50, 500])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print("| tasks | what | the call, ms | with the next frame, ms |")
    print("|---|---|---|---|")
    for tasks in args.tasks:
        rounds = [asyncio.run(one_round(tasks)) for _ in range(args.rounds)]
        for name in rounds[0]:
            call = statistics.median(r[name][0] for r in rounds) * 1000
            frame = statistics.median(r[name][1] for r in rounds) * 1000
            print(f"| {tasks} | {name} | {call:.1f} | {frame:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
