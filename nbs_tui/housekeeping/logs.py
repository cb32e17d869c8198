"""The log file: where every ``log.exception`` and every reported problem is kept.

`install` puts one rotating file handler on the ``nbs_tui`` logger (1 MB, 3 old files kept)
at ``$XDG_STATE_HOME/nbs-tui/nbs-tui.log`` (default ``~/.local/state/nbs-tui/``); the CLI calls
it for the dashboard, ``--headless`` and the demo, never for quick subcommands. It also sends
an exception that escapes a thread to the log, where a full-screen UI would otherwise hide it.
Nothing is printed to the terminal: under the dashboard stderr is not where a person looks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging.handlers

MAX_BYTES = 1_000_000
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s"

problem_log = logging.getLogger("nbs_tui.problems")
"""Every problem a backend reports, one line each (``source: message``)."""


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """nbs-tui's XDG state directory (its log lives there)."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path(env.get("HOME") or Path.home()) / ".local" / "state"
    return root / "nbs-tui"


def runtime_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """``$XDG_RUNTIME_DIR`` when it is an absolute folder we may write in (the user's own, gone
    at logout: for sockets and locks); None without one (callers fall back to the temp folder)."""
    env = os.environ if env is None else env
    base = env.get("XDG_RUNTIME_DIR") or ""
    if os.path.isabs(base) and os.path.isdir(base) and os.access(base, os.W_OK):
        return Path(base)
    return None


def log_path(env: Mapping[str, str] | None = None) -> Path:
    return state_dir(env) / "nbs-tui.log"


_installed: logging.Handler | None = None


_failure = ""
"""Why the log file cannot be written right now ("" while it can)."""
_failure_sinks: list[Callable[[str, str], None]] = []


def failure() -> str:
    """Why the log file cannot be written now, or ""."""
    return _failure


def report_failures(sink: Callable[[str, str], None]) -> Callable[[], None]:
    """``sink("log file", message)`` hears when the log file cannot be written (at once if it
    cannot now); returns the unsubscriber. A problem sink that itself logs is fine: the same
    failure is said once."""
    _failure_sinks.append(sink)
    if _failure:
        sink("log file", _failure)

    def unsubscribe() -> None:
        if sink in _failure_sinks:
            _failure_sinks.remove(sink)

    return unsubscribe


def _set_failure(message: str) -> None:
    global _failure
    if message == _failure:
        return
    _failure = message
    if message:
        for sink in list(_failure_sinks):
            with contextlib.suppress(Exception):  # the log is what failed: nowhere else to say it
                sink("log file", message)


def _handler_class() -> type[logging.handlers.RotatingFileHandler]:
    import logging.handlers  # here: the CLI imports this module for --help, which must start fast

    class Handler(logging.handlers.RotatingFileHandler):
        """Never prints a failed write to stderr (under the dashboard it would draw over the
        screen): says it once to whoever `report_failures` asked, and tries again with every
        record, so the log resumes when the disk has room or the folder is writable again."""

        failed = False

        def _open(self) -> Any:
            Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
            return super()._open()

        def emit(self, record: logging.LogRecord) -> None:
            self.failed = False
            super().emit(record)
            if not self.failed and _failure:
                _set_failure("")

        def handleError(self, record: logging.LogRecord) -> None:
            self.failed = True
            error = sys.exc_info()[1]
            if self.stream is not None and isinstance(error, OSError):
                with contextlib.suppress(Exception):
                    self.stream.close()  # reopened (and the unwritten tail dropped) next time
                self.stream = None
            reason = getattr(error, "strerror", None) or error
            _set_failure(f"cannot write {self.baseFilename}: {reason}; the log misses lines until it can")

    return Handler


def install(path: Path | None = None, level: int = logging.INFO) -> Path:
    """Log ``nbs_tui.*`` to a rotating file (once per process; a second call moves it to
    ``path``). Returns the file's path. Never raises: a file that cannot be written is said
    through `failure` and `report_failures`, and tried again with every record."""
    global _installed
    path = path or log_path()
    handler = _handler_class()(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter(FORMAT))
    logger = logging.getLogger("nbs_tui")
    if _installed is not None:
        logger.removeHandler(_installed)
        _installed.close()
    logger.addHandler(handler)
    logger.setLevel(level)
    _installed = handler
    threading.excepthook = _thread_excepthook
    logger.info("nbs-tui started (pid %d), logging to %s", os.getpid(), path)
    return path


def uninstall() -> None:
    """Close the file and restore what `install` changed (tests)."""
    global _installed
    handler, _installed = _installed, None
    if handler is not None:
        logger = logging.getLogger("nbs_tui")
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        handler.close()
    threading.excepthook = threading.__excepthook__
    _set_failure("")


def installed_path() -> Path | None:
    """The file `install` opened, if any (the help screen shows it)."""
    handler = _installed
    if isinstance(handler, logging.FileHandler):
        return Path(handler.baseFilename)
    return None


def _thread_excepthook(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    name = args.thread.name if args.thread is not None else "?"
    logging.getLogger("nbs_tui").error("uncaught exception in thread %s", name, exc_info=args.exc_value)


def log_problem(source: str, message: str) -> None:
    """Write one reported problem to the log (any thread)."""
    problem_log.warning("%s: %s", source, message)
