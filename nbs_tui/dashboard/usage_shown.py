"""The dashboard's usage figures (issue 37 item 3): the status bar's meter and the usage view.

One `nbs_tui.claude.usage_spool.UsageReader` follows the usage spool the status-line recorder
appends to; it is read in a thread worker every `READ_SECONDS` (the first read of a big spool may
take a moment), and what it found is shown on the UI thread: each account's 5-hour and 7-day use
in the status bar, and the whole of it in the usage view (``U``, `nbs_tui.widgets.usage_screen`).
Accounts at a cap are said in the view (`nbs_tui.core.fleet.budget_rules.cap_reason`), from the
same figures the lease holder decides on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from textual.app import App

from nbs_tui.claude.status_recorder import usage_spool_for
from nbs_tui.claude.usage_spool import UsageReader
from nbs_tui.config import Settings
from nbs_tui.core.fleet.usage import AccountUsage, meter_short, meter_text
from nbs_tui.widgets.status_bar import StatusBar
from nbs_tui.widgets.usage_screen import UsageScreen

READ_SECONDS = 5.0

log = logging.getLogger(__name__)


class UsageShown:
    def __init__(self, app: App[Any], settings: Settings, status_bar: StatusBar, *, wall: Callable[[], float]) -> None:
        self._app = app
        self._settings = settings
        self._status_bar = status_bar
        self._wall = wall
        self._reader = UsageReader(usage_spool_for(settings.hook_spool), settings.accounts)
        self._lock = threading.Lock()
        """Held by the one reading; the view's loads take it too."""
        self._read_at = float("-inf")
        self._reading = False

    def accounts(self) -> list[AccountUsage]:
        with self._lock:
            return self._reader.accounts(self._wall())

    def tick(self) -> None:
        """Once a second (the app's clock): a read in a thread when one is due."""
        now = self._wall()
        if self._reading or now - self._read_at < READ_SECONDS:
            return
        self._reading, self._read_at = True, now
        threading.Thread(target=self._read, name="nbs-usage", daemon=True).start()

    def _read(self) -> None:
        try:
            with self._lock:
                self._reader.read()
                accounts = self._reader.accounts(self._wall())
            self._app.call_from_thread(self._status_bar.set_usage, meter_text(accounts), meter_short(accounts))
        except Exception:  # the meter is help: logged, and the next read tries again
            log.exception("usage spool not read")
        finally:
            self._reading = False

    def open(self) -> None:
        with self._lock:
            self._reader.read()
        self._app.push_screen(UsageScreen(self.accounts, self._wall, self._settings.budget))
