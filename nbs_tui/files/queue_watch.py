"""Every dashboard shows the work queue: one thread reads the server's queue file again whenever
it changes (``watchfiles`` on its folder, as the control plane watches ``.nbs/``) and hands the
listener a `QueueSnapshot`.

Any process may append (a dashboard adding, `nbs-tui queue add`, the lease holder's feeder), so a
viewer learns of a change from the file, not from the process that made it. The thread owns its
`QueueStore` (a store is not shared between threads) and reads only what was appended since.
Between changes it looks again every `LOOK_SECONDS` anyway (a file created after the watch began,
a watch that cannot see a network folder): the look is one ``fstat`` when nothing grew. If the
watch itself dies (an inotify limit), it says so once and goes on with those looks alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from nbs_tui.core.queue.task_states import QueueState, Task
from nbs_tui.files.queue_store import QueueStore

DEBOUNCE_MS = 80
"""As the control plane's watch: watchfiles' default 1.6 s is too slow for a live view."""
STEP_MS = 200
LOOK_SECONDS = 1.0
"""How often the file is looked at with no change seen (watchfiles' timeout; the fallback's pace)."""


@dataclass(frozen=True, slots=True)
class QueueSnapshot:
    """The queue as its file had it at one read: values only, safe to hand to the UI thread."""

    tasks: tuple[Task, ...] = ()
    """Every task, in the order they were added."""
    paused: bool = False
    records: int = 0
    """How many records were read (a change of the queue is a change of this)."""

    @classmethod
    def of(cls, queue: QueueState) -> QueueSnapshot:
        return cls(tuple(queue), queue.paused, queue.records)


class QueueWatch:
    """Reads one queue file on a daemon thread until `stop` (module docstring)."""

    def __init__(
        self, store: QueueStore, listener: Callable[[QueueSnapshot], None], problem: Callable[[str], None],
        *, look_seconds: float = LOOK_SECONDS,
    ) -> None:  # fmt: skip
        self.store = store
        self._listener = listener
        self._problem = problem
        self._look = look_seconds
        self._stop = threading.Event()
        self._records = -1
        self._thread = threading.Thread(target=self._run, name="nbs-queue-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end (it notices within `LOOK_SECONDS`)."""
        self._stop.set()

    def join(self, timeout: float) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _read(self) -> None:
        queue = self.store.refresh()
        if queue.records != self._records:
            self._records = queue.records
            self._listener(QueueSnapshot.of(queue))

    def _run(self) -> None:
        self._read()
        try:
            self._watch()
        except Exception as error:  # an inotify limit, the folder gone: the looks go on
            if not self._stop.is_set():
                self._problem(f"watching {self.store.path} stopped: {error}; it is read every {self._look:g} s")
        while not self._stop.wait(self._look):
            self._read()

    def _watch(self) -> None:
        import watchfiles  # the ports may use watchfiles; the core may not

        folder = self.store.path.parent
        folder.mkdir(parents=True, exist_ok=True)
        name = self.store.path.name
        for _changes in watchfiles.watch(
            folder,
            watch_filter=lambda _change, path: path.endswith(name),  # the log and others change there too
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            stop_event=self._stop,
            rust_timeout=int(self._look * 1000),
            yield_on_timeout=True,
            raise_interrupt=False,
            ignore_permission_denied=True,
            recursive=False,
        ):
            if self._stop.is_set():
                return
            self._read()
