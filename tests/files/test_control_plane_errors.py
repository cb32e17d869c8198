"""A control-plane listener that raises: the failure is logged and reported to the problem sink
(the one route of `nbs_tui.core.fleet.problems`; the log's problem lines without one), never printed
under the full-screen UI, and the plane keeps going."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from nbs_tui.config import Settings
from nbs_tui.files.control_plane import (
    ControlEvent,
    ControlPlane,
    RegistryChanged,
    SnapshotChanged,
)


class Breaking:
    """A listener that raises on every snapshot and records everything else."""

    def __init__(self) -> None:
        self.events: list[ControlEvent] = []
        self.raised = 0
        self.lock = threading.Lock()

    def __call__(self, event: ControlEvent) -> None:
        with self.lock:
            if isinstance(event, SnapshotChanged):
                self.raised += 1
                raise RuntimeError("panel went away")
            self.events.append(event)


def start(root: Path, listener: Callable[[ControlEvent], None], **kwargs: object) -> ControlPlane:
    (root / ".nbs").mkdir()
    (root / ".nbs" / "control-inbox").write_text("register-hub h\n")
    plane = ControlPlane(Settings(projects=(root,)), listener, watch=False, **kwargs)  # type: ignore[arg-type]
    plane.start()
    return plane


def test_without_a_sink_the_failure_is_a_problem_line_of_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    listener = Breaking()
    with caplog.at_level(logging.WARNING, logger="nbs_tui"):
        plane = start(tmp_path, listener)
        try:
            assert plane.flush()
        finally:
            plane.stop()
    problems = [r.getMessage() for r in caplog.records if r.name == "nbs_tui.problems"]
    assert problems and problems[0].startswith("control plane: the listener failed on SnapshotChanged"), problems
    assert "panel went away" in problems[0]
    # the plane went on after the failure: the registry was still written and reported
    assert any(isinstance(e, RegistryChanged) for e in listener.events)
    assert (tmp_path / ".nbs" / "control-registry").read_text().splitlines()[-1] == "hub:h"
    records = [r for r in caplog.records if r.name == "nbs_tui.files.control_plane" and "listener failed" in r.getMessage()]
    assert records and records[0].exc_info is not None, "the traceback is logged too"
    assert "listener failed" not in capfd.readouterr().err


def test_with_a_problem_sink_each_failure_goes_there_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    listener = Breaking()
    problems: list[tuple[str, str]] = []
    with caplog.at_level(logging.ERROR, logger="nbs_tui.files.control_plane"):
        plane = start(tmp_path, listener, problem=lambda source, text: problems.append((source, text)))
        try:
            assert plane.flush()
        finally:
            plane.stop()
    assert problems and {source for source, _ in problems} == {"control plane"}
    assert "listener failed on SnapshotChanged" in problems[0][1] and "panel went away" in problems[0][1]
    assert len(problems) == listener.raised, "one report per failure, none for anything else"
    assert any("listener failed" in r.getMessage() for r in caplog.records)


def test_a_problem_sink_that_raises_is_only_logged_and_the_plane_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    def always_fails(event: ControlEvent) -> None:
        calls.append(type(event).__name__)
        raise RuntimeError("broken")

    def sink_fails(source: str, message: str) -> None:
        raise RuntimeError("the sink is broken too")

    with caplog.at_level(logging.ERROR, logger="nbs_tui.files.control_plane"):
        plane = start(tmp_path, always_fails, problem=sink_fails)
        try:
            assert plane.flush()
        finally:
            plane.stop()
    assert "SnapshotChanged" in calls and "RegistryChanged" in calls, calls
    assert (tmp_path / ".nbs" / "control-registry").read_text().splitlines()[-1] == "hub:h"
    assert any("the problem sink failed" in r.getMessage() for r in caplog.records)
