"""Shared test configuration. libtmux's pytest plugin (loaded automatically) gives each test
that asks for ``server`` or ``session`` a private tmux server on its own socket."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import libtmux
import pytest
from hypothesis import HealthCheck, settings

import nbs_tui.runtime.runtime

# Property tests run a fixed, derandomized set of examples with no example database, so a run
# in CI and a run here try the same inputs and a failure reproduces (its example is printed).
# NBS_HYPOTHESIS=explore tries new random inputs, many more, when hunting bugs by hand.
settings.register_profile(
    "nbs", derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("explore", database=None, deadline=None, max_examples=2000, print_blob=True)
settings.load_profile("explore" if os.environ.get("NBS_HYPOTHESIS") == "explore" else "nbs")

REPO_ROOT = Path(__file__).resolve().parent.parent
PEER_CORPUS = Path(os.environ["NBS_PEER_CORPUS"]) if os.environ.get("NBS_PEER_CORPUS") else next(
    (
        up / "shared" / "corpus" / "peer-screens"
        for up in REPO_ROOT.parents
        if (up / "shared" / "corpus" / "peer-screens").is_dir()
    ),
    REPO_ROOT.parent / "shared" / "corpus" / "peer-screens",
)
"""``$NBS_PEER_CORPUS``, else next to the checkout or next to a folder above it (a worktree under
``wt/`` finds it too)."""


def in_ci() -> bool:
    """Under CI (``CI=true``, as CI services set it), where a test that cannot run must fail."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def cannot_run(why: str, *, required: str = "") -> NoReturn:
    """A test that cannot run here (a tool or a corpus missing): a skip that says ``why``, but
    a failure under CI, or wherever ``required`` says it must run (why it must, e.g. "running
    as root"): CI installs all the tests need (scripts/test), so a skip there would be a test
    that passes having run nothing."""
    if in_ci():
        pytest.fail(f"CI is set but {why}", pytrace=False)
    if required:
        pytest.fail(f"{required} but {why}", pytrace=False)
    pytest.skip(why)


def require_peer_corpus() -> Path:
    """The peer corpus; without it a skip here, a failure under CI (as the real Claude Code
    CLI's tests fail under ``NBS_REQUIRE_CLAUDE``): CI must not pass having read none of it."""
    if not (PEER_CORPUS / "labels.tsv").is_file():
        cannot_run(f"the peer corpus not found at {PEER_CORPUS} (set NBS_PEER_CORPUS to its folder)")
    return PEER_CORPUS


@pytest.fixture
def peer_corpus() -> Path:
    """Claude Code screens recorded by other tools' test suites (read in place, never copied)."""
    return require_peer_corpus()


QUIET_SHELL_CONF = REPO_ROOT / "tests" / "tmux-test.conf"


@pytest.fixture
def server(server: libtmux.Server) -> libtmux.Server:
    """libtmux's private server, read from `QUIET_SHELL_CONF` when it starts: a pane's shell
    skips the user's profile and rc files (here they ran pyenv's rehash, ~500 processes, in
    every pane the tests opened, and its prompt hook after every command)."""
    server.config_file = str(QUIET_SHELL_CONF)
    return server


@pytest.fixture(autouse=True)
def _own_state_folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """nbs-tui's state (the fleet memory an acting runtime keeps, logs, pid files) goes to a
    folder of the test run, never the user's ~/.local/state; a test that sets its own keeps it."""
    if not os.environ.get("XDG_STATE_HOME"):
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-state"))


@pytest.fixture(autouse=True)
def _no_background_service(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dashboard under test acts itself instead of starting a detached ``nbs-tui service``
    (``service = "auto"``), in this process and in the CLIs tests start; a test of that very
    behaviour is marked ``service_auto``."""
    if request.node.get_closest_marker("service_auto") is None:
        monkeypatch.setattr(nbs_tui.runtime.runtime, "AUTO_SERVICE", False)
        monkeypatch.setenv("NBS_SERVICE", "off")


@pytest.fixture(autouse=True)
def _no_inherited_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``COLUMNS``/``LINES`` for the processes a test starts: a dashboard in a 160x48 pty
    must take its size from the pty, as in a real terminal. GNU readline, once imported in the
    pytest process, exports 80x24 into its C environment (not into ``os.environ``); pytest-xdist's
    workers start with them in ``os.environ``, so every env built from it passed 80x24 on, and
    Textual (like `shutil.get_terminal_size`) takes those variables first."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
