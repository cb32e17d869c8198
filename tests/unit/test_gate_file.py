"""`GateFile`: starts hold it shared, closes exclusive, and no wait is unbounded."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from nbs_tui.tmux import control
from nbs_tui.tmux.control import StartGate
from nbs_tui.tmux.gate_file import GateFile, gate_path


@pytest.fixture
def gate(tmp_path: Path) -> GateFile:
    return GateFile(tmp_path / "start-gate")


def test_starts_overlap_and_a_close_waits_for_them(gate: GateFile) -> None:
    first = gate.hold(shared=True, wait=0.0)
    second = gate.hold(shared=True, wait=0.0)
    assert first is not None and second is not None
    assert gate.hold(shared=False, wait=0.05) is None  # gave up: the starts still hold it
    GateFile.release(first)
    assert gate.hold(shared=False, wait=0.05) is None
    GateFile.release(second)
    closing = gate.hold(shared=False, wait=0.05)
    assert closing is not None
    assert gate.hold(shared=True, wait=0.05) is None  # a start waits for the close
    assert gate.hold(shared=False, wait=0.05) is None  # and so does another close
    GateFile.release(closing)
    assert gate.hold(shared=True, wait=0.0) is not None


def test_a_server_has_one_gate_file_by_its_socket_s_real_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir()
    socket = tmp_path / "tmux-sock"
    socket.touch()
    (tmp_path / "link").symlink_to(tmp_path)
    one, same, other = gate_path(socket), gate_path(tmp_path / "link" / "tmux-sock"), gate_path(tmp_path / "other")
    assert one is not None and one == same and one != other
    assert one.parent == tmp_path / "run" / "nbs-tui"
    assert os.stat(one.parent).st_mode & 0o777 == 0o700


def test_once_a_hold_gave_up_the_next_wait_only_a_moment_until_one_succeeds(gate: GateFile) -> None:
    starting = gate.hold(shared=True, wait=0.0)  # a start that never ends (a stopped tmux)
    assert gate.hold(shared=False, wait=0.05) is None
    assert gate.stuck
    began = time.monotonic()
    assert gate.hold(shared=False, wait=30.0) is None
    assert time.monotonic() - began < 5.0, "a later close waited the whole wait again"
    GateFile.release(starting)
    closing = gate.hold(shared=False, wait=30.0)
    assert closing is not None
    assert not gate.stuck


def test_a_start_older_than_the_gate_wait_no_longer_keeps_other_processes_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(control, "GATE_WAIT", 0.2)
    path = tmp_path / "start-gate"
    gate, other_process = StartGate(GateFile(path)), GateFile(path)
    hung = object()
    gate.begin_start(hung)  # never identifies
    assert other_process.hold(shared=False, wait=0.0) is None
    time.sleep(0.3)
    later = object()
    gate.begin_start(later)
    gate.end_start(later)
    closing = other_process.hold(shared=False, wait=0.0)
    assert closing is not None, "the hung start still holds the file"


def _close_on_a_thread(gate: StartGate, client: object) -> tuple[threading.Thread, threading.Event]:
    closed = threading.Event()

    def close() -> None:
        with gate.closing(client):
            closed.set()

    closer = threading.Thread(target=close, daemon=True)
    closer.start()
    return closer, closed


def test_a_client_closed_while_it_identifies_keeps_other_processes_closes_out_until_it_has(tmp_path: Path) -> None:
    """Another process's close must not get the file while our client still identifies itself,
    even when that client is being closed: its ``%client-detached`` would meet the identify. A
    close of a client still starting used to let its start's hold go at once; that is how tmux
    3.3a crashed in `tests/tmux/test_control_gate.py`'s two processes (seen in its server log)."""
    path = tmp_path / "start-gate"
    gate, other_process = StartGate(GateFile(path)), GateFile(path)
    identifying = object()
    gate.begin_start(identifying)
    closer, closed = _close_on_a_thread(gate, identifying)
    closer.join(0.5)  # time for the close to go through, had it not waited
    assert other_process.hold(shared=False, wait=0.0) is None, "another process's close got in during the identify"
    assert not closed.is_set()
    gate.end_start(identifying)  # it has identified
    closer.join(30.0)
    assert closed.is_set()
    assert other_process.hold(shared=False, wait=0.0) is not None


def test_a_client_closed_that_never_identifies_is_closed_after_the_gate_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(control, "GATE_WAIT", 0.2)
    gate = StartGate(GateFile(tmp_path / "start-gate"))
    hung = object()
    gate.begin_start(hung)  # a stopped tmux: it never identifies
    closer, closed = _close_on_a_thread(gate, hung)
    closer.join(30.0)
    assert closed.is_set()
