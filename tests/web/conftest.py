"""Fixtures for the browser view's tests: `nbs-tui web` as a real process, and a real Chromium.

Playwright cannot download its own browsers here, so the tests drive Debian's ``chromium``
(scripts/test installs it). Without it a browser test is skipped, except under CI (``CI=true``)
or ``NBS_REQUIRE_CLAUDE=1``, where it fails: CI must not pass having opened no browser.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import cannot_run
from tests.realclaude.conftest import claude_binary, claude_fleet

if TYPE_CHECKING:
    from playwright.sync_api import Browser

__all__ = ["browser", "claude_binary", "claude_fleet"]


def chromium_path() -> str:
    """Debian's chromium; skip without it (fail under CI or NBS_REQUIRE_CLAUDE)."""
    found = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if found is None:
        cannot_run(
            "chromium is not installed (apt-get install chromium; scripts/test does it)",
            required="NBS_REQUIRE_CLAUDE is set" if os.environ.get("NBS_REQUIRE_CLAUDE") else "",
        )
    return found


@pytest.fixture
def browser() -> Iterator[Browser]:
    """A headless Chromium for one test. Not one for the session: Playwright's sync API keeps an
    asyncio loop marked running in this thread while it is open, and every later test of the
    same worker that runs a loop of its own (``asyncio.run``, pytest-asyncio) would then fail
    with "cannot be called from a running event loop". A launch costs ~1 s."""
    path = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield launched
        finally:
            launched.close()
