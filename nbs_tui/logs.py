"""The log file: where every ``log.exception`` and every reported problem is kept.

`install` puts one rotating file handler on the ``nbs_tui`` logger (1 MB, 3 old files kept)
at ``$XDG_STATE_HOME/nbs-tui/nbs-tui.log`` (default ``~/.local/state/nbs-tui/``); the CLI calls
it for the dashboard, ``--headless`` and the demo, never for quick subcommands. It also sends
an exception that escapes a thread to the log, where a full-screen UI would otherwise hide it.
Nothing is printed to the terminal: under the dashboard stderr is not where a person looks.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path

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


def log_path(env: Mapping[str, str] | None = None) -> Path:
    return state_dir(env) / "nbs-tui.log"


_installed: logging.Handler | None = None


def install(path: Path | None = None, level: int = logging.INFO) -> Path:
    """Log ``nbs_tui.*`` to a rotating file (once per process; a second call moves it to
    ``path``). Returns the file's path. Raises OSError when the directory cannot be made."""
    import logging.handlers  # here: the CLI imports this module for --help, which must start fast

    global _installed
    path = path or log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.handlers.RotatingFileHandler(
        path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", delay=False
    )
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
