"""Hand freed memory back to the system: glibc's ``malloc_trim`` once a minute, and large
buffers always in their own mappings.

Why: the workers free nearly everything they allocate within a tick (captures, parsed chats,
transcript lines), but glibc keeps a freed chunk resident unless it sits at the top of its
arena, and each worker thread allocates from an arena of its own. Over an hour that showed as
growth nothing held (`bench/soak.py`: the service +50 %, the Python heap flat under
tracemalloc); one ``malloc_trim(0)`` returned 5 of a 39 MB service's pages after 8 minutes.
It walks every arena and gives back each whole free page; it costs about a millisecond.

glibc also raises its mmap threshold to the size of any large block freed (up to 32 MiB): after
one 250 KB chat or capture was read, every buffer below that size came from the arenas and
fragmented them. `pin_mmap_threshold` fixes it at glibc's default 128 KiB (as
``MALLOC_MMAP_THRESHOLD_=131072`` would): an A/B of two 30-agent ``--headless`` runs side by
side, trimming both, grew 34.2 -> 36.2 MB (+5.8 %) from minute 5 to 26 with the moving
threshold and 32.2 -> 33.4 MB (+3.7 %, flat from minute 14) with it fixed.
Where the C library has neither (musl, macOS) this does nothing.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

TRIM_EVERY = 60.0
"""Seconds between trims: growth of a few MB a minute at most is what it catches."""


def _find_malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_malloc_trim = _find_malloc_trim()

MMAP_THRESHOLD = 128 * 1024
"""glibc's default: blocks this size or larger get a mapping of their own, unmapped on free."""
_M_MMAP_THRESHOLD = -3
"""mallopt's parameter number (malloc.h)."""


def pin_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold (which also stops it moving); True where it took effect."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))


def can_trim() -> bool:
    """True where the C library can hand free pages back (glibc)."""
    return _malloc_trim is not None


def trim_memory() -> bool:
    """Give every whole free page of the C heap back to the system; True if any was."""
    if _malloc_trim is None:
        return False
    return bool(_malloc_trim(0))


_running_lock = threading.Lock()
_running: MemoryTrimmer | None = None
"""The one trimmer whose thread runs: a process with several runtimes (one a host) trims once."""


class MemoryTrimmer:
    """Calls `trim_memory` every ``interval`` seconds on a daemon thread until `stop`; while
    another trimmer of the process runs, `start` leaves the work to it."""

    def __init__(self, interval: float = TRIM_EVERY) -> None:
        self.interval = interval
        self.trims = 0
        """How many trims ran (for tests and the curious)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        global _running
        with _running_lock:
            if not can_trim() or self._thread is not None or _running is not None:
                return
            _running = self
            pin_mmap_threshold()  # once a process: the first runtime's trimmer
            self._thread = threading.Thread(target=self._run, name="nbs-memory-trim", daemon=True)
            self._thread.start()

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        global _running
        self._stop.set()
        with _running_lock:
            if _running is self:
                _running = None
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(2.0)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                trim_memory()
            except Exception:  # never worth a worker: memory is only kept a little longer
                log.exception("malloc_trim failed")
            self.trims += 1
