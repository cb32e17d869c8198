"""The tests' ``--headless`` helper (`tests.headless_proc`): a process that writes much to stderr
is not held up by the pipe, and a stdout line that is not JSON fails the test.

The real ``nbs-tui --headless`` runs; a ``sitecustomize`` module on its ``PYTHONPATH`` (Python
imports it at start-up) writes the extra output before nbs-tui starts."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from tests.headless_proc import Headless

FLOOD = 256 * 1024
"""Bytes written to stderr first: four times what a pipe holds before its writer blocks."""


def _env(tmp_path: Path, startup: str) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(startup), encoding="utf-8")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"), "NBS_POLL_DISABLE": "1"}  # fmt: skip


def test_a_process_flooding_stderr_still_runs_and_its_stderr_is_kept(
    session: libtmux.Session, tmp_path: Path
) -> None:
    env = _env(tmp_path, f"""
        import sys
        sys.stderr.write("E" * {FLOOD} + "\\n")
        sys.stderr.flush()
    """)
    with Headless(["-L", str(session.server.socket_name)], env=env) as run:
        assert retry_until(lambda: run.has("start") or run.proc.poll() is not None, 30, raises=False)
        assert run.has("start"), (run.events, run.proc.poll())
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stderr.count("E") >= FLOOD


def test_a_line_that_is_not_json_fails_the_test(session: libtmux.Session, tmp_path: Path) -> None:
    env = _env(tmp_path, """
        import sys
        sys.stdout.write("not json, printed before nbs-tui starts\\n")
        sys.stdout.flush()
    """)
    with pytest.raises(AssertionError, match=r"not JSON.*not json, printed before"):  # noqa: SIM117
        with Headless(["-L", str(session.server.socket_name)], env=env) as run:
            assert retry_until(lambda: run.has("start") or run.proc.poll() is not None, 30, raises=False)
            assert run.has("start"), (run.events, run.proc.poll())
    assert run.bad == ["not json, printed before nbs-tui starts\n"]
