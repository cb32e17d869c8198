#!/usr/bin/env python3
"""Make the README's screenshots: the dashboard on a demo fleet, as SVG files in screenshots/.

    .venv/bin/python scripts/screenshots.py            # all of them, 160x48
    .venv/bin/python scripts/screenshots.py --size 200x56 --out /tmp/shots
    .venv/bin/python scripts/screenshots.py --hosts   # only hosts.svg: two hosts over ssh
    .venv/bin/python scripts/screenshots.py --limited # only limited.svg: a usage-limited agent
    .venv/bin/python scripts/screenshots.py --new-agent # only new-agent.svg: the "new agent" form
    .venv/bin/python scripts/screenshots.py --phone   # only phone.svg and phone-answer.svg, 50x30
    .venv/bin/python scripts/screenshots.py --usage   # only usage.svg: the usage view (U), 120x32
    .venv/bin/python scripts/screenshots.py --review  # only review.svg (160x48) and phone-review.svg (50x30)
    .venv/bin/python scripts/screenshots.py --queue   # only queue.svg and phone-queue.svg (50x30)

It starts `DemoFleet` on a private tmux server (never your own), runs the app headless at a
fixed size, waits until every agent shows a state, and saves one SVG per view. ``hosts.svg``
watches two hosts through ssh: the test suite's ssh lab (tests/remote, needs openssh-server)
with a demo fleet in each host's own tmux server. ``limited.svg`` is the snapshot tests' fleet
(tests/app/snapfleet.py) plus a pane replaying a limit screen recorded from Claude Code, with the
wall clock set to 07:20 UTC so its 9:25am reset is 2h05m ahead. ``queue.svg`` is the snapshot
tests' fleet too, with the queue file of tests/app/test_snapshots_queue.py (tasks in every state)
in a state folder of its own; ``phone-queue.svg`` the same at 50x30.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nbs_tui.app import NbsApp, create_app  # noqa: E402
from nbs_tui.config import Settings  # noqa: E402
from nbs_tui.core.fleet.host_spec import HostSpec  # noqa: E402
from nbs_tui.core.fleet.model import AgentState, ServerAddress  # noqa: E402
from nbs_tui.demo.launcher import DemoFleet  # noqa: E402


async def _wait(pilot: object, condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            print(f"screenshots: gave up waiting for {what}", file=sys.stderr)
            return
        await pilot.pause(0.2)  # type: ignore[attr-defined]


async def _select_waiting_agent(app: NbsApp, pilot: object) -> str | None:
    """Put the cursor on an agent asking for permission (once one does), let it settle; its pane."""

    def waiting() -> str | None:
        for pane in app.state.panes:
            status = app.state.statuses.get(pane.pane_id)
            if status is not None and status.state is AgentState.PERMISSION:
                return pane.pane_id
        return None

    await _wait(pilot, lambda: waiting() is not None, 30, "an agent asking for permission")
    pane_id = waiting()
    if pane_id is not None:
        app.dashboard.select_pane(pane_id)
    await pilot.pause(2.0)  # type: ignore[attr-defined]
    return pane_id


async def shoot(out: Path, size: tuple[int, int], agents: int) -> list[Path]:
    made: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="nbs-shots-") as tmp:
        spool = Path(tmp) / "hooks.jsonl"
        demo = DemoFleet.start(agents=agents, hook_spool=spool)
        try:
            # service "off": the app holds the lease itself, so the status bar reads "sidecar: here"
            settings = Settings(
                server=demo.server, projects=tuple(demo.projects), hook_spool=spool, service="off",
                remember_fleet=False,
            )
            app: NbsApp = create_app(settings)  # what the nbs-tui command runs
            async with app.run_test(size=size) as pilot:
                await _wait(pilot, lambda: len(app.state.panes) > agents, 20, "the fleet")
                await _wait(
                    pilot,
                    lambda: sum(1 for s in app.state.statuses.values() if s.state is not None) >= agents,
                    30,
                    "every agent's state",
                )
                # put the cursor on an agent waiting for a person: the detail panel has most to say
                pane_id = await _select_waiting_agent(app, pilot)

                def save(name: str) -> None:
                    path = out / f"{name}.svg"
                    app.save_screenshot(path.name, str(out))
                    made.append(path)

                save("dashboard")
                await pilot.press("2")
                await pilot.pause(1.0)
                save("grid")
                await pilot.press("1", "z")
                await pilot.pause(1.0)
                save("zoom")
                await pilot.press("escape", "3")
                await pilot.pause(1.0)
                await pilot.press("down", "down", "down")  # onto a chat: the chat view shows it
                await pilot.pause(1.5)
                save("control")
                await pilot.press("1", "question_mark")
                await pilot.pause(0.5)
                save("help")
                await pilot.press("escape", "z", "pageup")  # the zoomed pane's history, read from tmux
                await _wait(pilot, lambda: app.dashboard.scrollback.display and bool(app.dashboard.scrollback.lines.texts), 10, "the scrollback")
                await pilot.press("slash", *"nbs", "enter")
                await pilot.pause(0.5)
                save("scrollback")
                await pilot.press("escape", "z")
                if pane_id is not None:  # the answer card, on the agent asking for permission
                    app.dashboard.select_pane(pane_id)
                    await pilot.press("A")
                    await pilot.pause(0.5)
                    save("answer")
                    await pilot.press("q")
            made.append(await shoot_viewer(demo, settings, out, size, agents))
        finally:
            demo.stop()
    return made


async def shoot_viewer(demo: DemoFleet, settings: Settings, out: Path, size: tuple[int, int], agents: int) -> Path:
    """A dashboard as a viewer: a ``--headless`` process holds the server's sidecar lease, and the
    status bar names it (``sidecar: HOST pid N since HH:MM``)."""
    holder = subprocess.Popen(
        [sys.executable, "-m", "nbs_tui", *demo.server.tmux_args(), "--headless"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO,
    )
    try:
        deadline = time.monotonic() + 20
        while not demo.tmux("display-message", "-p", "#{@nbs_sidecar}").strip() and time.monotonic() < deadline:
            time.sleep(0.2)
        app: NbsApp = create_app(settings)
        async with app.run_test(size=size) as pilot:
            await _wait(pilot, lambda: len(app.state.panes) > agents, 20, "the fleet")
            await _wait(
                pilot,
                lambda: sum(1 for s in app.state.statuses.values() if s.state is not None) >= agents,
                30,
                "every agent's state",
            )
            bar = app.dashboard.status_bar
            await _wait(pilot, lambda: f"pid {holder.pid}" in str(bar.render()), 20, "the holder in the status bar")
            await pilot.pause(1.0)
            path = out / "viewer.svg"
            app.save_screenshot(path.name, str(out))
            return path
    finally:
        holder.terminate()
        holder.wait(20)


async def shoot_hosts(out: Path, size: tuple[int, int], agents: int) -> list[Path]:
    """Two hosts, hosta and hostb, in one dashboard (issue 12), listed host by host."""
    from tests.remote.conftest import running_lab

    with running_lab() as lab, tempfile.TemporaryDirectory(prefix="nbs-shots-") as tmp:
        demos = []
        try:
            for seed, host in enumerate(lab.hosts.values(), 3):
                # each host's own tmux server, where its sshd sessions find it
                sock = host.tmux_tmpdir / f"tmux-{os.getuid()}" / "default"
                sock.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                demos.append(DemoFleet.start(agents=agents, server=ServerAddress(socket_path=str(sock)), seed=seed))
            settings = Settings(
                hosts=tuple(HostSpec(alias, alias, lab.ssh_options) for alias in lab.hosts),
                hook_spool=Path(tmp) / "hooks.jsonl", service="off",
            )  # fmt: skip
            app: NbsApp = create_app(settings)
            async with app.run_test(size=size) as pilot:
                await _wait(pilot, lambda: len(app.state.panes) >= 2 * agents, 30, "both hosts' fleets")
                await _wait(
                    pilot,
                    lambda: sum(1 for s in app.state.statuses.values() if s.state is not None) >= 2 * agents,
                    40,
                    "every agent's state",
                )
                agent = next((p.pane_id for p in app.state.panes if p.host == "hostb" and p.is_agent), None)
                if agent is not None:
                    app.dashboard.select_pane(agent)
                await pilot.pause(2.0)
                app.save_screenshot("hosts.svg", str(out))
        finally:
            for demo in demos:
                demo.stop()
    return [out / "hosts.svg"]


async def shoot_limited(out: Path, size: tuple[int, int]) -> list[Path]:
    """A usage-limited agent selected: the countdown in the list, the limit in the details."""
    import libtmux

    from tests.app.snapfleet import (
        LIMITED,
        StableFleet,
        start_limited_session,
        start_snapshot_fleet,
    )
    from tests.app.test_snapshots_limited import LIMITED_WALL

    old_tz = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"  # the details' history times, like the reset the screen names
    time.tzset()
    server = libtmux.Server(socket_name=f"nbs-shots-limited-{os.getpid()}")
    started = time.time()
    try:
        with tempfile.TemporaryDirectory(prefix="nbs-shots-") as tmp:
            start_snapshot_fleet(server)
            start_limited_session(server, Path(tmp))
            address = ServerAddress(socket_name=server.socket_name)
            settings = Settings(server=address, poll_disabled=True, plan_policy="off", bell=False, service="off")
            app: NbsApp = create_app(
                settings, lambda listener: StableFleet(address, listener), control_plane=False, claude=False,
                wall=lambda: LIMITED_WALL + (time.time() - started),
            )  # fmt: skip
            async with app.run_test(size=size) as pilot:

                def limited() -> str | None:
                    for pane in app.state.panes:
                        status = app.state.statuses.get(pane.pane_id)
                        if pane.session_name == LIMITED[0] and status is not None and status.state is AgentState.LIMITED:
                            return pane.pane_id
                    return None

                await _wait(pilot, lambda: limited() is not None, 30, "the limited agent")
                pane_id = limited()
                if pane_id is not None:
                    app.dashboard.select_pane(pane_id)
                await pilot.pause(2.0)
                app.save_screenshot("limited.svg", str(out))
    finally:
        server.kill()
        if old_tz is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old_tz
        time.tzset()
    return [out / "limited.svg"]


async def shoot_queue(out: Path, size: tuple[int, int]) -> list[Path]:
    """The queue view (key 4) over the snapshot fleet, with a task in every state; the same on a phone."""
    import libtmux

    from tests.app.snapfleet import StableFleet, start_snapshot_fleet
    from tests.app.test_snapshots import FROZEN_WALL
    from tests.app.test_snapshots_queue import write_queue

    server = libtmux.Server(socket_name=f"nbs-shots-queue-{os.getpid()}")
    old_state = os.environ.get("XDG_STATE_HOME")
    started = time.time()
    made: list[Path] = []
    try:
        with tempfile.TemporaryDirectory(prefix="nbs-shots-") as tmp:
            os.environ["XDG_STATE_HOME"] = tmp  # the queue file, not the user's own
            start_snapshot_fleet(server)
            write_queue(server)
            address = ServerAddress(socket_name=server.socket_name)
            settings = Settings(server=address, poll_disabled=True, plan_policy="off", bell=False, service="off")
            for name, shot_size in (("queue", size), ("phone-queue", PHONE)):
                app: NbsApp = create_app(
                    settings, lambda listener: StableFleet(address, listener), control_plane=False, claude=False,
                    wall=lambda: FROZEN_WALL + (time.time() - started),
                )  # fmt: skip
                async with app.run_test(size=shot_size) as pilot:
                    await _wait(pilot, lambda: len(app.state.panes) >= 6, 20, "the fleet")  # noqa: B023
                    await pilot.press("4")
                    await _wait(pilot, lambda: app.dashboard.queue_view.table.row_count == 9, 20, "the queue")  # noqa: B023
                    await pilot.pause(1.5)
                    app.save_screenshot(f"{name}.svg", str(out))
                    made.append(out / f"{name}.svg")
    finally:
        server.kill()
        if old_state is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = old_state
    return made


async def shoot_new_agent(out: Path, size: tuple[int, int], agents: int) -> list[Path]:
    """The "new agent" form (key c) over the demo fleet, filled in as an operator would."""
    from textual.widgets import Input, TextArea

    from nbs_tui.widgets.new_agent_form import NewAgentScreen

    with tempfile.TemporaryDirectory(prefix="nbs-shots-") as tmp:
        spool = Path(tmp) / "hooks.jsonl"
        demo = DemoFleet.start(agents=agents, hook_spool=spool)
        try:
            settings = Settings(server=demo.server, projects=tuple(demo.projects), hook_spool=spool, service="off", remember_fleet=False)
            app: NbsApp = create_app(settings)
            async with app.run_test(size=size) as pilot:
                await _wait(pilot, lambda: len(app.state.panes) > agents, 20, "the fleet")
                await pilot.pause(1.0)
                await pilot.press("c")
                await _wait(pilot, lambda: isinstance(app.screen, NewAgentScreen), 10, "the form")
                form = app.screen
                form.query_one("#new-name", Input).value = "parser"
                form.query_one("#new-model", Input).value = "opus"
                form.query_one("#new-prompt", TextArea).text = (
                    "Fix the failing parser test in tests/test_parser.py, then run the whole suite.\n"
                    "Report what you changed in the chat."
                )
                form.query_one("#new-name", Input).focus()
                await pilot.pause(0.5)
                app.save_screenshot("new-agent.svg", str(out))
        finally:
            demo.stop()
    return [out / "new-agent.svg"]


PHONE = (50, 30)
"""A phone held upright, in the browser view (the -narrow layout)."""


async def shoot_phone(out: Path, agents: int) -> list[Path]:
    """The phone-size layout: needs-you first, then the list; and the answer card's buttons, on
    an agent asking for permission."""
    with tempfile.TemporaryDirectory(prefix="nbs-shots-") as tmp:
        spool = Path(tmp) / "hooks.jsonl"
        demo = DemoFleet.start(agents=agents, hook_spool=spool)
        try:
            settings = Settings(server=demo.server, projects=tuple(demo.projects), hook_spool=spool, service="off", remember_fleet=False)
            app: NbsApp = create_app(settings)
            async with app.run_test(size=PHONE) as pilot:
                await _wait(pilot, lambda: len(app.state.panes) > agents, 20, "the fleet")
                await _select_waiting_agent(app, pilot)
                app.save_screenshot("phone.svg", str(out))
                await pilot.press("A")
                await pilot.pause(1.0)
                app.save_screenshot("phone-answer.svg", str(out))
        finally:
            demo.stop()
    return [out / "phone.svg", out / "phone-answer.svg"]


async def shoot_usage(out: Path) -> list[Path]:
    """The usage view over the status bar's meter: two accounts, one at its 5-hour cap, with
    the snapshot test's figures (tests/app/test_usage_snapshots.py: an hour of turns, made up)."""
    from tests.app.test_usage_snapshots import UsageApp

    app = UsageApp()
    async with app.run_test(size=(120, 32)) as pilot:
        await pilot.pause(0.5)
        app.save_screenshot("usage.svg", str(out))
    return [out / "usage.svg"]
