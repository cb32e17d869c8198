"""``nbs-tui --headless`` as a real process for tests: its JSON lines collected as they come.

Use it as a context manager; leaving the block stops the process with ``stop_signal`` (SIGTERM by
default, then SIGKILL if it does not end), and ``returncode``/``stderr`` say how it ended::

    with Headless(["-L", socket], env=env) as run:
        wait_for(lambda: run.has("poll", pane=pane_id, result="submitted"))
    assert run.returncode == 0, run.stderr

stdout and stderr are both read as they come (a pipe nobody reads blocks the process once ~64 KB
wait in it). Every stdout line must be JSON: leaving the block fails the test on any other line
(``bad``), unless the block already failed.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

REPO = Path(__file__).resolve().parents[1]


def _limit_files(nofile: int) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    return limit


class Headless:
    def __init__(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stop_signal: int = signal.SIGTERM,
        nofile: int | None = None,
        prefix: Sequence[str] = (),
    ) -> None:
        """``nofile``: the process's soft limit of open files (``RLIMIT_NOFILE``), set in the
        child before it runs. ``prefix``: words before ``python -m nbs_tui`` that exec it
        (``nsenter ... --``)."""
        self.stop_signal = stop_signal
        self.events: list[dict[str, Any]] = []
        """Every JSON line printed so far, parsed, in order."""
        self.bad: list[str] = []
        """Lines that were not JSON (there should be none)."""
        self.returncode: int | None = None
        self.stderr = ""
        """All the process wrote to stderr (once it ended: `stop`)."""
        self._stderr_lines: list[str] = []
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "nbs_tui", *args, "--headless"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, cwd=REPO,
            env=dict(env) if env is not None else None, preexec_fn=_limit_files(nofile) if nofile is not None else None,
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, name="headless-events", daemon=True)
        self._reader.start()
        self._stderr_reader = threading.Thread(target=self._drain_stderr, name="headless-stderr", daemon=True)
        self._stderr_reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                self.bad.append(line)

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr_lines.append(line)

    def has(self, event: str, **fields: Any) -> bool:
        """Whether an event of this kind with these field values was printed."""
        return bool(self.find(event, **fields))

    def find(self, event: str, **fields: Any) -> list[dict[str, Any]]:
        """The events of this kind with these field values, in order."""
        return [
            e for e in list(self.events)
            if e.get("event") == event and all(e.get(k) == v for k, v in fields.items())
        ]  # fmt: skip

    def stop(self, timeout: float = 20.0) -> int:
        """Send ``stop_signal`` and wait; a process that does not end in time is killed (and the
        return code then says so). Safe to call twice."""
        if self.returncode is None:
            if self.proc.poll() is None:
                self.proc.send_signal(self.stop_signal)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self._reader.join(5)
            self._stderr_reader.join(5)
            self.stderr = "".join(self._stderr_lines)
            self.returncode = self.proc.returncode
        return self.returncode

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        if kind is None and self.bad:
            raise AssertionError(
                f"--headless printed {len(self.bad)} line(s) that are not JSON: {self.bad[:5]!r}"
                f"\nstderr: {self.stderr[-2000:]}"
            )
