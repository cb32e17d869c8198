"""The registry's files: seeding from the folder, reading, atomic writes (moved from tests/unit/test_registry.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nbs_tui.core.registry import Registry
from nbs_tui.files import registry_io as registry_module
from nbs_tui.files.registry_io import read_text, seed_entries, stale_temp_files, write_atomic
from tests.unprivileged import give_away, reachable_dir, run_unprivileged


def test_seed_skips_archives_and_adds_events(tmp_path: Path) -> None:
    chat = tmp_path / ".nbs" / "chat"
    chat.mkdir(parents=True)
    for name in ("b.chat", "a.chat", "a-20260101-000000-archive.chat", "notes.txt", "a.chat.cursors"):
        (chat / name).write_text("x")
    (chat / "dir.chat").mkdir()
    assert seed_entries(tmp_path) == [("chat", ".nbs/chat/a.chat"), ("chat", ".nbs/chat/b.chat")]
    (tmp_path / ".nbs" / "events").mkdir()
    registry = Registry.from_text(tmp_path, f"chat:{tmp_path}/.nbs/chat/b.chat\n")
    assert registry.seed(seed_entries(tmp_path)) == ["chat:.nbs/chat/a.chat", "bus:.nbs/events"]
    assert registry.seed(seed_entries(tmp_path)) == []
    assert [e.line for e in registry.entries()] == [
        f"chat:{tmp_path}/.nbs/chat/b.chat",
        "chat:.nbs/chat/a.chat",
        "bus:.nbs/events",
    ]


def test_write_atomic_round_trips_undecodable_bytes(tmp_path: Path) -> None:
    target = tmp_path / "control-registry"
    target.write_bytes(b"chat:caf\xe9.chat\n")
    text = read_text(target)
    assert text is not None
    registry = Registry.from_text(tmp_path, text)
    registry.register("bus", "events")
    write_atomic(target, registry.to_text())
    assert target.read_bytes() == b"chat:caf\xe9.chat\nbus:events\n"
    assert read_text(tmp_path / "missing") is None


def test_write_atomic_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "control-registry"
    target.write_text("chat:a\n")
    target.chmod(0o640)
    write_atomic(target, "chat:b\n")
    assert target.stat().st_mode & 0o777 == 0o640


def test_failed_rename_leaves_old_registry_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "control-registry"
    target.write_text("chat:old.chat\n")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(registry_module.os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_atomic(target, "chat:new.chat\n")
    assert target.read_text() == "chat:old.chat\n"
    assert stale_temp_files(target) == []


CRASH = """
import os, sys
from nbs_tui.files.registry_io import write_atomic
def crash(temp):
    os._exit(9)
write_atomic(sys.argv[1], sys.argv[2], before_replace=crash)
"""


def test_crash_between_write_and_rename_leaves_valid_old_registry(tmp_path: Path) -> None:
    target = tmp_path / "control-registry"
    target.write_text("chat:.nbs/chat/a.chat\nbus:.nbs/events\n")
    result = subprocess.run([sys.executable, "-c", CRASH, str(target), "chat:.nbs/chat/b.chat\n"], check=False)
    assert result.returncode == 9
    assert target.read_text() == "chat:.nbs/chat/a.chat\nbus:.nbs/events\n"
    leftovers = stale_temp_files(target)
    assert len(leftovers) == 1 and leftovers[0].read_text() == "chat:.nbs/chat/b.chat\n"
    # the new content was complete on disk: a crash after the rename would have left it whole
    write_atomic(target, "chat:.nbs/chat/b.chat\n")
    assert target.read_text() == "chat:.nbs/chat/b.chat\n"


READ_ONLY_SETUP = """
import os
import sys
from pathlib import Path
from nbs_tui.files.registry_io import write_atomic
"""

READ_ONLY_BODY = """
folder = Path(sys.argv[1])
target = folder / "control-registry"
write_atomic(target, "chat:a\\n")  # the user may write here, until the folder is read-only
folder.chmod(0o555)
assert not os.access(folder, os.W_OK)
try:
    write_atomic(target, "chat:b\\n")
except PermissionError:
    pass
else:
    raise AssertionError("write_atomic wrote into a read-only folder")
assert target.read_text() == "chat:a\\n"
print("ok")
"""


def test_read_only_folder_raises_permission_error() -> None:
    """Run as a user the folder's mode binds (``nobody`` when the tests run as root)."""
    with reachable_dir() as base:
        (base / "ro").mkdir()
        give_away(base)
        result = run_unprivileged(READ_ONLY_SETUP, READ_ONLY_BODY, str(base / "ro"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
