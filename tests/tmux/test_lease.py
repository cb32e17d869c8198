"""The sidecar lease on a real, private tmux server: races between processes, SIGKILL failover,
a foreign value, release, loss and the server going away."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import libtmux
import pytest

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.lease_rules import LEASE_OPTION, ForeignLease, Lease, LeaseValue
from nbs_tui.sidecar.heartbeat import LeaseClient, LeaseHeartbeat, tmux_too_old
from nbs_tui.tmux.commands import TmuxServerCommands

REPO = Path(__file__).resolve().parents[2]


def commands_for(server: libtmux.Server) -> TmuxServerCommands:
    return TmuxServerCommands.for_server(ServerAddress(socket_name=str(server.socket_name)))


class Worker:
    """One `lease_worker` process with its output lines in a queue."""

    def __init__(self, mode: str, server: libtmux.Server, ttl: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.tmux.lease_worker", mode, str(server.socket_name), str(ttl)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, prefix: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no {prefix!r} line within {timeout} s"
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line.startswith(prefix + " ") or line == prefix:
                return line

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.mark.parametrize("contenders", [2, 3])
def test_racing_processes_leave_exactly_one_holder(
    session: libtmux.Session, server: libtmux.Server, contenders: int
) -> None:
    commands = commands_for(server)
    client = LeaseClient(commands)
    workers = [Worker("race", server, 8.0) for _ in range(contenders)]
    try:
        for _ in range(40):
            commands.run("set-option", "-su", LEASE_OPTION)
            for worker in workers:
                worker.send("go")
            answers = [w.lines.get(timeout=30).split() for w in workers]
            winners = [token for verdict, token in answers if verdict == "won"]
            assert len(winners) == 1, answers
            value = client.read()
            assert f" {winners[0]} " in value, (value, answers)
    finally:
        for worker in workers:
            worker.close()


def test_sigkilled_holder_is_replaced_within_twice_the_ttl(
    session: libtmux.Session, server: libtmux.Server
) -> None:
    ttl = 3.0
    workers = [Worker("hold", server, ttl) for _ in range(3)]
    try:
        alive = {w.expect("token").split()[1]: w for w in workers}
        token = _wait_for_holder(server, set(alive), 30.0)
        alive[token].expect(f"holder {token}")
        for _round in range(2):
            holder = alive.pop(token)
            for other in alive.values():  # each watcher has seen the live holder's value
                other.expect(f"seen {token}")
            killed_at = time.monotonic()
            holder.proc.send_signal(signal.SIGKILL)
            holder.proc.wait(10)
            token = _wait_for_holder(server, set(alive), 2 * ttl - (time.monotonic() - killed_at))
            took = time.monotonic() - killed_at
            assert took >= ttl * 0.9, took  # not before the dead holder's lease could expire
            alive[token].expect(f"holder {token}")
            # the others never thought they held it
            for other_token, other in alive.items():
                if other_token != token:
                    assert not _has_line(other, "holder"), other_token
    finally:
        for worker in workers:
            worker.close()


def _wait_for_holder(server: libtmux.Server, tokens: set[str], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        token = _current_token(server)
        if token in tokens:
            return token
        assert time.monotonic() < deadline, f"no holder among {tokens} within {timeout:.1f} s"
        time.sleep(0.05)


def _current_token(server: libtmux.Server) -> str:
    value = LeaseClient(commands_for(server)).read()
    return value.split(" ")[3] if value.count(" ") == 6 else ""


def _has_line(worker: Worker, prefix: str) -> bool:
    """Whether a line starting with ``prefix`` came (the others stay queued)."""
    kept: list[str] = []
    found = False
    while True:
        try:
            line = worker.lines.get_nowait()
        except queue.Empty:
            break
        if line.startswith(prefix):
            found = True
        else:
            kept.append(line)
    for line in kept:
        worker.lines.put(line)
    return found


def test_clean_stop_releases_at_once(session: libtmux.Session, server: libtmux.Server) -> None:
    worker = Worker("hold", server, 8.0)
    try:
        token = worker.expect("holder").split()[1]
        assert _current_token(server) == token
        assert worker.proc.stdin is not None
        worker.proc.stdin.close()
        worker.expect("released")
        assert worker.proc.wait(10) == 0
        assert LeaseClient(commands_for(server)).read() == ""
    finally:
        worker.close()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_foreign_value_is_held_until_it_expires_and_reported(
    session: libtmux.Session, server: libtmux.Server
) -> None:
    commands = commands_for(server)
    commands.run("set-option", "-s", LEASE_OPTION, "old-sidecar, {pid 7} #x")
    clock = FakeClock()
    problems: list[str] = []
    holders: list[LeaseValue] = []
    beat = LeaseHeartbeat(
        commands, ttl=4.0, clock=clock, on_problem=problems.append, on_holder_changed=holders.append
    )
    beat.tick()
    assert not beat.holding
    assert isinstance(beat.holder, ForeignLease)
    assert len(problems) == 1 and "did not write" in problems[0] and "old-sidecar" in problems[0]
    clock.now += 3.9
    beat.tick()
    assert not beat.holding and len(problems) == 1  # reported once
    clock.now += 0.1
    beat.tick()
    assert beat.holding
    assert "taken over" in problems[-1]
    assert isinstance(holders[0], ForeignLease) and isinstance(holders[-1], Lease)
    assert LeaseClient(commands).read() == beat.lease.render()
    beat.stop()
    assert LeaseClient(commands).read() == ""


def test_changing_foreign_value_is_never_taken(session: libtmux.Session, server: libtmux.Server) -> None:
    commands = commands_for(server)
    clock = FakeClock()
    holders: list[LeaseValue] = []
    beat = LeaseHeartbeat(commands, ttl=4.0, clock=clock, on_holder_changed=holders.append)
    for i in range(6):  # a new value every 3 s: 18 s in all, each value younger than the ttl
        value = f"someone else {i}"
        commands.run("set-option", "-s", LEASE_OPTION, value)
        beat.tick()
        # At every step, not only at the end: a value taken and then lost again to the next
        # write would leave the end state as it should be.
        assert not beat.holding, f"taken at step {i}"
        assert LeaseClient(commands).read() == value, f"written over at step {i}"
        clock.now += 3.0
    assert not any(isinstance(holder, Lease) for holder in holders), holders
    # The same steps take the value once it stops changing: they were long enough to show a take.
    beat.tick()
    assert not beat.holding  # 3 s unchanged
    clock.now += 3.0
    beat.tick()
    assert beat.holding  # 6 s unchanged, more than the ttl
    beat.stop()


def test_holder_renews_and_notices_when_taken(session: libtmux.Session, server: libtmux.Server) -> None:
    commands = commands_for(server)
    clock = FakeClock()
    lost: list[str] = []
    beat = LeaseHeartbeat(commands, ttl=4.0, clock=clock, on_lost=lost.append)
    beat.tick()
    first = beat.lease
    assert first is not None and beat.may_act()
    clock.now += 1.0  # the renewal is due every ttl/4
    beat.tick()
    assert beat.lease is not None and beat.lease.seq == 1
    assert LeaseClient(commands).read() == beat.lease.render()
    clock.now += 2.0  # without a renewal since 2 s (= ttl/2) it stops acting
    assert not beat.may_act()
    other = Lease("elsewhere", 99, "ab" * 8, 0, 4.0, 0).render()
    commands.run("set-option", "-s", LEASE_OPTION, other)
    beat.tick()
    assert not beat.holding and lost and "elsewhere" in lost[0]
    beat.stop()
    assert LeaseClient(commands).read() == other  # release never touches someone else's lease


def test_viewer_never_contends(session: libtmux.Session, server: libtmux.Server) -> None:
    beat = LeaseHeartbeat(commands_for(server), contend=False)
    beat.tick()
    assert not beat.holding and beat.holder is None


def test_fenced_commands_run_only_for_the_token(session: libtmux.Session, server: libtmux.Server) -> None:
    commands = commands_for(server)
    beat = LeaseHeartbeat(commands)
    beat.tick()
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    client = LeaseClient(commands)
    text = 'a "quoted; $HOME #{x} ~ text;'
    assert client.fenced(beat.token, [("set-option", "-p", "-t", pane.pane_id, "@probe", text)])
    assert commands.run("display-message", "-p", "-t", pane.pane_id, "#{@probe}").text == text + "\n"
    assert not client.fenced("0" * 16, [("set-option", "-p", "-t", pane.pane_id, "@probe", "x")])
    assert commands.run("display-message", "-p", "-t", pane.pane_id, "#{@probe}").text == text + "\n"
    beat.stop()


def test_server_gone_is_reported(session: libtmux.Session, server: libtmux.Server) -> None:
    gone: list[str] = []
    lost: list[str] = []
    clock = FakeClock()
    beat = LeaseHeartbeat(
        commands_for(server), clock=clock, on_server_gone=gone.append, on_lost=lost.append
    )
    beat.tick()
    assert beat.holding
    server.kill()
    clock.now += beat.ttl
    beat.tick()
    assert gone and lost and not beat.holding


def test_this_tmux_is_new_enough() -> None:
    assert tmux_too_old() is None


def test_a_tmux_too_old_makes_a_viewer_with_one_line(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = shutil.which("tmux")
    assert real is not None
    wrapper = tmp_path / "bin" / "tmux"
    wrapper.parent.mkdir()
    # the real tmux for everything, but it says it is 2.8
    wrapper.write_text(
        f'#!/bin/sh\nfor a in "$@"; do [ "$a" = -V ] && {{ echo "tmux 2.8"; exit 0; }}; done\nexec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
    problems: list[str] = []
    beat = LeaseHeartbeat(commands_for(server), on_problem=problems.append)
    beat.tick()
    beat.tick()
    assert not beat.holding and not beat.contend
    assert problems == ["tmux 2.8 is too old for the sidecar lease (needs tmux 3.0): viewer only"]
    assert LeaseClient(commands_for(server)).read() == ""
