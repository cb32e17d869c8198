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
import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libtmux
import pytest

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.demo.launcher import DemoFleet
from tests.faults.helpers import REPO, cli_env, descendants, wait_for


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
        if os.geteuid() == 0 or os.environ.get("CI"):
            pytest.fail(f"{why}, though root and CI must: {shlex.join(argv)}")
        pytest.skip(f"{why}: run as root")
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


class Headless:
    """``nbs-tui --headless`` with its JSON lines collected by a thread."""

    def __init__(self, argv: list[str], env: dict[str, str], nofile: int | None = None) -> None:
        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

        self.events: list[dict[str, Any]] = []
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=REPO,
                                     text=True, preexec_fn=limit, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.events.append(json.loads(line))

    def said(self, *needles: str) -> list[str]:
        """Messages of error events (problems and control-plane errors) holding every needle."""
        out = []
        for event in list(self.events):
            if event.get("event") in ("error", "control-error"):
                message = f"{event.get('source', 'control plane')}: {event.get('message', '')}"
                if all(n in message for n in needles):
                    out.append(message)
        return out

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(5)


@pytest.fixture
def fleet(server: libtmux.Server) -> Iterator[DemoFleet]:
    demo = DemoFleet.start(4, ServerAddress(socket_name=server.socket_name))
    try:
        yield demo
    finally:
        demo.stop()


def _argv(fleet: DemoFleet, *extra: str) -> list[str]:
    return [sys.executable, "-m", "nbs_tui", "-L", str(fleet.server.socket_name), *extra, "--headless"]


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
        headless = Headless(_argv(fleet, "--project", str(project)), env)
        try:
            wait_for(lambda: any(e.get("event") == "registry-changed" for e in headless.events), 30, "the plane")
            log_file = state / "nbs-tui" / "nbs-tui.log"
            wait_for(log_file.exists, 10, "the log file")
            with log_file.open("a") as fh:  # its last page full: the next line needs a new one
                fh.write("\n" * (-log_file.stat().st_size % 4096))
            fillers = [fill(state), fill(nbs)]
            inbox = nbs / "control-inbox"
            with inbox.open("a") as fh:  # fits in the inbox's last page: an agent's append still works
                fh.write("register-hub .nbs/hub-after-full\n")
            wait_for(lambda: headless.said("control-registry", "No space left on device"), 20, "the registry error")
            client = descendants(headless.proc.pid)[0]  # a problem to log: a control client dies
            os.kill(client, signal.SIGKILL)
            wait_for(lambda: headless.said("log file", "No space left on device"), 20, "the log file error")
            assert headless.proc.poll() is None
            states = len([e for e in headless.events if e.get("event") == "state"])
            for filler in fillers:
                filler.unlink()  # room again
            registry = nbs / "control-registry"
            wait_for(lambda: "hub:.nbs/hub-after-full" in registry.read_text(), 20, "the registry saved")
            size = log_file.stat().st_size
            wait_for(lambda: len(descendants(headless.proc.pid)) >= 1, 20, "a control client again")
            os.kill(descendants(headless.proc.pid)[0], signal.SIGKILL)  # another problem to log
            wait_for(lambda: log_file.stat().st_size > size, 20, "the log written again")
            assert len([e for e in headless.events if e.get("event") == "state"]) >= states  # it kept reading panes
        finally:
            headless.stop()
    print("\n".join(headless.said("No space")))


def test_a_read_only_state_folder_is_said_and_recovered(fleet: DemoFleet, tmp_path: Path) -> None:
    home = tmp_path / "home"
    state = home / ".local" / "state"
    (state / "nbs-tui").mkdir(parents=True)
    with mounted(state, "--bind", "-o", "ro", source=str(state), kind=None):
        env = cli_env(home, NBS_SERVICE="off", NBS_POLL_INTERVAL="2")
        headless = Headless(_argv(fleet), env)
        try:
            wait_for(lambda: headless.said("log file", "Read-only file system"), 30, "the log file error")
            wait_for(lambda: any(e.get("event") == "state" for e in headless.events), 30, "panes read all the same")
            subprocess.run(["mount", "-o", "remount,bind,rw", str(state)], check=True)
            os.kill(descendants(headless.proc.pid)[0], signal.SIGKILL)  # a problem to log
            log_file = state / "nbs-tui" / "nbs-tui.log"
            wait_for(log_file.exists, 30, "the log file, once the folder is writable")
            wait_for(lambda: "control client" in log_file.read_text(), 30, "the problem in the log")
        finally:
            headless.stop()
    print("\n".join(headless.said("Read-only")))


def test_too_many_open_files_is_said_and_recovered(fleet: DemoFleet, tmp_path: Path) -> None:
    env = cli_env(tmp_path / "home", NBS_SERVICE="off", NBS_POLL_INTERVAL="2")
    headless = Headless(_argv(fleet), env, nofile=11)
    try:
        wait_for(lambda: headless.said("Too many open files"), 30, "too many open files said")
        assert headless.proc.poll() is None
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.prlimit(headless.proc.pid, resource.RLIMIT_NOFILE, (1024, hard))
        wait_for(lambda: any(e.get("event") == "lease" and e.get("acting") for e in headless.events), 30,
                 "the sidecar acting once files can be opened")
        wait_for(lambda: any(e.get("event") == "state" for e in headless.events), 30, "panes read")
    finally:
        headless.stop()
    print("\n".join(sorted(set(headless.said("Too many open files")))))
