"""`GateFile`: starts hold it shared, closes exclusive, and no wait is unbounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
