"""The browser view's endpoint file: private, atomic, and ignored when it is not."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from nbs_tui.files.web_endpoint import (
    WebEndpoint,
    endpoint_path,
    read_endpoint,
    remove_endpoint,
    write_endpoint,
)


def _endpoint(pid: int | None = None) -> WebEndpoint:
    return WebEndpoint("https://127.0.0.1:8443/", os.getpid() if pid is None else pid, b"k" * 32)


def test_written_private_and_read_back(tmp_path: Path) -> None:
    path = endpoint_path(tmp_path / "state")
    write_endpoint(path, _endpoint())
    assert (path.stat().st_mode & 0o777) == 0o600
    assert read_endpoint(path) == _endpoint()


def test_an_older_file_with_a_looser_mode_is_replaced_private(tmp_path: Path) -> None:
    path = endpoint_path(tmp_path)
    path.write_text("{}")
    path.chmod(0o644)
    write_endpoint(path, _endpoint())
    assert (path.stat().st_mode & 0o777) == 0o600


def test_a_file_others_can_read_is_not_trusted(tmp_path: Path) -> None:
    path = endpoint_path(tmp_path)
    write_endpoint(path, _endpoint())
    path.chmod(0o644)
    assert read_endpoint(path) is None


def test_a_gone_process_has_no_endpoint(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    path = endpoint_path(tmp_path)
    write_endpoint(path, _endpoint(gone.pid))
    assert read_endpoint(path) is None
    assert read_endpoint(path, require_alive=False) == _endpoint(gone.pid)


def test_missing_or_malformed_reads_as_none(tmp_path: Path) -> None:
    path = endpoint_path(tmp_path)
    assert read_endpoint(path) is None
    path.write_text("not json")
    path.chmod(0o600)
    assert read_endpoint(path) is None


def test_removed_only_by_its_own_process(tmp_path: Path) -> None:
    path = endpoint_path(tmp_path)
    write_endpoint(path, _endpoint())
    remove_endpoint(path, os.getpid() + 1)
    assert path.exists()
    remove_endpoint(path, os.getpid())
    assert not path.exists()
