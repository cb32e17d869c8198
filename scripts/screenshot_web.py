#!/usr/bin/env python3
"""Make the README's browser-view screenshot: the real page of `nbs-tui web` in headless Chromium.

    .venv/bin/python scripts/screenshot_web.py                        # screenshots/web.png, 1280x760
    .venv/bin/python scripts/screenshot_web.py --size 390x844 --out screenshots/web-phone.png

It starts `DemoFleet` on a private tmux server (never your own), serves it with ``nbs-tui web``
on a free loopback port, opens the printed URL in Debian's ``chromium`` (through Playwright) at
``--size`` pixels, waits until the fleet is on screen and the demo agents have states, and saves
a PNG of the page.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nbs_tui.demo.launcher import DemoFleet  # noqa: E402
from tests.web.webproc import ScreenText, WebProcess, wait_until  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1280x760", help="the page's viewport in pixels, WxH")
    parser.add_argument("--out", type=Path, default=REPO / "screenshots" / "web.png")
    parser.add_argument("--agents", type=int, default=6)
    parser.add_argument("--settle", type=float, default=8.0, help="seconds for the agents to show states")
    args = parser.parse_args()
    width, height = (int(x) for x in args.size.lower().split("x"))
    chromium = shutil.which("chromium")
    if chromium is None:
        print("screenshot_web: chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="nbs-web-shot-") as tmp:
        # as `nbs-tui demo` runs it: the agents' hook records, status files and projects shown too
        fleet = DemoFleet.start(agents=args.agents, hook_spool=Path(tmp) / "hooks.jsonl")
        try:
            config = Path(tmp) / "config.toml"
            config.write_text(f'hook_spool = "{Path(tmp) / "hooks.jsonl"}"\nclaude_home = "{fleet.claude_config}"\n')
            projects = [word for project in fleet.projects for word in ("--project", str(project))]
            env = {k: v for k, v in os.environ.items() if k != "TMUX"}
            env.update(XDG_STATE_HOME=str(Path(tmp) / "state"), NBS_SERVICE="off", HOME=tmp)
            socket = fleet.server.socket_name
            assert socket is not None
            args_ = ["-L", socket, "--no-poll", "--config", str(config), *projects, "web", "--bind", "127.0.0.1:0"]
            with WebProcess(args_, env=env) as web, sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                try:
                    page = browser.new_page(viewport={"width": width, "height": height})
                    screen = ScreenText(page)
                    page.goto(web.url)
                    wait_until(lambda: " panes" in screen.text(), timeout=60, what="the fleet in the browser")
                    time.sleep(args.settle)
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(args.out))
                finally:
                    browser.close()
        finally:
            fleet.stop()
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
