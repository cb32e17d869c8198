"""The frame scheduler on a real event loop with real threads (no Textual): when frames run.

What the dashboard counts on: a frame only for something to draw, nothing scheduled once a
beat passed with no change, the mirrored pane's change at once, every other change within the
rate limit and with no wake-up while frames run, every change drawn by the next frame, and an
error in a frame reported, not lost.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import threading
from collections.abc import Callable, Set

import pytest

from nbs_tui.dashboard.frames import FrameScheduler

LONG = 3600.0
"""A rate limit no test outlives: a frame held back by it cannot run during the test."""


class Drawn:
    def __init__(self, fail: bool = False) -> None:
        self.frames: list[tuple[frozenset[str], bool]] = []
        self.fail = fail

    def __call__(self, panes: Set[str], whole: bool) -> None:
        self.frames.append((frozenset(panes), whole))
        if self.fail:
            raise RuntimeError("the frame broke")


def started(draw: Drawn, gap: float = LONG, errors: list[Exception] | None = None) -> FrameScheduler:
    frames = FrameScheduler(draw, gap=gap)
    frames.start(asyncio.get_running_loop(), contextvars.copy_context(), (errors if errors is not None else []).append)
    return frames


async def until(condition: Callable[[], object], what: str, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.001)


async def settle() -> None:
    """Let every callback already due on the loop run (a wake-up takes one turn, a frame due
    now one more)."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_nothing_is_scheduled_until_something_changes_and_then_one_frame_draws_it() -> None:
    draw = Drawn()
    frames = started(draw, gap=0.01)
    await settle()
    assert frames.asleep and draw.frames == [] and frames.frames_run == 0
    await asyncio.to_thread(frames.changed, frozenset({"%1"}))
    await until(lambda: draw.frames, "the frame")
    assert not frames.asleep, "a beat later it looks again"
    await until(lambda: frames.asleep, "asleep once the beat found nothing")
    assert draw.frames == [(frozenset({"%1"}), False)]
    assert frames.frames_run == 1


async def test_changes_before_the_loop_gets_to_the_frame_are_drawn_by_that_one_frame() -> None:
    draw = Drawn()
    frames = started(draw)
    for pane in ("%1", "%2", "%3"):  # on the loop's own thread: the wake-up runs after them
        frames.changed(frozenset({pane}))
    await until(lambda: draw.frames, "the frame")
    await settle()
    assert draw.frames == [(frozenset({"%1", "%2", "%3"}), False)]


async def test_a_change_soon_after_a_frame_waits_for_the_rate_limit_but_the_mirrored_panes_does_not() -> None:
    draw = Drawn()
    frames = started(draw, gap=LONG)
    frames.mirrored = "%9"
    frames.changed(frozenset({"%1"}))
    await until(lambda: draw.frames, "the first frame")  # the first is due at once
    frames.changed(frozenset({"%2"}))
    await settle()
    assert len(draw.frames) == 1, "another pane's change ran a frame inside the rate limit"
    assert not frames.asleep, "its frame is scheduled"
    await asyncio.to_thread(frames.changed, frozenset({"%9"}))
    await until(lambda: len(draw.frames) == 2, "the mirrored pane's frame")
    assert draw.frames[1] == (frozenset({"%2", "%9"}), False), "it draws what waited too"
    await settle()
    assert len(draw.frames) == 2, "what waited was drawn once"
    for _ in range(3):  # however soon after the last one
        ran = len(draw.frames)
        await asyncio.to_thread(frames.changed, frozenset({"%9"}))
        await until(lambda: len(draw.frames) > ran, "a frame for the mirrored pane")  # noqa: B023


async def test_a_frame_runs_once_the_rate_limit_is_over() -> None:
    draw = Drawn()
    frames = started(draw, gap=0.05)
    frames.changed(frozenset({"%1"}))
    await until(lambda: draw.frames, "the first frame")
    frames.changed(frozenset({"%2"}))
    await until(lambda: len(draw.frames) == 2, "the next frame, after the gap")
    assert draw.frames[1] == (frozenset({"%2"}), False)
    await until(lambda: frames.asleep, "asleep")
    assert len(draw.frames) == 2


async def test_a_request_is_drawn_whole_by_a_later_frame_never_inside_the_caller() -> None:
    draw = Drawn()
    frames = started(draw, gap=0.0)
    frames.request()
    assert draw.frames == [], "the frame ran inside the caller"
    frames.changed(frozenset({"%1"}))
    await until(lambda: draw.frames, "the frame")
    await settle()
    assert draw.frames == [(frozenset({"%1"}), True)]


async def test_changes_before_start_are_drawn_by_the_first_frame() -> None:
    draw = Drawn()
    frames = FrameScheduler(draw, gap=LONG)
    frames.changed(frozenset({"%1"}))  # before the app is mounted: nothing to wake yet
    await settle()
    assert draw.frames == []
    frames.start(asyncio.get_running_loop(), contextvars.copy_context(), list[Exception]().append)
    await until(lambda: draw.frames, "the first frame")
    assert draw.frames == [(frozenset({"%1"}), False)]


