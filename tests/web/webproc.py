"""`nbs-tui web` as a real process for tests, and what a browser page of it shows.

`WebProcess` starts the server on a free loopback port (``--bind 127.0.0.1:0``), reads the URL it
prints, and stops it (SIGTERM) at the end of the ``with`` block. `ScreenText` records what a
page's websocket receives: the dashboard's frames are terminal output (xterm.js draws them on a
canvas, so the page's DOM holds no text), and a test reads them with the escapes taken out.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parents[2]

if TYPE_CHECKING:
    from playwright.sync_api import Page


def wait_until(condition: Callable[[], object], *, timeout: float = 30.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)


def web_config(tmp_path: Path) -> Path:
    """A settings file keeping the tabs' hooks, action log and Claude's home in ``tmp_path``."""
    config = tmp_path / "config.toml"
    config.write_text(
        f'claude_home = "{tmp_path / "claude-home"}"\nhook_spool = "{tmp_path / "hooks.jsonl"}"\n'
        f'action_log = "{tmp_path / "actions.log"}"\n'
    )
    return config


def web_env(tmp_path: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The server's (and its tabs') environment: its state folder in ``tmp_path``, no service
    (the tab's dashboard acts itself) unless ``extra`` says otherwise."""
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    env.update(XDG_STATE_HOME=str(tmp_path / "state"), NBS_SERVICE="off")
    env.update(extra or {})
    return env


def children(pid: int) -> list[int]:
    """Live child processes of ``pid`` (a web server's: its tabs' dashboards)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class WebProcess:
    def __init__(self, args: Sequence[str], *, env: Mapping[str, str], wait_url: bool = True) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nbs_tui", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, cwd=REPO,
            env=dict(env),
        )  # fmt: skip
        self.lines: list[str] = []
        self.stderr_lines: list[str] = []
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.stderr_lines), daemon=True).start()
        self.url = ""
        if wait_url:
            wait_until(lambda: self.lines or self.proc.poll() is not None, timeout=30, what="the printed URL")
            if not self.lines:
                self.stop()
                raise AssertionError(f"nbs-tui web ended ({self.proc.returncode}): {self.stderr}")
            self.url = self.lines[0].strip()

    @staticmethod
    def _read(stream: object, into: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            into.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT/`` (the printed URL without its token)."""
        return self.url.split("?", 1)[0]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self) -> WebProcess:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


RECORD_FRAMES = """
(() => {
  window.__nbsFrames = "";
  const decoder = new TextDecoder();
  const Original = window.WebSocket;
  window.WebSocket = class extends Original {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        const text = typeof event.data === "string" ? event.data : decoder.decode(event.data, {stream: true});
        window.__nbsFrames = (window.__nbsFrames + text).slice(-4000000);
      });
    }
  };
})();
"""

_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]P_^][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


class ScreenText:
    """What ``page``'s websockets received since `clear`, escapes removed (call before goto)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        page.add_init_script(RECORD_FRAMES)

    def text(self) -> str:
        raw = self.page.evaluate("window.__nbsFrames || ''")
        return _ESCAPES.sub("", str(raw))

    def clear(self) -> None:
        self.page.evaluate("window.__nbsFrames = ''")

    def wait_for(self, needle: str, *, timeout: float = 45.0) -> None:
        wait_until(lambda: needle in self.text(), timeout=timeout, what=f"{needle!r} in the browser")
