"""`nbs_tui.files.atomic.write_atomic`, the one way nbs-tui replaces a file (registries, chats, the
config file, Claude Code's settings), on real files: a reader never sees a half-written file, a
crash before the rename leaves the old file whole, the mode is kept, the file and its folder are
fsync'd (seen by strace), a symlink stays a symlink, and a failure leaves the old file and no
temporary one."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from nbs_tui.files import atomic
from nbs_tui.files.atomic import stale_temp_files, write_atomic
from tests.conftest import cannot_run
from tests.unprivileged import give_away, reachable_dir, run_unprivileged

REPO = Path(__file__).resolve().parents[2]

VERSIONS = 120


def version(n: int) -> bytes:
    """Version ``n`` of a file: sizes differ (64-256 KB), and its first and last lines name it."""
    body = b"x" * (65_536 + (n * 7_919) % 196_608)
    return b"%06d\n" % n + body + b"\n%06d end\n" % n


def whole(data: bytes) -> int:
    """The version ``data`` is, if it is one whole; AssertionError if it is torn."""
    assert data[:6].isdigit(), f"a torn read: {len(data)} bytes, starting {data[:6]!r}"
    n = int(data[:6])
    assert data == version(n), f"a torn read: {len(data)} bytes, starting as version {n} ({len(version(n))} bytes)"
    return n


WRITER = textwrap.dedent(
    """
    import sys
    from nbs_tui.files.atomic import write_atomic
    from tests.files.test_atomic import VERSIONS, version
    for n in range(1, VERSIONS + 1):
        write_atomic(sys.argv[1], version(n))
    """
)


def test_a_reader_never_sees_a_half_written_file(tmp_path: Path) -> None:
    """A reader reads the file over and over while another process replaces it, one version
    after another; every read is one whole version, and the versions only move forward."""
    target = tmp_path / "control-registry"
    target.write_bytes(version(0))
    seen = [whole(target.read_bytes())]
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], cwd=REPO)
    torn: list[str] = []

    def read() -> None:
        try:
            while writer.poll() is None:
                seen.append(whole(target.read_bytes()))
        except AssertionError as error:
            torn.append(str(error))

    reader = threading.Thread(target=read)
    reader.start()
    assert writer.wait(120) == 0
    reader.join()
    assert not torn, torn[0]
    seen.append(whole(target.read_bytes()))
    assert seen[0] == 0 and seen[-1] == VERSIONS
    assert seen == sorted(seen), "an older version after a newer one"
    assert stale_temp_files(target) == []


def test_just_before_the_rename_the_file_is_still_the_old_one_whole(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    target.write_bytes(version(1))
    looked: list[tuple[bytes, bytes]] = []
    write_atomic(target, version(2), before_replace=lambda temp: looked.append((target.read_bytes(), Path(temp).read_bytes())))
    assert looked == [(version(1), version(2))], "the old file whole, the new one complete beside it"
    assert target.read_bytes() == version(2)


CRASH = """
import os, sys
from nbs_tui.files.atomic import write_atomic
def crash(temp):
    os._exit(9)
