"""Measure the control plane's inbox path: parse, read forward, and a full replay at launch.

Run: .venv/bin/python bench/bench_control.py [--lines 100000] [--repeat 5]

Prints the median wall time of:
- reader:   ForwardReader reading every line of a fresh inbox (bytes -> decoded lines)
- parse:    parse_line + apply (one by one) on an in-memory registry for every line
- replay:   ForwardReader + Replay + one atomic registry write (what a launch does per inbox)
- plane:    a ControlPlane started on a project with that inbox, until its first pass is done
            (includes seeding, replay, history and snapshot events; watchers off)
- live:     an appended line until it is in the registry file, through a running plane with
            watchfiles (median of 20 appends)
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from nbs_tui.config import Settings
from nbs_tui.core.control.control_commands import Replay, process_line
from nbs_tui.core.control.inbox import InboxLine
from nbs_tui.core.control.registry import Registry
from nbs_tui.files.atomic import write_atomic
from nbs_tui.files.control_plane import ControlPlane, RegistryChanged
from nbs_tui.files.inbox_reader import ForwardReader


def make_inbox(root: Path, lines: int) -> Path:
    nbs = root / ".nbs"
    (nbs / "chat").mkdir(parents=True, exist_ok=True)
    verbs = [
        "register-chat",
        "register-chat",
        "unregister-chat",
        "register-bus",
        "# comment",
        "set-poll-interval",
    ]
    body = []
    for i in range(lines):
        verb = verbs[i % len(verbs)]
        if verb == "set-poll-interval":
            body.append(f"{verb} {1 + i % 60}\n")
        elif verb.startswith("#"):
            body.append(f"# note {i}\n")
        else:
            body.append(f"{verb} .nbs/chat/c{i % 200}.chat\n")
    inbox = nbs / "control-inbox"
    inbox.write_text("".join(body))
    return inbox


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median wall time and median CPU time of this process (all threads), in seconds.

    On a shared machine the wall time includes waiting for a CPU; the CPU time does not."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "proj"
        inbox = make_inbox(root, args.lines)
        size = inbox.stat().st_size
        print(f"inbox: {args.lines:,} lines, {size / 1e6:.1f} MB")

        def read_all() -> None:
            reader = ForwardReader(inbox)
            while reader.read_new(limit=4 << 20):
                pass
            assert reader.lines_read == args.lines

        texts = [
            item.text for item in ForwardReader(inbox).read_new() if isinstance(item, InboxLine)
        ]

        def parse_all() -> None:
            registry = Registry(root)
            for text in texts:
                process_line(registry, text)

        def replay_all() -> None:
            reader = ForwardReader(inbox)
            replay = Replay(Registry(root))
            while True:
                items = reader.read_new(limit=4 << 20)
                if not items:
                    break
                for item in items:
                    if isinstance(item, InboxLine):
                        replay.feed(item.text)
            write_atomic(root / ".nbs" / "control-registry", replay.finish().to_text())

        def plane_first_pass() -> None:
            (root / ".nbs" / "control-registry").unlink(missing_ok=True)
            plane = ControlPlane(
                Settings(projects=(root,)), None, watch=False, history_limit=20_000
            )
            plane.start()
            assert plane.flush(timeout=60)
            assert plane.snapshot().history_total == args.lines
            plane.stop()

        for name, fn in (
            ("reader", read_all),
            ("parse", parse_all),
            ("replay", replay_all),
            ("plane", plane_first_pass),
        ):
            wall, cpu = timed(fn, args.repeat)
            print(
                f"{name:>7}: wall {wall * 1000:7.1f} ms  cpu {cpu * 1000:7.1f} ms"
                f"  ({args.lines / cpu / 1e3:,.0f} k lines per cpu-second)"
            )

        # live latency: append -> registry file has it, via watchfiles
        changed = threading.Event()

        def listener(event: object) -> None:
            if isinstance(event, RegistryChanged):
                changed.set()

        small = Path(folder) / "live"
        (small / ".nbs" / "chat").mkdir(parents=True)
        plane = ControlPlane(Settings(projects=(small,)), listener, rescan_interval=60.0)
        plane.start()
        assert plane.flush()
        time.sleep(1.0)  # let the watcher settle (its first yield comes after rust_timeout)
        latencies = []
        registry = small / ".nbs" / "control-registry"
        for i in range(20):
            changed.clear()
            start = time.perf_counter()
            with open(small / ".nbs" / "control-inbox", "a") as handle:
                handle.write(f"register-hub h{i}\n")
            while f"hub:h{i}\n" not in registry.read_text():
                if time.perf_counter() - start > 5:
                    raise SystemExit("live update took more than 5 s")
                time.sleep(0.001)
            latencies.append(time.perf_counter() - start)
            time.sleep(0.05)
        plane.stop()
        print(
            f"   live: median {statistics.median(latencies) * 1000:.0f} ms, "
            f"max {max(latencies) * 1000:.0f} ms (append -> registry file, 20 appends)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