async def shoot_review(out: Path) -> list[Path]:
    """The review screen (v) over a real git worktree: the snapshot tests' fleet and repository
    (tests/app/test_snapshots_review.py), mirror.py's diff with a comment, side by side at 160x48,
    and the same review on a phone."""
    from dataclasses import replace

    import libtmux

    from nbs_tui.core.fleet.model import PaneInfo
    from nbs_tui.widgets.review_screen import ReviewScreen
    from tests.app import snapfleet
    from tests.gitrepo import IDENTITY, reviewed_repo

    os.environ.update(IDENTITY)
    made = []
    with tempfile.TemporaryDirectory(prefix="nbs-shots-") as tmp:
        repo = reviewed_repo(Path(tmp))
        stable = snapfleet._stable

        def in_the_worktree(pane: PaneInfo) -> PaneInfo:
            pane = stable(pane)
            return replace(pane, current_path=str(repo.worktree)) if pane.window_name == "mirror" else pane

        snapfleet._stable = in_the_worktree
        async def one(name: str, size: tuple[int, int], keys: tuple[str, ...]) -> None:
            server = libtmux.Server(socket_name=f"nbs-shots-review-{os.getpid()}")
            try:
                snapfleet.start_snapshot_fleet(server)
                address = ServerAddress(socket_name=server.socket_name)
                settings = Settings(server=address, poll_disabled=True, plan_policy="off", bell=False, service="off")
                app: NbsApp = create_app(settings, lambda listener: snapfleet.StableFleet(address, listener), control_plane=False, claude=False)
                async with app.run_test(size=size) as pilot:
                    await _wait(pilot, lambda: len(app.state.panes) == len(snapfleet.LAYOUT), 30, "the fleet")
                    await pilot.pause(1.0)
                    await pilot.press("v")
                    await _wait(pilot, lambda: isinstance(app.screen, ReviewScreen) and bool(app.screen.files), 30, "the review")
                    await pilot.press("right_square_bracket")
                    await pilot.pause(1.0)
                    await pilot.press(*keys)
                    await pilot.pause(0.5)
                    app.save_screenshot(name, str(out))
                    made.append(out / name)
            finally:
                server.kill()

        await one("review.svg", (160, 48), ("c", *"Keep dirty a set?", "enter"))
        await one("phone-review.svg", PHONE, ())
        snapfleet._stable = stable
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "screenshots")
    parser.add_argument("--size", default="160x48", help="terminal size, COLSxROWS (default 160x48)")
    parser.add_argument("--agents", type=int, default=6)
    parser.add_argument("--hosts", action="store_true", help="only hosts.svg (two hosts through the ssh lab)")
    parser.add_argument("--limited", action="store_true", help="only limited.svg (a usage-limited agent)")
    parser.add_argument("--new-agent", action="store_true", help="only new-agent.svg (the new agent form)")
    parser.add_argument("--phone", action="store_true", help="only phone.svg and phone-answer.svg (50x30)")
    parser.add_argument("--usage", action="store_true", help="only usage.svg (the usage view, 120x32)")
    parser.add_argument("--review", action="store_true", help="only review.svg and phone-review.svg (the review screen)")
    parser.add_argument("--queue", action="store_true", help="only queue.svg and phone-queue.svg (the queue view)")
    args = parser.parse_args()
    if args.usage:
        args.out.mkdir(parents=True, exist_ok=True)
        for path in asyncio.run(shoot_usage(args.out)):
            print(path)
        return 0
    if args.queue:
        args.out.mkdir(parents=True, exist_ok=True)
        columns, rows = (int(x) for x in args.size.lower().split("x"))
        for path in asyncio.run(shoot_queue(args.out, (columns, rows))):
            print(path)
        return 0
    if args.review:
        args.out.mkdir(parents=True, exist_ok=True)
        for path in asyncio.run(shoot_review(args.out)):
            print(path)
        return 0
    if args.phone:
        args.out.mkdir(parents=True, exist_ok=True)
        for path in asyncio.run(shoot_phone(args.out, args.agents)):
            print(path)
        return 0
    if args.new_agent:
        args.out.mkdir(parents=True, exist_ok=True)
        columns, rows = (int(x) for x in args.size.lower().split("x"))
        for path in asyncio.run(shoot_new_agent(args.out, (columns, rows), args.agents)):
            print(path)
        return 0
    columns, rows = (int(x) for x in args.size.lower().split("x"))
    args.out.mkdir(parents=True, exist_ok=True)
    size = (columns, rows)
    made = [] if args.hosts or args.limited else asyncio.run(shoot(args.out, size, args.agents))
    if not args.limited:
        made += asyncio.run(shoot_hosts(args.out, size, max(3, args.agents // 2)))
    if not args.hosts:
        made += asyncio.run(shoot_limited(args.out, size))
    for path in made:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