write_atomic(sys.argv[1], sys.argv[2], before_replace=crash)
"""


def test_crash_between_write_and_rename_leaves_the_old_file(tmp_path: Path) -> None:
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


def test_the_mode_is_kept_and_a_new_file_gets_the_one_asked_for(tmp_path: Path) -> None:
    kept = tmp_path / "control-registry"
    kept.write_text("chat:a\n")
    kept.chmod(0o640)
    write_atomic(kept, "chat:b\n")
    assert kept.stat().st_mode & 0o777 == 0o640 and kept.read_text() == "chat:b\n"
    old = os.umask(0o077)  # the mode is set on the file, whatever the umask
    try:
        write_atomic(tmp_path / "new.toml", "theme = 'nord'\n")
        write_atomic(tmp_path / "new.chat", b"=== nbs-chat ===\n", new_mode=0o600)
    finally:
        os.umask(old)
    assert (tmp_path / "new.toml").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "new.chat").stat().st_mode & 0o777 == 0o600


def test_a_symlink_stays_a_symlink_and_its_target_is_written(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text("{}\n")
    real.chmod(0o600)
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    write_atomic(link, '{"hooks": {}}\n')
    assert link.is_symlink() and real.read_text() == '{"hooks": {}}\n'
    assert real.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in real.parent.iterdir()) == ["settings.json"], "no temporary file left"


def test_a_named_temporary_file_and_missing_folders(tmp_path: Path) -> None:
    """nbs-chat's protocol names its temporary file ``<chat>.tmp`` (written under its lock)."""
    chat = tmp_path / "team.chat"
    chat.write_text("old\n")
    names: list[str] = []
    write_atomic(chat, "new\n", temp_name="team.chat.tmp", before_replace=lambda temp: names.append(temp))
    assert names == [str(tmp_path / "team.chat.tmp")] and not Path(names[0]).exists()
    assert chat.read_text() == "new\n"
    deep = tmp_path / "a" / "b" / "config.toml"
    with pytest.raises(FileNotFoundError):
        write_atomic(deep, "x = 1\n")
    assert not (tmp_path / "a").exists()
    write_atomic(deep, "x = 1\n", make_parents=True)
    assert deep.read_text() == "x = 1\n"


def test_a_failed_rename_leaves_the_old_file_and_no_temporary_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "control-registry"
    target.write_text("chat:old.chat\n")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space"):
        write_atomic(target, "chat:new.chat\n")
    assert target.read_text() == "chat:old.chat\n"
    assert stale_temp_files(target) == []


STRACED = """
import sys
from nbs_tui.files.atomic import write_atomic
write_atomic(sys.argv[1], "chat:b\\n")
"""


def test_the_file_and_its_folder_are_fsynced_around_the_rename(tmp_path: Path) -> None:
    """Seen by strace: the temporary file's data is fsync'd before it is renamed over the file
    (a crash cannot leave an empty new file), and the folder after (the rename itself lasts)."""
    strace = shutil.which("strace")
    if strace is None:
        cannot_run("strace is not installed: it shows the fsyncs (apt-get install strace; scripts/test does it)")
    folder = tmp_path / "nbs"
    folder.mkdir()
    target = folder / "control-registry"
    target.write_text("chat:a\n")
    trace = tmp_path / "trace.txt"
    done = subprocess.run(
        [strace, "-f", "-qq", "-e", "trace=openat,write,fsync,rename,renameat,renameat2", "-o", str(trace),
         sys.executable, "-c", STRACED, str(target)],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert target.read_text() == "chat:b\n"
    calls = [line.split(None, 1)[1] for line in trace.read_text().splitlines() if line.split(None, 1)[1:]]
    opened = [(i, re.search(r"= (\d+)$", c)) for i, c in enumerate(calls) if c.startswith("openat(") and f'"{folder}/.control-registry.' in c]
    assert len(opened) == 1 and opened[0][1] is not None, calls
    at, fd = opened[0][0], opened[0][1].group(1)
    rest = calls[at:]
    wrote = next(i for i, c in enumerate(rest) if c.startswith(f"write({fd}, "))
    synced = next(i for i, c in enumerate(rest) if c.startswith(f"fsync({fd})"))
    renamed = next(i for i, c in enumerate(rest) if c.startswith("rename") and f'"{target}"' in c)
    assert wrote < synced < renamed, rest
    folder_open = next(
        (i, m.group(1)) for i, c in enumerate(rest)
        if i > renamed and c.startswith("openat(") and f'"{folder}"' in c and (m := re.search(r"= (\d+)$", c))
    )  # fmt: skip
    assert any(c.startswith(f"fsync({folder_open[1]})") for c in rest[folder_open[0]:]), rest


READ_ONLY_SETUP = """
import os
import sys
from pathlib import Path
from nbs_tui.files.atomic import write_atomic
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
