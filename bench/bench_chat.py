"""What the control plane pays to re-summarise a registered chat after one post.

    .venv/bin/python bench/bench_chat.py [--messages 500 2000 4600] [--rounds 50]

For each size a real chat file (nbs-chat format, ~100-byte messages) in a temp folder; then,
``--rounds`` times: post one message (``chat_io.post_message``, NBS's lock-and-replace), and
summarise it the way the plane did before (``summarise``: decode every message) and the way it
does now (``summarise_from`` with the last read: decode the appended line). Reported: time per
summary and the bytes allocated at the peak of one (tracemalloc, in a separate pass).

Then the dashboard's chat view (``ChatView`` in a headless app, 160x50) after each post: read
and draw the way it did before (``read_chat``: decode every message, keep the whole chat; clear
the log and write the newest 500 again) and the way it does now (``read_chat_tail`` from what it
shows: decode the appended line, write it to the log).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from textual.app import App, ComposeResult

from nbs_tui.core.control.chat import render_chat, tail_of
from nbs_tui.files.chat_io import post_message, read_chat, read_chat_tail, summarise, summarise_from
from nbs_tui.widgets.chat_view import SHOWN_MESSAGES, ChatView


def peak_kb(call: Callable[[], object]) -> float:
    tracemalloc.start()
    call()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1024


class ViewApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ChatView()


def whole(view: ChatView, path: str) -> None:
    """The view's load before: the whole chat decoded, the log cleared and drawn again."""
    view._show(path, tail_of(read_chat(path), SHOWN_MESSAGES), {}, "")


def appended(view: ChatView, path: str) -> None:
    """The view's load now: from what it shows, the appended message written to the log."""
    before = view.chat
    tail, grew = read_chat_tail(path, SHOWN_MESSAGES, before)
    view._show(path, tail, {}, "", before, grew)


async def view_costs(chat: Path, rounds: int) -> tuple[float, float, float, float]:
    """ms per load and peak KB of one, before and now, each after a post."""
    path = str(chat)
    app = ViewApp()
    async with app.run_test(size=(160, 50)) as pilot:
        view = app.query_one(ChatView)
        view.path = path
        costs = []
        for load in (whole, appended):
            load(view, path)  # what it shows was read this way (the first append reads afresh)
            await pilot.pause()
            spent = 0.0
            for i in range(rounds):
                post_message(chat, "bench", f"view {i}")
                started = time.perf_counter()
                load(view, path)
                spent += time.perf_counter() - started
                await pilot.pause()
            post_message(chat, "bench", "one more")
            costs += [1000 * spent / rounds, peak_kb(partial(load, view, path))]
            await pilot.pause()
    return costs[0], costs[1], costs[2], costs[3]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, nargs="*", default=[500, 2000, 4600])
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    print("| messages | chat size | full: ms / peak KB | from the last read: ms / peak KB | speed-up |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.messages:
            chat = Path(tmp) / f"c{n}.chat"
            text = "a message of about a hundred bytes, as agents post them on a team chat; #"
            chat.write_bytes(render_chat([("agent", 1_700_000_000 + i, f"{text}{i}") for i in range(n)], "agent", 1e9))
            _, last = summarise_from(chat, None)
            full = incremental = 0.0
            for i in range(args.rounds):
                post_message(chat, "bench", f"post {i}")
                started = time.perf_counter()
                slow = summarise(chat)
                full += time.perf_counter() - started
                started = time.perf_counter()
                fast, last = summarise_from(chat, last)
                incremental += time.perf_counter() - started
                assert fast == slow
            post_message(chat, "bench", "one more")
            full_kb = peak_kb(partial(summarise, chat))
            fast_kb = peak_kb(partial(summarise_from, chat, last))
            full_ms, fast_ms = 1000 * full / args.rounds, 1000 * incremental / args.rounds
            print(f"| {n} | {chat.stat().st_size // 1024} KB | {full_ms:.2f} / {full_kb:.0f} | "
                  f"{fast_ms:.2f} / {fast_kb:.0f} | {full_ms / fast_ms:.0f}x |")
        print()
        print("| messages | chat view before: ms / peak KB | chat view now: ms / peak KB | speed-up |")
        print("|---|---|---|---|")
        for n in args.messages:
            chat = Path(tmp) / f"c{n}.chat"
            before_ms, before_kb, now_ms, now_kb = asyncio.run(view_costs(chat, args.rounds))
            print(f"| {n} | {before_ms:.2f} / {before_kb:.0f} | {now_ms:.2f} / {now_kb:.0f} | {before_ms / now_ms:.0f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
