"""The hook spool follows ``$XDG_STATE_HOME`` like the rest of nbs-tui's state: the installed hook
writes where the watcher reads; hooks installed before (for ``~/.local/state``) keep being read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbs_tui.claude.hooks import installed_events
from nbs_tui.claude.spool import SpoolReader
from nbs_tui.config import default_spool, legacy_spool, load_settings, xdg_spool

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A user with their own XDG_STATE_HOME, in this process and in the CLIs it runs."""
    home, state = tmp_path / "home", tmp_path / "xdg-state"
    home.mkdir()
    values = {"HOME": str(home), "XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(home / ".config")}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return {**os.environ, **values}


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "hooks", *args], capture_output=True, text=True, env=env,
        cwd=REPO, timeout=60, check=False,
    )  # fmt: skip


def run_installed_hook(settings_file: Path, event: str) -> None:
    """Run our installed Stop command the way Claude Code does: a shell, the payload on stdin."""
    command = installed_events(json.loads(settings_file.read_text()))["Stop"][0]
    payload = json.dumps({"hook_event_name": event, "session_id": "s1"}).encode()
    done = subprocess.run(["sh", "-c", command], input=payload, env={"PATH": os.environ["PATH"], "TMUX_PANE": "%3"},
                          capture_output=True, timeout=10, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr


def read_back(tmp_path: Path) -> tuple[Path, list[str]]:
    """The spool the watcher would read (the settings' default) and the events in it."""
    config = tmp_path / "empty.toml"
    config.write_text("")
    spool = load_settings(config_path=config).hook_spool
    return spool, [e.event for e in SpoolReader(spool, from_start=True).read()]


def test_the_spool_is_under_xdg_state_home_for_hook_and_reader(tmp_path: Path, env: dict[str, str]) -> None:
    expected = tmp_path / "xdg-state" / "nbs-tui" / "hooks.jsonl"
    settings_file = tmp_path / "settings.json"
    installed = cli(env, "install", "--settings-file", str(settings_file))
    assert installed.returncode == 0, installed.stderr
    assert f"spool {expected}" in installed.stdout
    run_installed_hook(settings_file, "Stop")
    assert read_back(tmp_path) == (expected, ["Stop"])
    status = cli(env, "status", "--settings-file", str(settings_file))
    assert status.returncode == 0, status.stdout
    assert f"spool: {expected} (" in status.stdout and "note:" not in status.stdout
    assert not (tmp_path / "home" / ".local").exists()


def test_hooks_installed_for_the_old_place_keep_being_read(tmp_path: Path, env: dict[str, str]) -> None:
    old = tmp_path / "home" / ".local" / "state" / "nbs-tui" / "hooks.jsonl"
    new = tmp_path / "xdg-state" / "nbs-tui" / "hooks.jsonl"
    assert (legacy_spool(), xdg_spool()) == (old, new)
    settings_file = tmp_path / "settings.json"
    # what an nbs-tui from before this change installed by default: an absolute path under ~
    assert cli(env, "install", "--settings-file", str(settings_file), "--spool", str(old)).returncode == 0
    run_installed_hook(settings_file, "Stop")
    assert read_back(tmp_path) == (old, ["Stop"])
    status = cli(env, "status", "--settings-file", str(settings_file))
    assert status.returncode == 0, status.stdout  # installed, and read where it writes
    assert "note: this spool is the one used before nbs-tui followed $XDG_STATE_HOME" in status.stdout
    assert f"--spool {new}" in status.stdout
    # moving them as the note says: both sides follow
    moved = cli(env, "install", "--settings-file", str(settings_file), "--spool", str(new))
    assert moved.returncode == 0, moved.stderr
    run_installed_hook(settings_file, "SessionEnd")
    assert read_back(tmp_path) == (new, ["SessionEnd"])
    assert "note:" not in cli(env, "status", "--settings-file", str(settings_file)).stdout


def test_without_xdg_state_home_the_spool_stays_where_it_was(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path)}
    where = tmp_path / ".local" / "state" / "nbs-tui" / "hooks.jsonl"
    assert default_spool(home) == legacy_spool(home) == where
    assert default_spool({**home, "XDG_STATE_HOME": "relative/ignored"}) == where  # the XDG spec's rule
    assert default_spool({**home, "XDG_STATE_HOME": str(tmp_path / "s")}) == tmp_path / "s" / "nbs-tui" / "hooks.jsonl"
