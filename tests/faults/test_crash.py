"""Crash anywhere, lose nothing.

Demo agents (hook records into a spool, chat posts, ``\\nbs-`` commands, idle prompts that get
``/nbs-poll``) run while ``--headless``, the service and a chat poster (nbs-tui's own
``post_message``, as the dashboard's chat editor uses it) are SIGKILLed at random moments and
started again; meanwhile the test appends register/unregister lines to a control inbox.
Afterwards:

* the inbox is byte for byte what the test appended (nbs-tui never writes into it);
* its registry is whole (every line parses, no entry twice) and current (each path registered
  exactly when its last inbox line registered it), once a sidecar runs again;
* every message the poster finished is in the chat exactly once, an unfinished one at most
  once, and the chat is consistent (``file-length`` agrees);
* the action log, the hook spool and the log file end on a whole line, and every line of the
  action log and the spool parses.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import libtmux

from nbs_tui.core.control.registry import Registry
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.demo.launcher import DemoFleet
from nbs_tui.files.atomic import stale_temp_files
from nbs_tui.files.chat_io import create_chat, read_chat
from tests.faults.helpers import REPO, cli_env, wait_for

SOAK = float(os.environ.get("NBS_FAULT_SOAK", "16"))
"""Seconds of random kills (docs/faults.md gives a longer run, bench/results/2026-11-27-faults.md
its result)."""
PATHS = [f".nbs/chat/fault-{k}.chat" for k in range(6)]
CHANNEL = "faults"

POSTER = textwrap.dedent(
    r"""
    import os, sys
    from nbs_tui.files.chat_io import post_message
    chat, journal, first = sys.argv[1], sys.argv[2], int(sys.argv[3])
    n = first
    with open(journal, "a") as log:
        while True:
            log.write(f"try {n}\n"); log.flush(); os.fsync(log.fileno())
            post_message(chat, "poster", f"post-{n} " + "x" * (n % 300))
            log.write(f"done {n}\n"); log.flush(); os.fsync(log.fileno())
            n += 1
    """
)


ACTIONS = textwrap.dedent(
    r"""
    import sys, time
    from pathlib import Path
    from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome
    log = ActionLog(Path(sys.argv[1]))
    n = 0
    while True:  # records of every size up to a few pages: a write that spans pages can be cut
        n += 1
        log.append(ActionRecord(time=time.time(), action="send", pane_id="%1", target="s:1.0",
                                sent="y" * (n * 97 % 9000), why="fault test", outcome=Outcome.SENT, reason=""))
        time.sleep(0.002)
    """
)


class Victim:
    """A process the test kills and starts again."""

    def __init__(self, name: str, argv: Callable[[], list[str]], env: dict[str, str], log: Path) -> None:
        self.name, self.argv, self.env, self.log = name, argv, env, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.kills = 0

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.argv(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=self.env, cwd=REPO, start_new_session=True)

    def kill(self) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            # its group only: the tmux -C clients run in sessions of their own (start_new_session)
            # and outlive it, as they do after a real crash (on tmux 3.3a they stay attached)
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.kills += 1

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


def _journal(path: Path) -> tuple[set[int], set[int]]:
    tried: set[int] = set()
    done: set[int] = set()
    if path.exists():
        for line in path.read_text().splitlines():
            word, _, number = line.partition(" ")
            if number.isdigit():
                (tried if word == "try" else done).add(int(number))
    return tried, done


def _whole_lines(path: Path, parse: Callable[[str], object] | None = None) -> int:
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"{path} ends on a broken line: {data[-200:]!r}"
    lines = data.decode("utf-8").splitlines()
    if parse is not None:
        for line in lines:
            parse(line)
    return len(lines)


def test_random_sigkills_lose_nothing(server: libtmux.Server, tmp_path: Path) -> None:
    home = tmp_path / "home"
    spool = home / ".local" / "state" / "nbs-tui" / "hooks.jsonl"  # where the sidecars read it
    fleet = DemoFleet.start(5, ServerAddress(socket_name=server.socket_name), speed=3.0, hook_spool=spool)
    try:
        project = next(p for p in fleet.projects if p.name == "api-server")
        for path in PATHS:
            create_chat(project / path)
        chat = project / ".nbs" / "chat" / "posts.chat"
        create_chat(chat)
        inbox = project / ".nbs" / f"control-inbox-{CHANNEL}"
        registry = project / ".nbs" / f"control-registry-{CHANNEL}"
        env = cli_env(home, NBS_POLL_INTERVAL="1", NBS_LEASE_TTL="2", NBS_SERVICE="off", PYTHONPATH=str(REPO))
        socket = str(server.socket_name)
        common = ["-L", socket, "--project", str(project), "--config", str(tmp_path / "none.toml")]
        (tmp_path / "none.toml").write_text("")
        action_log = home / ".local" / "state" / "nbs-tui" / "actions.log"
        action_log.parent.mkdir(parents=True)  # the hooks append only into an existing folder
        actions_script = tmp_path / "actions.py"
        actions_script.write_text(ACTIONS)
        journal = tmp_path / "poster.journal"
        poster_script = tmp_path / "poster.py"
        poster_script.write_text(POSTER)

        def poster_argv() -> list[str]:
            tried, _ = _journal(journal)
            return [sys.executable, str(poster_script), str(chat), str(journal), str(max(tried, default=-1) + 1)]

        victims = [
            Victim("headless", lambda: [sys.executable, "-m", "nbs_tui", *common, "--headless"], env,
                   tmp_path / "headless.out"),
            Victim("service", lambda: [sys.executable, "-m", "nbs_tui", *common, "service", "run"], env,
                   tmp_path / "service.out"),
            Victim("poster", poster_argv, env, tmp_path / "poster.out"),
            Victim("actions", lambda: [sys.executable, str(actions_script), str(action_log)], env,
                   tmp_path / "actions.out"),
        ]
        appended = bytearray()
        state: dict[str, bool] = {}
        seed = int(os.environ.get("NBS_FAULT_SEED", "15"))  # another seed: another order of kills
        rng = random.Random(seed)
        for victim in victims:
            victim.start()
        try:
            end = time.monotonic() + SOAK
            next_kill = time.monotonic() + rng.uniform(0.3, 1.5)
            while time.monotonic() < end:
                path = rng.choice(PATHS)
                verb = "register-chat" if rng.random() < 0.6 else "unregister-chat"
                line = f"{verb} {path}\n".encode()
                with inbox.open("ab") as fh:  # one write, as an agent's echo >> would
                    fh.write(line)
                appended += line
                state[path] = verb == "register-chat"
                if time.monotonic() >= next_kill:
                    victim = rng.choice(victims)
                    victim.kill()
                    time.sleep(rng.uniform(0.0, 0.3))
                    victim.start()
                    next_kill = time.monotonic() + rng.uniform(0.3, 1.5)
                time.sleep(rng.uniform(0.02, 0.15))
            kills = {v.name: v.kills for v in victims}
            victims[2].stop()  # the poster and the action writer end
            victims[3].stop()
            # the sidecars; the sidecars bring the registry up to date

            def current() -> bool:
                text = registry.read_text() if registry.exists() else ""
                reg = Registry.from_text(project, text)
                return all(reg.contains("chat", p) == want for p, want in state.items())

            wait_for(current, 30, "the registry to follow the inbox")
        finally:
            for victim in victims:
                victim.stop()
        # the inbox: byte for byte what was appended
        assert inbox.read_bytes() == bytes(appended)
        # the registry: whole and current
        text = registry.read_text()
        reg = Registry.from_text(project, text)
        assert not reg.unparsed_lines(), text
        assert all(n == 1 for n in reg.counts().values()), text
        assert all(reg.contains("chat", p) == want for p, want in state.items()), (text, state)
        assert not stale_temp_files(registry)  # a write cut by a kill left its temporary file: cleaned up
        # the chat: every finished post once, an unfinished one at most once
        tried, done = _journal(journal)
        posted = [m.text.split()[0] for m in read_chat(chat).messages if m.handle == "poster"]
        assert read_chat(chat).consistent
        assert len(posted) == len(set(posted)), "a message doubled"
        assert {f"post-{n}" for n in done} <= set(posted), "a finished post lost"
        assert set(posted) <= {f"post-{n}" for n in tried}
        # the logs: whole lines
        # (each check must have lines to look at: a spool or a log never written passes none)
        actions = _whole_lines(action_log, json.loads)
        assert spool.exists(), "the demo agents spooled no hook record"
        spooled = _whole_lines(spool, json.loads)
        logs = sorted((home / ".local" / "state" / "nbs-tui").glob("nbs-tui.log*"))  # and rotated ones
        assert "nbs-tui.log" in [log.name for log in logs], f"no log file written: {logs}"
        logged = sum(_whole_lines(log) for log in logs)
        print(f"seed {seed}: kills {kills}; {len(appended.splitlines())} inbox lines, {len(done)} posts finished "
              f"({len(tried - done)} cut), {actions} actions logged, {spooled} hook records, {logged} log lines")
        assert sum(kills.values()) >= 8 and actions > 0 and spooled > 0 and logged > 0
    finally:
        fleet.stop()
