"""What a project watcher costs while nothing changes, per watchfiles ``step``.

    .venv/bin/python bench/bench_watch_idle.py                  # steps 20 and 50 ms, 10 s each
    .venv/bin/python bench/bench_watch_idle.py --steps 20 50 100 --projects 10

The control plane watches each project's ``.nbs/`` with `watchfiles.watch` on a thread of its
own (`nbs_tui.files.control_watch.ProjectWatcher`, with the same arguments as here). watchfiles
sleeps ``step`` ms at a time and then takes the GIL to look for changes and the stop event, so
an idle watcher still wakes 1000/step times a second. For each step: ``--projects`` watchers on
empty folders, the process's CPU over ``--seconds`` (after a second to start), % of one core.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time

import watchfiles


def idle_cost(step_ms: int, projects: int, seconds: float) -> float:
    stop = threading.Event()

    def watch(folder: str) -> None:
        for _changes in watchfiles.watch(
            folder, watch_filter=None, debounce=80, step=step_ms, stop_event=stop,
            rust_timeout=500, yield_on_timeout=True, raise_interrupt=False,
        ):
            if stop.is_set():
                return

    threads = [threading.Thread(target=watch, args=(tempfile.mkdtemp(),), daemon=True) for _ in range(projects)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    before, started = time.process_time(), time.monotonic()
    time.sleep(seconds)
    used = time.process_time() - before
    elapsed = time.monotonic() - started
    stop.set()
    for thread in threads:
        thread.join(2)
    return 100 * used / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--projects", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    print(f"| step | {args.projects} idle watcher(s), % of one core |")
    print("|---|---|")
    for step in args.steps:
        print(f"| {step} ms | {idle_cost(step, args.projects, args.seconds):.2f} % |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