async def test_a_frame_that_raises_is_reported_and_the_next_change_still_runs_one() -> None:
    errors: list[Exception] = []
    draw = Drawn(fail=True)
    frames = started(draw, gap=0.0, errors=errors)
    frames.mirrored = "%1"
    await asyncio.to_thread(frames.changed, frozenset({"%1"}))  # through the wake-up
    await until(lambda: errors, "the error reported")
    frames.changed(frozenset({"%2"}))  # through a scheduled frame
    await until(lambda: len(errors) == 2, "the second error reported")
    assert [str(e) for e in errors] == ["the frame broke"] * 2
    assert len(draw.frames) == 2


async def test_no_frame_after_stop() -> None:
    draw = Drawn()
    frames = started(draw, gap=LONG)
    frames.changed(frozenset({"%1"}))
    await until(lambda: draw.frames, "the first frame")
    frames.changed(frozenset({"%2"}))  # scheduled for after the gap
    frames.stop()
    await asyncio.to_thread(frames.changed, frozenset({"%3"}))
    frames.request()
    await settle()
    assert len(draw.frames) == 1 and frames.asleep


def test_a_change_after_the_loop_closed_is_ignored() -> None:
    draw = Drawn()
    loop = asyncio.new_event_loop()
    frames = FrameScheduler(draw)
    frames.start(loop, contextvars.copy_context(), list[Exception]().append)
    loop.close()
    frames.changed(frozenset({"%1"}))  # the app is gone: no error in the fleet's thread
    assert draw.frames == []


async def test_while_frames_run_a_change_wakes_the_loop_only_for_the_mirrored_pane() -> None:
    """The beat: after a frame the next is scheduled, so the fleet's threads need not wake the
    loop for other panes (a wake-up per frame cost the busy dashboard ~0.2 % of a core)."""
    draw = Drawn()
    frames = started(draw, gap=LONG)
    frames.mirrored = "%9"
    loop = asyncio.get_running_loop()
    wakes: list[object] = []
    call_soon_threadsafe = loop.call_soon_threadsafe

    def counted(callback: Callable[..., object], *args: object, context: contextvars.Context | None = None) -> asyncio.Handle:
        if getattr(callback, "__name__", "") == "_wake":  # (to_thread's own results come this way too)
            wakes.append(callback)
        return call_soon_threadsafe(callback, *args, context=context)

    loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
    try:
        await asyncio.to_thread(frames.changed, frozenset({"%1"}))  # asleep: wakes the loop
        await until(lambda: draw.frames, "the first frame")
        for pane in ("%2", "%3", "%4"):
            await asyncio.to_thread(frames.changed, frozenset({pane}))
        assert len(wakes) == 1, "another pane's change woke the loop while a frame was scheduled"
        await asyncio.to_thread(frames.changed, frozenset({"%9"}))
        await until(lambda: len(draw.frames) == 2, "the mirrored pane's frame")
        assert len(wakes) == 2
        assert draw.frames[1] == (frozenset({"%2", "%3", "%4", "%9"}), False)
    finally:
        loop.call_soon_threadsafe = call_soon_threadsafe  # type: ignore[method-assign]


async def test_every_change_from_many_threads_is_drawn_and_no_frame_runs_for_nothing() -> None:
    draw = Drawn()
    frames = started(draw, gap=0.002)
    frames.mirrored = "%0"
    sent: set[str] = set()
    lock = threading.Lock()
    calls = 0

    def feeder(seed: int) -> None:
        nonlocal calls
        rng = random.Random(seed)
        for _ in range(300):
            panes = frozenset(f"%{rng.randrange(20)}" for _ in range(rng.randrange(1, 4)))
            with lock:
                sent.update(panes)
                calls += 1
            frames.changed(panes)

    await asyncio.gather(*(asyncio.to_thread(feeder, seed) for seed in range(4)))
    await until(lambda: frames.asleep and set().union(*(p for p, _ in draw.frames)) >= sent, "every change drawn")
    assert all(panes for panes, _whole in draw.frames), "a frame ran with nothing to draw"
    assert len(draw.frames) <= calls
    assert frames.frames_run == len(draw.frames)


@pytest.mark.parametrize("gap", [0.0, 0.01])
async def test_asleep_means_nothing_of_it_is_on_the_loop(gap: float) -> None:
    """`asleep` is what the app's tests wait on: while it holds, no callback of the scheduler
    is pending, so no frame can start without a new change or request."""
    draw = Drawn()
    frames = started(draw, gap=gap)
    frames.changed(frozenset({"%1"}))
    await until(lambda: frames.asleep, "asleep")
    ran = len(draw.frames)
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(draw.frames) == ran and frames.asleep
