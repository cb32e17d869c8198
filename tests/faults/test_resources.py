"""Resources run out: a full disk, a read-only state folder, too many open files.

Real faults, not mocks: the disk is a small tmpfs mounted for the test (a filler file takes its
last page), the read-only folder a read-only bind mount, the open files a low ``RLIMIT_NOFILE``
set in the child before it runs (and raised again from outside with ``prlimit``). Mounting needs
root (CI and this machine run as root): there, and wherever ``CI`` is set, a mount that fails
fails the test; elsewhere those tests skip and say so. Each time
``--headless`` says what failed in one JSON line, the rest keeps working, and it recovers once
the resource is back.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shlex
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.demo.launcher import DemoFleet
from tests.conftest import cannot_run
from tests.faults.helpers import cli_env, descendants, wait_for
from tests.headless_proc import Headless


@contextlib.contextmanager
def mounted(target: Path, *options: str, source: str = "tmpfs", kind: str | None = "tmpfs") -> Iterator[None]:
    """``mount`` for the block, unmounted after (lazily: a killed child may still hold a file).

    A failed mount fails the test as root and under CI (``CI`` set, as CI services do), where
    it must work; only someone else's run skips (as ``test_control_plane``'s read-only mount)."""
    target.mkdir(parents=True, exist_ok=True)
    argv = ["mount", *(["-t", kind] if kind else []), *options, source, str(target)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        why = f"cannot mount here ({done.stderr.strip() or done.returncode})"
        cannot_run(f"{why}: {shlex.join(argv)} (run as root)", required="running as root" if os.geteuid() == 0 else "")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


def fill(folder: Path) -> Path:
    """Take every free page of ``folder``'s file system; returns the filler (delete it to free)."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


def said(run: Headless, *needles: str) -> list[str]:
    """Messages of ``run``'s error events (problems and control-plane errors) holding every needle."""
    messages = (
        f"{event.get('source', 'control plane')}: {event.get('message', '')}"
        for event in run.find("error") + run.find("control-error")
    )
    return [message for message in messages if all(n in message for n in needles)]


@pytest.fixture
def fleet(server: libtmux.Server) -> Iterator[DemoFleet]:
    demo = DemoFleet.start(4, ServerAddress(socket_name=server.socket_name))
    try:
        yield demo
    finally:
        demo.stop()


def _args(fleet: DemoFleet, *extra: str) -> list[str]:
    return ["-L", str(fleet.server.socket_name), *extra]


def test_a_full_disk_is_said_survived_and_recovered(fleet: DemoFleet, tmp_path: Path) -> None:
    """The state folder (log file) and a project's ``.nbs/`` (registry) on full disks."""
    home = tmp_path / "home"
    state = home / ".local" / "state"
    project = next(p for p in fleet.projects if p.name == "docs-site")
    nbs = project / ".nbs"
    saved = tmp_path / "nbs-before"
    shutil.copytree(nbs, saved)
    with mounted(state, "-o", "size=2m"), mounted(nbs, "-o", "size=2m"):
        shutil.copytree(saved, nbs, dirs_exist_ok=True)
        env = cli_env(home, NBS_SERVICE="off", NBS_POLL_INTERVAL="2")
        with Headless(_args(fleet, "--project", str(project)), env=env) as headless:
            wait_for(lambda: headless.has("registry-changed"), 30, "the plane")
            log_file = state / "nbs-tui" / "nbs-tui.log"
            wait_for(log_file.exists, 10, "the log file")
            with log_file.open("a") as fh:  # its last page full: the next line needs a new one
                fh.write("\n" * (-log_file.stat().st_size % 4096))
            fillers = [fill(state), fill(nbs)]
            inbox = nbs / "control-inbox"
            with inbox.open("a") as fh:  # fits in the inbox's last page: an agent's append still works
                fh.write("register-hub .nbs/hub-after-full\n")
            wait_for(lambda: said(headless, "control-registry", "No space left on device"), 20, "the registry error")
            client = descendants(headless.proc.pid)[0]  # a problem to log: a control client dies
            os.kill(client, signal.SIGKILL)
            wait_for(lambda: said(headless, "log file", "No space left on device"), 20, "the log file error")
            assert headless.proc.poll() is None
            states = len(headless.find("state"))
            for filler in fillers:
                filler.unlink()  # room again
            registry = nbs / "control-registry"
            wait_for(lambda: "hub:.nbs/hub-after-full" in registry.read_text(), 20, "the registry saved")
            size = log_file.stat().st_size
            wait_for(lambda: len(descendants(headless.proc.pid)) >= 1, 20, "a control client again")
            os.kill(descendants(headless.proc.pid)[0], signal.SIGKILL)  # another problem to log
            wait_for(lambda: log_file.stat().st_size > size, 20, "the log written again")
            assert len(headless.find("state")) >= states  # it kept reading panes
    print("\n".join(said(headless, "No space")))


def test_a_read_only_state_folder_is_said_and_recovered(fleet: DemoFleet, tmp_path: Path) -> None:
    home = tmp_path / "home"
    state = home / ".local" / "state"
    (state / "nbs-tui").mkdir(parents=True)
    with mounted(state, "--bind", "-o", "ro", source=str(state), kind=None):
        env = cli_env(home, NBS_SERVICE="off", NBS_POLL_INTERVAL="2")
        with Headless(_args(fleet), env=env) as headless:
            wait_for(lambda: said(headless, "log file", "Read-only file system"), 30, "the log file error")
            wait_for(lambda: headless.has("state"), 30, "panes read all the same")
            subprocess.run(["mount", "-o", "remount,bind,rw", str(state)], check=True)
            os.kill(descendants(headless.proc.pid)[0], signal.SIGKILL)  # a problem to log
            log_file = state / "nbs-tui" / "nbs-tui.log"
            wait_for(log_file.exists, 30, "the log file, once the folder is writable")
            wait_for(lambda: "control client" in log_file.read_text(), 30, "the problem in the log")
    print("\n".join(said(headless, "Read-only")))


def test_too_many_open_files_is_said_and_recovered(fleet: DemoFleet, tmp_path: Path) -> None:
    env = cli_env(tmp_path / "home", NBS_SERVICE="off", NBS_POLL_INTERVAL="2")
    with Headless(_args(fleet), env=env, nofile=11) as headless:
        wait_for(lambda: said(headless, "Too many open files"), 30, "too many open files said")
        assert headless.proc.poll() is None
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.prlimit(headless.proc.pid, resource.RLIMIT_NOFILE, (1024, hard))
        wait_for(lambda: headless.has("lease", acting=True), 30, "the sidecar acting once files can be opened")
        wait_for(lambda: headless.has("state"), 30, "panes read")
    print("\n".join(sorted(set(said(headless, "Too many open files")))))
