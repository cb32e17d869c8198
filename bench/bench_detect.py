"""Detection cost per screen and per pane tick.

    .venv/bin/python bench/bench_detect.py [--repeat N]

Reports, over the peer corpus (../shared/corpus/peer-screens) and the real-CLI corpus
(tests/corpus/claude/*): µs per screen for ``detect_text`` (escape stripping included) and
``detect_lines`` (plain rows, what the runner calls), split into ordinary screens and the
1,000-row tall frames; then the sidecar's per-pane tick cost with an unchanged screen (the
common case: no detection at all) and with a changed one (digest + detection + command scan),
and reading a 200x50 pyte mirror into rows (``screen_lines_and_faint``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nbs_tui.core.detection.detect import detect_lines, detect_text  # noqa: E402
from nbs_tui.core.screen.pane_screen import PaneScreen  # noqa: E402
from nbs_tui.core.screen.screen_rows import RowCache, screen_lines_and_faint, strip_escapes  # noqa: E402
from nbs_tui.core.sidecar.pane_sidecar import PaneSidecar, SidecarConfig, SidecarContext  # noqa: E402

PEER = REPO.parent / "shared" / "corpus" / "peer-screens"
CLAUDE = REPO / "tests" / "corpus" / "claude"


def load() -> list[tuple[str, str]]:
    screens: list[tuple[str, str]] = []
    for labels in [PEER / "labels.tsv", *sorted(CLAUDE.glob("*/labels.tsv"))]:
        if not labels.is_file():
            continue
        folder = labels.parent / "screens" if labels.parent == PEER else labels.parent
        for line in labels.read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            name = line.split("\t")[0]
            text = (folder / name).read_text(encoding="utf-8", errors="replace")
            screens.append((f"{labels.parent.name}/{name}", "\n".join(text.split("\n")[2:])))
    return screens


def per_call_us(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best * 1e6


def summary(values: list[float]) -> str:
    if not values:
        return "n/a"
    return (
        f"n={len(values):3d}  median {statistics.median(values):8.1f} µs  "
        f"mean {statistics.fmean(values):8.1f} µs  max {max(values):8.1f} µs"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    screens = load()
    if not screens:
        print("no corpus found")
        return 1
    text_us: dict[str, list[float]] = {"ordinary": [], "tall": []}
    lines_us: dict[str, list[float]] = {"ordinary": [], "tall": []}
    for _, text in screens:
        group = "tall" if text.count("\n") > 200 else "ordinary"
        lines = strip_escapes(text).split("\n")
        text_us[group].append(per_call_us(partial(detect_text, text), args.repeat))
        lines_us[group].append(per_call_us(partial(detect_lines, lines), args.repeat))
    print(f"corpus: {len(screens)} screens ({len(text_us['tall'])} of them 1,000 rows tall)")
    for group in ("ordinary", "tall"):
        print(f"detect_text  {group:8s} {summary(text_us[group])}")
        print(f"detect_lines {group:8s} {summary(lines_us[group])}")

    # the sidecar tick, per pane
    idle = [
        line for name, t in screens if name.endswith("idle_empty.txt") for line in t.split("\n")
    ]
    if not idle:
        idle = strip_escapes(screens[0][1]).split("\n")
    sidecar = PaneSidecar("%1", SidecarConfig(poll_interval=1e9))
    context = SidecarContext()
    sidecar.tick(0.0, idle, context)
    clock = [1.0]

    def unchanged() -> None:
        clock[0] += 1
        sidecar.tick(clock[0], None, context)

    variants = [[*idle[:-1], f"  footer {i}"] for i in range(2)]

    def changed() -> None:
        clock[0] += 1
        sidecar.tick(clock[0], variants[int(clock[0]) % 2], context)

    print(
        f"sidecar tick, screen unchanged: {per_call_us(unchanged, args.repeat * 10):8.2f} µs per pane"
    )
    print(
        f"sidecar tick, screen changed:   {per_call_us(changed, args.repeat):8.1f} µs per pane (40 rows)"
    )

    screen = PaneScreen(200, 50)
    body = next((t for n, t in screens if n.endswith("working_streaming.ansi")), screens[0][1])
    screen.feed(body.replace("\n", "\r\n").encode())
    print(
        f"read 200x50 mirror into rows:   {per_call_us(lambda: screen_lines_and_faint(screen), args.repeat):8.1f} µs"
    )
    cache = RowCache()
    screen_lines_and_faint(screen, cache)
    frames = [f"\x1b[40;1H\x1b[2K✢ Working… ({i}s)".encode() for i in range(2)]
    step = [0]

    def spinner_tick() -> None:
        step[0] += 1
        screen.feed(frames[step[0] % 2])
        screen_lines_and_faint(screen, cache)

    print(f"  same, RowCache, 1 row moved:  {per_call_us(spinner_tick, args.repeat):8.1f} µs (feed included)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
