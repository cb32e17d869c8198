"""When the dashboard's frame runs: one scheduler, one way a frame starts, one rate limit.

The frame repaints the changed rows of the visible widgets whose panes changed (the mirror,
the grid's thumbnails): ``draw(panes, whole)``, which is `NbsApp._frame`. Screen changes come
from the fleet's threads, each pane's at most ~60 times a second, as "these panes changed"
(`FrameScheduler.changed`, thread-safe); the UI asks for every visible row to be drawn again
when what is shown changes (`FrameScheduler.request`). The scheduler

- **sleeps while nothing changes**: it has no timer of its own. After a frame it looks once
  more, one `FrameScheduler.gap` later (the beat: while the fleet is busy, the changes that came
  meanwhile are drawn then, with no wake-up of the loop from the fleet's threads); if nothing
  came, it sleeps: nothing of it is scheduled on the loop, and a frame with nothing to draw
  never runs;
- **runs the mirrored pane's frame at once**: a change of `FrameScheduler.mirrored` starts a
  frame as soon as the loop is free, however soon after the previous one. The fleet already
  paces its reports (at most ``max_rate`` a second); a second limit in series held a busy
  agent's lines back up to a whole frame (they reached the screen 30-45 ms late);
- **rate-limits everything else once**: a frame for other panes, or for a request, starts no
  sooner than `FrameScheduler.gap` after the previous frame started (30 frames a second), and
  draws whatever else changed meanwhile.

A frame always starts the same way, `FrameScheduler._run` on the UI loop, and always takes
every pending change at once. From the fleet's threads, a change wakes the loop (one
``call_soon_threadsafe``: a Textual message instead cost ~90 µs of a ~0.7 ms frame, ~20 times a
second for a busy mirrored agent) only when it is the mirrored pane's, or when nothing is
scheduled (asleep); otherwise it only joins the set the coming frame takes. An error in a
frame ends the app as one in a message handler does (``on_error``).

Imports no Textual: the app hands it its loop and context at mount (`FrameScheduler.start`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable, Set

from nbs_tui.core.fleet.model import PaneId

FRAME_SECONDS = 1 / 30
"""The shortest gap between the starts of two frames, but for a change of the mirrored pane."""

Draw = Callable[[Set[PaneId], bool], None]
"""``draw(panes, whole)``: repaint what shows these panes; with ``whole``, every visible row."""


class FrameScheduler:
    """Decides when the dashboard's frame runs (see the module docstring); owned by the app."""

    def __init__(self, draw: Draw, *, gap: float = FRAME_SECONDS) -> None:
        self._draw = draw
        self.gap = gap
        """The rate limit: seconds from one frame's start to the next's (the mirrored pane's aside)."""
        self.mirrored: PaneId | None = None
        """The pane the mirror shows, while the dashboard view is up: its changes run a frame at
        once. Set on the UI thread, read on the fleet's (one attribute: no lock needed)."""
        self.frames_run = 0
        """Frames run so far (the tests and the log read it)."""
        self._lock = threading.Lock()
        # under the lock: what is pending, and what is already on its way to the loop
        self._dirty: set[PaneId] = set()
        self._whole = False
        self._urgent = False
        self._woken = False
        """A wake-up is posted to the loop and has not run yet: no second one is needed."""
        self._armed = False
        """A frame is scheduled on the loop: it takes whatever changes before it runs."""
        self._stopped = False
        # the UI thread's own
        self._loop: asyncio.AbstractEventLoop | None = None
        self._context: contextvars.Context | None = None
        self._on_error: Callable[[Exception], None] = _raise
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._last = float("-inf")

    # -- the app's side (UI thread) --------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop, context: contextvars.Context, on_error: Callable[[Exception], None]) -> None:
        """Frames run on ``loop``, in ``context`` (Textual's active app is in it); what changed
        before now is drawn by the first."""
        self._loop, self._context, self._on_error = loop, context, on_error
        self._plan(run_now=False)

    def stop(self) -> None:
        """No frame from now on (the app is shutting down)."""
        with self._lock:
            self._stopped = True
            self._armed = False
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def request(self) -> None:
        """Draw every visible row again at the next frame (what is shown changed). Never runs the
        frame inside the caller: it is scheduled, within the rate limit."""
        with self._lock:
            self._whole = True
        self._plan(run_now=False)

    @property
    def asleep(self) -> bool:
        """Nothing is scheduled: no frame runs until something changes or is requested."""
        return self._handle is None and not self._woken

    # -- the fleet's side (any thread) -----------------------------------------------------------

    def changed(self, pane_ids: Set[PaneId]) -> None:
        """These panes' screens changed (thread-safe). Wakes the loop only when no frame is
        already coming that would draw them as soon as they need."""
        with self._lock:
            self._dirty |= pane_ids
            urgent = self.mirrored in pane_ids
            if urgent:
                self._urgent = True
            if self._woken or self._stopped or self._loop is None or (self._armed and not urgent):
                return
            self._woken = True
            loop, context = self._loop, self._context
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: the app is gone
            loop.call_soon_threadsafe(self._wake, context=context)

    # -- on the loop -------------------------------------------------------------------------------

    def _wake(self) -> None:
        with self._lock:
            self._woken = False
        try:
            self._plan(run_now=True)
        except Exception as error:  # as a message handler's would: the app reports it and exits
            self._on_error(error)

    def _fire(self) -> None:
        self._handle = None
        try:
            self._run()
        except Exception as error:
            self._on_error(error)

    def _plan(self, run_now: bool) -> None:
        """Run the frame now (``run_now``: only from a loop callback of ours) or schedule it for
        when it is due; nothing if nothing is pending."""
        loop = self._loop
        if loop is None or self._stopped:
            return
        with self._lock:
            pending = bool(self._dirty) or self._whole
            urgent = self._urgent
        if not pending:
            return
        now = loop.time()
        due = now if urgent else max(now, self._last + self.gap)
        if run_now and due <= now:
            self._run()
            return
        if self._handle is not None:
            if self._due <= due:
                return  # the frame already scheduled comes soon enough
            self._handle.cancel()
        self._due = due
        self._handle = loop.call_at(due, self._fire, context=self._context)
        with self._lock:
            self._armed = True

    def _run(self) -> None:
        """The one way a frame starts: take everything pending and draw it; then keep the beat
        (look again one gap later), or sleep if nothing was pending."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        loop = self._loop
        with self._lock:
            dirty, self._dirty = self._dirty, set()
            whole, self._whole = self._whole, False
            self._urgent = False
            pending = bool(dirty or whole)
            self._armed = pending and loop is not None and not self._stopped
        if not pending or loop is None:
            return  # nothing came since the last frame (or it was drawn by one): asleep
        self._last = loop.time()
        self.frames_run += 1
        if self._armed:  # before drawing: what comes meanwhile waits for the beat, no wake-up
            self._due = self._last + self.gap
            self._handle = loop.call_at(self._due, self._fire, context=self._context)
        self._draw(dirty, whole)


def _raise(error: Exception) -> None:
    raise error
