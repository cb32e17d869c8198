"""Freed memory goes back to the system (nbs_tui.housekeeping.memory): real allocations, real RSS."""

from __future__ import annotations

import platform
import subprocess
import sys
import threading
import time

from nbs_tui.housekeeping.memory import MemoryTrimmer, can_trim, trim_memory


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_glibc_can_trim() -> None:
    # CI and every Linux this ships on use glibc: the trimmer must not be silently off there
    assert platform.libc_ver()[0] == "glibc"
    assert can_trim()


def test_a_trim_returns_pages_a_worker_freed_between_survivors() -> None:
    # What the soak saw: a worker thread's arena keeps freed chunks resident while a few
    # survivors pin it; nothing but a trim gives those pages back.
    kept: list[bytes] = []

    def work() -> None:
        blocks = [b"x" * 2000 + bytes([i % 256]) for i in range(20_000)]  # ~40 MB, touched
        kept.extend(blocks[::32])  # one survivor every 64 KB
        del blocks

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    before = rss_mb()
    assert trim_memory()
    after = rss_mb()
    assert before - after > 15, (before, after)
    assert len(kept) == 625


def test_one_trimmer_runs_per_process_and_stops() -> None:
    first, second = MemoryTrimmer(interval=0.05), MemoryTrimmer(interval=0.05)
    first.start()
    second.start()  # a second runtime in the process (a host's) leaves the work to the first
    try:
        deadline = time.monotonic() + 5
        while first.trims < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert first.trims >= 2
        assert first.running() and not second.running()
    finally:
        first.stop()
        second.stop()
    assert not first.running()
    third = MemoryTrimmer(interval=0.05)
    third.start()  # once the first stopped, another may run
    try:
        assert third.running()
    finally:
        third.stop()


MMAPPED = """
import ctypes, sys
from nbs_tui.housekeeping.memory import MemoryTrimmer


class Info(ctypes.Structure):  # glibc's struct mallinfo2
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
if sys.argv[1] == "runtime":
    trimmer = MemoryTrimmer(interval=3600)
    trimmer.start()  # what every runtime does first
big = b"x" * (1 << 20)
del big  # a freed 1 MiB mapping: glibc's moving threshold rises to 1 MiB
before = libc.mallinfo2().hblks
kept = b"y" * (300 * 1024)
print(libc.mallinfo2().hblks - before)
"""


def test_a_runtime_keeps_large_buffers_out_of_the_arenas() -> None:
    # in fresh processes: whether a 300 KB buffer gets a mapping of its own after a 1 MiB one
    # was freed (glibc alone: no, it now comes from an arena; with a runtime's trimmer: yes)
    def mapped(mode: str) -> int:
        done = subprocess.run([sys.executable, "-c", MMAPPED, mode], capture_output=True, text=True, check=True)
        return int(done.stdout.strip())

    assert mapped("glibc") == 0
    assert mapped("runtime") == 1
