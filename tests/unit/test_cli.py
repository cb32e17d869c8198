"""The command line as a user meets it: help, version, exit codes and one-line messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbs_tui import __version__


def nbs_tui(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", *args],
        input=stdin, capture_output=True, text=True, timeout=60, env=env,
    )


def test_version_and_help() -> None:
    assert nbs_tui("--version").stdout.strip() == f"nbs-tui {__version__}"
    helped = nbs_tui("--help")
    assert helped.returncode == 0
    for word in ("-L NAME", "-S PATH", "--session", "--headless", "demo", "detect", "hooks"):
        assert word in helped.stdout


def test_invalid_arguments_exit_4_with_one_line() -> None:
    result = nbs_tui("--no-such-flag")
    assert result.returncode == 4
    assert result.stderr.count("\n") == 1
    assert "nbs-tui --help" in result.stderr


def test_conflicting_server_options_exit_4() -> None:
    assert nbs_tui("-L", "a", "-S", "/tmp/b").returncode == 4


def test_unreachable_server_exits_1_saying_what_to_do() -> None:
    result = nbs_tui("-L", f"nbs-tui-test-absent-{os.getpid()}")
    assert result.returncode == 1
    assert "cannot reach" in result.stderr
    assert "nbs-tui demo" in result.stderr


def test_missing_tmux_exits_1(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path))  # an empty folder: no tmux on the PATH
    result = nbs_tui(env=env)
    assert result.returncode == 1
    assert "tmux is not installed" in result.stderr


def test_detect_reads_stdin_and_prints_json() -> None:
    screen = "\n".join(
        [
            "● Done.",
            "",
            "─" * 60,
            "❯ ",
            "─" * 60,
            "  ? for shortcuts",
        ]
    )
    result = nbs_tui("detect", stdin=screen)
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["state"] == "idle"
    assert verdict["input"] == ""
    assert verdict["safe_to_inject"] is True


def test_detect_missing_file_exits_1() -> None:
    result = nbs_tui("detect", "/no/such/screen.txt")
    assert result.returncode == 1
    assert "cannot read /no/such/screen.txt" in result.stderr


def test_bad_config_file_exits_4(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("poll_interval = -5\n", encoding="utf-8")
    result = nbs_tui("--config", str(config), "-L", "x")
    assert result.returncode == 4
    assert "positive" in result.stderr


def test_missing_config_file_exits_4_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    for args in (("--config", str(missing), "-L", "x"), ("demo", "--config", str(missing)), ("--config", str(missing), "demo")):
        result = nbs_tui(*args)
        assert result.returncode == 4, args
        assert result.stderr == f"nbs-tui: config file {missing} does not exist\n"


def test_a_host_watched_from_inside_tmux_gets_its_own_default_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$TMUX names a socket on this machine: it picks this machine's server, never another host's."""
    from nbs_tui.cli import build_parser, settings_from_args
    from nbs_tui.core.fleet.model import ServerAddress

    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))
    monkeypatch.setenv("TMUX", f"{tmp_path}/tmux-{os.getuid()}/work,4242,0")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    settings = settings_from_args(build_parser().parse_args(["--host", "me@box", "--host", "local"]))
    box, local = settings.watched_hosts()
    assert box.server == ServerAddress()
    assert local.server == ServerAddress(socket_name="work")
    chosen = settings_from_args(build_parser().parse_args(["-L", "work", "--host", "me@box"]))
    assert chosen.watched_hosts()[0].server == ServerAddress(socket_name="work")  # -L: every host
