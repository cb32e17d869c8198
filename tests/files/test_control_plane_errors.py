"""A control-plane listener that raises: the failure is logged and reported as an error event
(and to the problem sink), never printed under the full-screen UI, and the plane keeps going."""

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
    PlaneError,
    RegistryChanged,
    SnapshotChanged,
    event_as_json,
)


class Breaking:
    """A listener that raises on every snapshot and records everything else."""

    def __init__(self) -> None:
        self.events: list[ControlEvent] = []
        self.lock = threading.Lock()

    def __call__(self, event: ControlEvent) -> None:
        if isinstance(event, SnapshotChanged):
            raise RuntimeError("panel went away")
        with self.lock:
            self.events.append(event)

    def errors(self) -> list[PlaneError]:
        with self.lock:
            return [e for e in self.events if isinstance(e, PlaneError)]


def start(root: Path, listener: Callable[[ControlEvent], None], **kwargs: object) -> ControlPlane:
    (root / ".nbs").mkdir()
    (root / ".nbs" / "control-inbox").write_text("register-hub h\n")
    plane = ControlPlane(Settings(projects=(root,)), listener, watch=False, **kwargs)  # type: ignore[arg-type]
    plane.start()
    return plane


def test_listener_failure_is_an_error_event_and_a_log_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    listener = Breaking()
    with caplog.at_level(logging.ERROR, logger="nbs_tui.files.control_plane"):
        plane = start(tmp_path, listener)
        try:
            assert plane.flush()
        finally:
            plane.stop()
    errors = listener.errors()
    assert errors, "no error event for the failed listener"
    assert "listener failed on SnapshotChanged" in errors[0].message and "panel went away" in errors[0].message
    assert event_as_json(errors[0])["event"] == "control-error"
    # the plane went on after the failure: the registry was still written and reported
    assert any(isinstance(e, RegistryChanged) for e in listener.events)
    assert (tmp_path / ".nbs" / "control-registry").read_text().splitlines()[-1] == "hub:h"
    records = [r for r in caplog.records if "listener failed" in r.getMessage()]
    assert records and records[0].exc_info is not None
    assert "listener failed" not in capfd.readouterr().err


def test_with_a_problem_sink_the_failure_goes_there_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    listener = Breaking()
    problems: list[tuple[str, str]] = []
    with caplog.at_level(logging.ERROR, logger="nbs_tui.files.control_plane"):
        plane = start(tmp_path, listener, problem=lambda source, text: problems.append((source, text)))
        try:
            assert plane.flush()
        finally:
            plane.stop()
    assert problems and problems[0][0] == "control plane"
    assert "listener failed on SnapshotChanged" in problems[0][1] and "panel went away" in problems[0][1]
    assert listener.errors() == []  # not reported twice
    assert any("listener failed" in r.getMessage() for r in caplog.records)


def test_a_listener_that_also_fails_on_the_report_is_only_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / ".nbs").mkdir()
    calls: list[str] = []

    def always_fails(event: ControlEvent) -> None:
        calls.append(type(event).__name__)
        raise RuntimeError("broken")

    plane = ControlPlane(Settings(projects=(tmp_path,)), always_fails, watch=False)
    with caplog.at_level(logging.ERROR, logger="nbs_tui.files.control_plane"):
        plane.start()
        try:
            assert plane.flush()
        finally:
            plane.stop()
    # each failure is reported once, not in a loop: every PlaneError follows another event
    assert calls and all(
        name != "PlaneError" or (index > 0 and calls[index - 1] != "PlaneError") for index, name in enumerate(calls)
    )
    assert any("report of its own failure" in r.getMessage() for r in caplog.records)
