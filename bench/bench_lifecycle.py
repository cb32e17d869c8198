#!/usr/bin/env python3
"""Start and restore N real Claude Code agents: ``nbs-tui new`` / ``restore`` beside a script that
does what an operator types (issue 29's bench).

    .venv/bin/python bench/bench_lifecycle.py --agents 5
    .venv/bin/python bench/bench_lifecycle.py --agents 20 --stagger 2

Everything runs on a private tmux server with the real Claude Code CLI (tests/realclaude's
binary) against the scripted local API (one HOME and API for all agents, one folder each):

1. **by hand**: for each agent, ``tmux new-window -n NAME -c DIR claude``, wait until its input box
   shows, type the prompt, press Enter, wait until the API has it (what a person or a shell
   script does, without the trust or startup screens: the folders are trusted beforehand);
2. **nbs-tui new**: the same agents (fresh names) with ``nbs-tui new DIR --name NAME --prompt P``,
   one after another; each run ends once its prompt was submitted. A ``nbs-tui --headless``
   holds the lease meanwhile and remembers the fleet;
3. **restore**: the tmux server is killed, then ``nbs-tui restore`` brings every agent of (2)
   back (``restore_stagger`` seconds apart) and ends when each is at its input box.

Prints one line per phase: total seconds, seconds per agent. Wall time on a shared machine is
noisy: compare phases of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import libtmux  # noqa: E402
from bench_app import compile_checkout  # noqa: E402

from nbs_tui.core.detection.detect import detect_text  # noqa: E402
from tests.headless_proc import Headless  # noqa: E402
from tests.realclaude.harness import ClaudeFleet, find_claude  # noqa: E402
from tests.realclaude.new_world import make_world  # noqa: E402


def wait(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_lifecycle: gave up waiting for {what}")
        time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument("--stagger", type=float, default=2.0, help="restore_stagger (default 2 s)")
    args = parser.parse_args()
    binary = find_claude()
    if isinstance(binary, str):
        raise SystemExit(binary)
    n = args.agents
    compile_checkout(REPO)
    tmp = Path(tempfile.mkdtemp(prefix="nbs-bench-life-"))
    server = libtmux.Server(socket_name=f"nbs-bench-life-{os.getpid()}")
    fleet = ClaudeFleet(server, tmp, binary)
    try:
        server.new_session(session_name="work", start_directory=str(tmp))
        world = make_world(fleet, tmp, "bench", [], trust=True)
        config = json.loads((world.home / ".claude.json").read_text())
        folders = []
        for i in range(2 * n):
            folder = tmp / f"project{i}"
            folder.mkdir()
            folders.append(folder.resolve())
            config["projects"][str(folder.resolve())] = dict(config["projects"][str(world.workdir)])
        (world.home / ".claude.json").write_text(json.dumps(config))
        world.config.write_text(world.config.read_text() + f"restore_stagger = {args.stagger}\n")
        socket = str(server.socket_name)
        # nbs-tui runs from bytecode, as installed (compile_checkout), not compiling itself each time
        env = {
            k: v for k, v in os.environ.items()
            if not k.startswith(("TMUX", "CLAUDE", "NBS_")) and k != "PYTHONDONTWRITEBYTECODE"
        }  # fmt: skip
        env.update(XDG_STATE_HOME=str(world.state), XDG_CONFIG_HOME=str(world.state / "config"), NBS_SERVICE="off")

        # 1. by hand
        started = time.monotonic()
        for i in range(n):
            pane = server.cmd(
                "new-window", "-d", "-P", "-F", "#{pane_id}", "-n", f"hand{i}", "-c", str(folders[i]), str(world.wrapper)
            ).stdout[0]

            def box(pane: str = pane) -> str | None:
                return detect_text("\n".join(server.cmd("capture-pane", "-p", "-t", pane).stdout)).input_text

            wait(lambda box=box: box() == "", 60, f"hand{i}'s input box")
            server.cmd("send-keys", "-t", pane, "-l", f"task number {i}")
            wait(lambda box=box, i=i: f"task number {i}" in (box() or ""), 10, "the typed prompt")
            server.cmd("send-keys", "-t", pane, "Enter")
            wait(lambda i=i: world.api.count_prompts(f"task number {i}") == 1, 30, f"hand{i}'s prompt at the API")
        by_hand = time.monotonic() - started

        # 2. nbs-tui new (a holder remembers the fleet)
        with Headless(["--config", str(world.config), "-L", socket, "--no-poll"], env=env):
            started = time.monotonic()
            for i in range(n):
                done = subprocess.run(
                    [sys.executable, "-m", "nbs_tui", "--config", str(world.config), "-L", socket, "new",
                     str(folders[n + i]), "--name", f"new{i}", "--prompt", f"job number {i}"],
                    capture_output=True, text=True, env=env, cwd=REPO, check=False,
                )  # fmt: skip
                if done.returncode != 0:
                    raise SystemExit(done.stderr)
            with_new = time.monotonic() - started
            wait(lambda: all(world.api.count_prompts(f"job number {i}") == 1 for i in range(n)), 30, "new's prompts")
            memory = world.state / "nbs-tui" / f"fleet-L-{socket}.json"

            def remembered() -> int:
                try:
                    data = json.loads(memory.read_text())
                except (OSError, ValueError):
                    return 0
                return sum(1 for w in data["windows"] for p in w["panes"] if p["agent"] and p["agent"]["session_id"])

            wait(lambda: remembered() == 2 * n, 60, "the fleet remembered")

        # 3. restore after the server is lost
        server.kill()
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "nbs_tui", "--config", str(world.config), "-L", socket, "restore", "--json"],
            capture_output=True, text=True, env=env, cwd=REPO, check=False,
        )  # fmt: skip
        restore = time.monotonic() - started
        report = json.loads(done.stdout) if done.stdout.strip() else {"restored": [], "not_restored": []}
        back = sum(1 for a in report["restored"] if not a["stopped"])
        print(f"Claude Code {binary.version}, {n} agents, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        print(f"by hand (new-window, wait for the box, type, Enter): {by_hand:6.1f} s, {by_hand / n:5.2f} s/agent")
        print(f"nbs-tui new (prompt submitted when it returns):       {with_new:6.1f} s, {with_new / n:5.2f} s/agent")
        print(
            f"nbs-tui restore of {2 * n} agents (stagger {args.stagger:g} s): {restore:6.1f} s, "
            f"{back} back, {len(report['not_restored'])} not restored"
        )
        return 0
    finally:
        fleet.close()
        server.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
