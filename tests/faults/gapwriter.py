"""A pane's writer that records its own longest pause: run it inside a tmux pane.

    python gapwriter.py REPORT [BYTES_PER_SECOND]

Every 10 ms it writes one line (a timestamp padded to the rate) to its terminal. A tmux that
stops reading the pane blocks the write once the pty's buffer is full, so two figures are kept:
the longest single write (time blocked on the terminal: tmux's doing) and the longest gap
between the ends of two writes (blocked, or merely not scheduled on a busy machine). Every
100 ms REPORT is rewritten (atomic rename) as ``<max write s> <max gap s> <lines>``; deleting
REPORT resets both maxima.
"""

from __future__ import annotations

import os
import sys
import time


def main() -> None:
    report = sys.argv[1]
    rate = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    line_len = max(40, rate // 100)
    out = sys.stdout.buffer
    max_write = max_gap = 0.0
    lines = 0
    last = time.monotonic()
    next_report = last
    while True:
        stamp = f"{time.time():.3f} {lines} "
        began = time.monotonic()
        out.write((stamp + "x" * (line_len - len(stamp) - 1) + "\n").encode())
        out.flush()
        now = time.monotonic()
        lines += 1
        max_write = max(max_write, now - began)
        max_gap = max(max_gap, now - last)
        last = now
        if now >= next_report:
            if lines > 1 and not os.path.exists(report):
                max_write = max_gap = 0.0  # the test asked for a reset
            tmp = f"{report}.tmp"
            with open(tmp, "w") as fh:
                fh.write(f"{max_write:.4f} {max_gap:.4f} {lines}\n")
            os.replace(tmp, report)
            next_report = now + 0.1
        time.sleep(0.01)


if __name__ == "__main__":
    main()
