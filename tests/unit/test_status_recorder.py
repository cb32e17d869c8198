"""The status-line recorder (issue 37 item 2): installed beside the hooks, the user's own status
line still prints exactly what it printed, a second install changes nothing, uninstall restores
the settings byte for byte. The wrapped command is run here through /bin/sh as Claude Code runs it."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from nbs_tui.claude.hooks import install, status, uninstall
from nbs_tui.claude.status_recorder import parse_recorder, recorder_path, usage_spool_for
from nbs_tui.claude.usage_spool import usage_now

DOCUMENT = {
    "session_id": "s-1",
    "model": {"id": "claude-opus-5-5", "display_name": "Opus 5.5"},
    "cost": {"total_cost_usd": 0.25},
    "context_window": {"total_input_tokens": 1000, "total_output_tokens": 200},
    # resets ahead of now: a window whose reset has passed reads as empty
    "rate_limits": {
        "five_hour": {"used_percentage": 42, "resets_at": int(time.time()) + 3 * 3600},
        "seven_day": {"used_percentage": 11, "resets_at": int(time.time()) + 4 * 86400},
    },
}
USER_LINE = "read -r doc; printf '%s | ' \"$(printf '%s' \"$doc\" | cut -c1-14)\"; printf 'my line\\n\\n'; exit 3"
SETTINGS = (
    '{\n    "model": "opus",\n    "statusLine": {"type": "command", "command": ' + json.dumps(USER_LINE) + ', "padding": 0}\n}'
).encode()


def run_status_line(command: str, stdin: bytes, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["/bin/sh", "-c", command], input=stdin, capture_output=True, env=env, timeout=10)


def test_the_user_s_status_line_prints_the_same_and_the_turn_is_recorded(tmp_path: Path) -> None:
    settings, spool = tmp_path / "settings.json", tmp_path / "state" / "hooks.jsonl"
    settings.write_bytes(SETTINGS)
    stdin = json.dumps(DOCUMENT).encode() + b"\n"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "acct"), "TMUX_PANE": "%7"}
    own = run_status_line(USER_LINE, stdin, env)
    install(settings, spool)
    command = json.loads(settings.read_text())["statusLine"]["command"]
    assert json.loads(settings.read_text())["statusLine"]["padding"] == 0
    wrapped = run_status_line(command, stdin, env)
    assert (wrapped.stdout, wrapped.returncode) == (own.stdout, own.returncode) == (b'{"session_id": | my line\n\n', 3)
    [account] = usage_now(usage_spool_for(spool))
    assert account.account.config_dir == str(tmp_path / "acct")
    assert account.five_hour is not None and account.five_hour.used_percentage == 42
    assert (account.cost_usd, account.agents[0].tokens, account.agents[0].pane) == (0.25, 1200, "%7")
    # Without the recorder script the user's line still runs, alone.
    recorder_path(usage_spool_for(spool)).unlink()
    alone = run_status_line(command, stdin, env)
    assert (alone.stdout, alone.returncode) == (own.stdout, own.returncode)


def test_a_second_install_changes_nothing_and_uninstall_restores_the_bytes(tmp_path: Path) -> None:
    settings, spool = tmp_path / "settings.json", tmp_path / "state" / "hooks.jsonl"
    settings.write_bytes(SETTINGS)
    assert install(settings, spool).changed
    after_first = settings.read_bytes()
    assert not install(settings, spool).changed
    assert settings.read_bytes() == after_first
    assert status(settings, spool).installed
    uninstall(settings)
    assert settings.read_bytes() == SETTINGS


def test_uninstall_after_the_user_edited_puts_their_own_command_back(tmp_path: Path) -> None:
    settings, spool = tmp_path / "settings.json", tmp_path / "state" / "hooks.jsonl"
    settings.write_bytes(SETTINGS)
    install(settings, spool)
    data = json.loads(settings.read_text())
    data["model"] = "sonnet"
    settings.write_text(json.dumps(data))
    uninstall(settings)
    left = json.loads(settings.read_text())
    assert left == {"model": "sonnet", "statusLine": {"type": "command", "command": USER_LINE, "padding": 0}}


def test_without_a_status_line_the_recorder_prints_nothing_and_leaves_none_behind(tmp_path: Path) -> None:
    settings, spool = tmp_path / "settings.json", tmp_path / "state" / "hooks.jsonl"
    settings.write_bytes(b'{"model": "opus"}\n')
    install(settings, spool)
    command = json.loads(settings.read_text())["statusLine"]["command"]
    assert parse_recorder(command) == (usage_spool_for(spool).absolute(), "")
    done = run_status_line(command, json.dumps(DOCUMENT).encode(), {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert (done.stdout, done.returncode) == (b"", 0)
    [account] = usage_now(usage_spool_for(spool))
    assert account.account.config_dir == str(tmp_path / ".claude")
    data = json.loads(settings.read_text())
    data["model"] = "haiku"
    settings.write_text(json.dumps(data))
    uninstall(settings)
    assert json.loads(settings.read_text()) == {"model": "haiku"}


def test_a_status_line_of_another_kind_is_left_alone_and_said(tmp_path: Path) -> None:
    settings, spool = tmp_path / "settings.json", tmp_path / "state" / "hooks.jsonl"
    raw = b'{"statusLine": {"type": "static", "text": "hi"}}\n'
    settings.write_bytes(raw)
    outcome = install(settings, spool)
    assert "left alone" in outcome.message
    assert json.loads(settings.read_text())["statusLine"] == {"type": "static", "text": "hi"}
    assert status(settings, spool).installed
    uninstall(settings)
    assert settings.read_bytes() == raw
