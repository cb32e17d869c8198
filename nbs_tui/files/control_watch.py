"""One watcher thread per project: ``watchfiles.watch`` on its ``.nbs/``, poking the plane.

The watcher never reads a control file itself: on a change it calls ``on_change(root)`` and the
plane thread does the work (so all state stays on one thread). Debounce is 80 ms instead of
watchfiles' 1.6 s, which is too slow for a live panel. When the watch dies (the folder went
away, an inotify limit) ``on_error(root, message)`` is called once and the plane's slow rescan
takes over until it starts a new watcher.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable


def identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of a folder, to notice a ``.nbs/`` that was replaced; None if missing."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


WATCH_STEP_MS = 200
"""How often watchfiles looks for changes (and for its stop event). It wakes and takes the GIL
that often even when nothing changes: one project cost 0.10-0.13 % of a core at 50 ms and
0.03 % at 250 (`bench/bench_watch_idle.py`), in the dashboard and the service alike. A change
is yielded once a step has passed without more, so an inbox line is seen within two steps:
0.2-0.4 s, where the nbs-claude loop read the inbox once a second."""


class ProjectWatcher:
    """Watches one project's ``.nbs/`` on a daemon thread until :meth:`stop`."""

    def __init__(
        self,
        root: str,
        nbs: str,
        on_change: Callable[[str], None],
        on_error: Callable[[str, str], None],
        *,
        debounce_ms: int = 80,
        step_ms: int = WATCH_STEP_MS,
    ) -> None:
        self.root = root
        self.nbs = nbs
        self.identity = identity(nbs)
        """The folder watched, as (device, inode) when the watcher started."""
        self._on_change = on_change
        self._on_error = on_error
        self._debounce_ms = debounce_ms
        self._step_ms = step_ms
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"nbs-watch {root}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end (it notices within watchfiles' 500 ms timeout)."""
        self._stop.set()

    def join(self, timeout: float) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)

    def alive(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def _run(self) -> None:
        import watchfiles  # the service may use watchfiles; the core may not

        first = True
        try:
            for changes in watchfiles.watch(
                self.nbs,
                watch_filter=None,
                debounce=self._debounce_ms,
                step=self._step_ms,  # see WATCH_STEP_MS
                stop_event=self._stop,
                rust_timeout=500,
                yield_on_timeout=True,
                raise_interrupt=False,
                ignore_permission_denied=True,
            ):
                if self._stop.is_set():
                    return
                # The first yield (a change, or the empty set after rust_timeout) proves the
                # watch is in place: refresh once then to catch what changed while it started.
                if changes or first:
                    first = False
                    self._on_change(self.root)
        except Exception as error:  # the slow rescan restarts a dead watcher
            if not self._stop.is_set():
                self._on_error(self.root, f"watching {self.nbs} stopped: {error}; falling back to rescans")
