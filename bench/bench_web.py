"""What one browser viewer costs the server, beside the terminal dashboard, on one fleet.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_web.py                       # 50 agents, 2 rounds, 20 s windows
    .venv/bin/python bench/bench_web.py --agents 50 --seconds 30 --rounds 3

One demo fleet (`DemoFleet.start_busy`, a quarter of the agents printing 10 coloured lines a
second, as bench_app.py). Then ``--rounds`` rounds, each measuring both ways one after the other
(the order swapped every other round), every process started fresh:

* terminal: the CLI in a 160x48 pty (bench_app's `AppInPty`, ``nbs-tui -L SOCKET --no-poll``);
  CPU of the app (reaped children included) and its live descendants (its ``tmux -C`` clients);
* browser: ``nbs-tui -L SOCKET --no-poll web --bind 127.0.0.1:0`` and one headless Chromium page
  (Debian's ``chromium``, through Playwright) opening the printed URL, its viewport sized so the
  tab is about 160x48 cells; server-side CPU is the web server (reaped children included) and
  its live descendants (the tab's dashboard process and its ``tmux -C`` clients). Chromium's
  own CPU (the viewer's machine, in real use) is reported apart.

Both run with ``NBS_SERVICE=off``: the dashboard (in the pty, or in the tab) holds the sidecar
itself, so both ways count the same sidecar work and no detached service muddles the sums.
A window starts once the fleet is on screen (``N panes`` in the status bar: for the browser,
in the frames its websocket received) and ``--settle`` seconds have passed.

CPU is % of one core from /proc/PID/stat. Results: a Markdown table on stdout, and with
``--out FILE`` in that file too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from bench_app import AppInPty, ChildrenMeter, app_argv, app_env, descendants  # noqa: E402
from bench_mirror import CpuMeter, cpu_ticks  # noqa: E402

from nbs_tui.demo.launcher import DemoFleet  # noqa: E402
from tests.web.webproc import ScreenText, WebProcess, wait_until  # noqa: E402

VIEWPORT = (1445, 885)
"""Pixels that make xterm.js's grid about 160x48 cells at textual-serve's 16 px font here."""


def tree_percent(pid: int, seconds: float) -> tuple[float, float]:
    """(% of one core used by ``pid`` with its reaped children, % by its live descendants)."""
    own, kids = CpuMeter(pid, children=True), ChildrenMeter(pid)
    time.sleep(seconds)
    return own.percent(), kids.percent()


def chromium_pids() -> list[int]:
    found = []
    for pid in descendants(os.getpid()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"chromium" in argv or b"chrome" in argv:
            found.append(pid)
    return found


def chromium_ticks() -> int:
    total = 0
    for pid in chromium_pids():
        try:
            total += cpu_ticks(pid)
        except (OSError, IndexError, ValueError):
            continue
    return total


def run_terminal(socket: str, workdir: Path, n: int, settle: float, seconds: float) -> dict[str, float]:
    config = workdir / "empty.toml"
    config.write_text("")
    home = workdir / "home"
    home.mkdir(exist_ok=True)
    env = {**app_env(home), "NBS_SERVICE": "off"}
    app = AppInPty(app_argv(socket, config), env, n, ROOT)
    try:
        deadline = time.monotonic() + 90
        while not app.listed_ns:
            if time.monotonic() > deadline or app.proc.poll() is not None:
                raise RuntimeError(f"terminal: fleet never listed; last output: {app.output()[-600:]!r}")
            time.sleep(0.1)
        time.sleep(settle)
        own, kids = tree_percent(app.proc.pid, seconds)
        return {"server": own + kids, "process": own, "descendants": kids}
    finally:
        app.quit()


def run_browser(socket: str, workdir: Path, n: int, settle: float, seconds: float, chromium: str) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    config = workdir / "empty.toml"
    config.write_text("")
    home = workdir / "home"
    home.mkdir(exist_ok=True)
    env = {**app_env(home), "NBS_SERVICE": "off", "XDG_STATE_HOME": str(workdir / "state")}
    args = ["-L", socket, "--no-poll", "--config", str(config), "web", "--bind", "127.0.0.1:0"]
    with WebProcess(args, env=env) as web, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": VIEWPORT[0], "height": VIEWPORT[1]})
            screen = ScreenText(page)
            page.goto(web.url)
            wait_until(lambda: f" {n} panes" in screen.text(), timeout=90, what="the fleet in the browser")
            time.sleep(settle)
            screen.clear()  # the recorder's string grows with every frame: keep the page's work small
            browser_before, started = chromium_ticks(), time.monotonic()
            own, kids = tree_percent(web.proc.pid, seconds)
            browser_cpu = 100.0 * (chromium_ticks() - browser_before) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - started)
            size = next((line.rsplit("(", 1)[1].rstrip(")\n") for line in _log(workdir).splitlines() if "tab from" in line), "?")
            page.close()
        finally:
            browser.close()
    return {"server": own + kids, "process": own, "descendants": kids, "chromium": browser_cpu, "size": size}  # type: ignore[dict-item]


def _log(workdir: Path) -> str:
    try:
        return (workdir / "state" / "nbs-tui" / "nbs-tui.log").read_text()
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after the fleet is on screen")
    parser.add_argument("--seconds", type=float, default=20.0, help="the measuring window")
    parser.add_argument("--busy", type=float, default=0.25, help="fraction of agents printing")
    parser.add_argument("--out", type=Path, help="also write the Markdown here")
    args = parser.parse_args(argv)
    chromium = subprocess.run(["sh", "-c", "command -v chromium"], capture_output=True, text=True).stdout.strip()
    if not chromium:
        print("bench_web: chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 1
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "nbs_tui")], check=True)
    results: dict[str, list[dict[str, Any]]] = {"terminal": [], "browser": []}
    load_before = os.getloadavg()
    fleet = DemoFleet.start_busy(args.agents, busy_fraction=args.busy)
    try:
        socket = fleet.server.socket_name
        assert socket is not None
        time.sleep(2.0)
        for round_ in range(args.rounds):
            order = ["terminal", "browser"] if round_ % 2 == 0 else ["browser", "terminal"]
            for way in order:
                with tempfile.TemporaryDirectory(prefix=f"nbs-bench-web-{way}-") as tmp:
                    if way == "terminal":
                        row = run_terminal(socket, Path(tmp), args.agents, args.settle, args.seconds)
                    else:
                        row = run_browser(socket, Path(tmp), args.agents, args.settle, args.seconds, chromium)
                results[way].append(row)
                print(f"round {round_ + 1} {way}: {row}", file=sys.stderr, flush=True)
    finally:
        fleet.stop()
    load_after = os.getloadavg()

    def med(way: str, key: str) -> str:
        values = [float(r[key]) for r in results[way]]
        return f"{statistics.median(values):.1f} % ({min(values):.1f}-{max(values):.1f})"

    sizes = sorted({str(r.get("size")) for r in results["browser"]})
    text = "\n".join([
        f"N={args.agents} demo agents ({args.busy:.0%} printing 10 lines/s), {args.rounds} rounds, windows of "
        f"{args.seconds:.0f} s after {args.settle:.0f} s settle, both ways in each round (order swapped each round); "
        f"terminal 160x48 pty, browser tab {', '.join(sizes)} cells; NBS_SERVICE=off (the dashboard acts itself in both); "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after. CPU in % of one core, median (min-max).",
        "",
        "| way | server-side CPU (all) | the process (reaped children incl.) | its live descendants | Chromium (viewer side) |",
        "|---|---|---|---|---|",
        f"| terminal dashboard | {med('terminal', 'server')} | {med('terminal', 'process')} | {med('terminal', 'descendants')} | - |",
        f"| browser view, one tab | {med('browser', 'server')} | {med('browser', 'process')} | {med('browser', 'descendants')} | {med('browser', 'chromium')} |",
    ])  # fmt: skip
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
