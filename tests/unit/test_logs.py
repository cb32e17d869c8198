"""The log file: where it goes (XDG state dir), that it receives log.exception and problems."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from nbs_tui.housekeeping import logs


def test_state_dir_follows_xdg_and_defaults_under_home() -> None:
    assert logs.log_path({"XDG_STATE_HOME": "/x/state", "HOME": "/h"}) == Path("/x/state/nbs-tui/nbs-tui.log")
    assert logs.log_path({"HOME": "/h"}) == Path("/h/.local/state/nbs-tui/nbs-tui.log")
    # the XDG spec: a relative value is invalid and ignored
    assert logs.log_path({"XDG_STATE_HOME": "rel", "HOME": "/h"}) == Path("/h/.local/state/nbs-tui/nbs-tui.log")


def test_install_logs_exceptions_problems_and_thread_crashes(tmp_path: Path) -> None:
    path = logs.install(tmp_path / "state" / "nbs-tui" / "nbs-tui.log")
    try:
        assert logs.installed_path() == path
        try:
            raise OSError("spool unreadable")
        except OSError:
            logging.getLogger("nbs_tui.claude.watcher").exception("claude signals cycle failed")
        logs.log_problem("tmux", "control client exited")

        def crash() -> None:
            raise ValueError("thread went down")

        worker = threading.Thread(target=crash, name="nbs-test-crash")
        worker.start()
        worker.join()
        text = path.read_text()
        assert "nbs_tui.claude.watcher: claude signals cycle failed" in text
        assert "OSError: spool unreadable" in text, "the traceback is kept"
        assert "nbs_tui.problems: tmux: control client exited" in text
        assert "uncaught exception in thread nbs-test-crash" in text and "ValueError" in text
    finally:
        logs.uninstall()
    assert logs.installed_path() is None and threading.excepthook is threading.__excepthook__
