"""`nbs-tui hooks install|uninstall|status`: merging, idempotence, backups, byte-identical
round trips, and the hook command itself run as Claude Code runs it (a shell, stdin, TMUX_PANE)."""

from __future__ import annotations

import io
import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nbs_tui.claude import hooks
from nbs_tui.claude.hooks import (
    HOOK_EVENTS,
    MARKER,
    hook_command,
    hooks_command,
    install,
    status,
    uninstall,
)
from nbs_tui.cli import main
from nbs_tui.config import script_path

USER_SETTINGS = b"""{
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"], "deny": []},
    "hooks": {
        "Stop": [
            {"hooks": [{"type": "command", "command": "notify-send 'done \xc3\xa9'"}]}
        ],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {"type": "command", "command": "~/bin/guard.sh", "timeout": 3}
                ]
            }
        ],
        "SubagentStop": []
    },
    "env": {"FOO": "bar"}
}"""


@pytest.fixture
def spool(tmp_path: Path) -> Path:
    return tmp_path / "state" / "hooks.jsonl"


def _ours(data: dict) -> dict[str, int]:
    return {event: len(cmds) for event, cmds in hooks.installed_events(data).items()}


def test_install_merges_and_keeps_every_user_hook(tmp_path: Path, spool: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_bytes(USER_SETTINGS)
    outcome = install(settings, spool)
    assert outcome.changed
    data = json.loads(settings.read_text())
    original = json.loads(USER_SETTINGS)
    assert _ours(data) == dict.fromkeys(HOOK_EVENTS, 1)
    # The user's groups come first, untouched; ours is appended after them.
    assert data["hooks"]["Stop"][0] == original["hooks"]["Stop"][0]
    assert data["hooks"]["PreToolUse"][0] == original["hooks"]["PreToolUse"][0]
    assert data["hooks"]["SubagentStop"] == []
    # Everything else is the user's, but for the status line the usage recorder now wraps.
    assert data["statusLine"]["command"].endswith("#nbs-tui-statusline")
    others = ("hooks", "statusLine")
    assert {k: v for k, v in data.items() if k not in others} == {k: v for k, v in original.items() if k not in others}
    assert hooks.strip_ours(data) == original
    # The file keeps its four-space indent.
    assert '\n    "model"' in settings.read_text()
    assert outcome.backup is not None and outcome.backup.read_bytes() == USER_SETTINGS
    script = script_path(spool)
    assert script.is_file() and os.access(script, os.X_OK)


def test_install_is_idempotent_and_reinstall_for_another_spool_replaces(tmp_path: Path, spool: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_bytes(USER_SETTINGS)
    install(settings, spool)
    after_first = settings.read_bytes()
    backups = sorted(tmp_path.glob("settings.json.nbs-tui-backup-*"))
    again = install(settings, spool)
    assert not again.changed and "already installed" in again.message
    assert settings.read_bytes() == after_first
    assert sorted(tmp_path.glob("settings.json.nbs-tui-backup-*")) == backups

    other = tmp_path / "elsewhere" / "spool.jsonl"
    assert install(settings, other).changed
    data = json.loads(settings.read_text())
    assert _ours(data) == dict.fromkeys(HOOK_EVENTS, 1)
    assert all(cmds == [hook_command(other.absolute())] for cmds in hooks.installed_events(data).values())


@pytest.mark.parametrize(
    "original",
    [
        USER_SETTINGS,
        USER_SETTINGS + b"\n",
        b'{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"x"}]}]},"z":1,"a":"\\u00e9"}',
        b'{\n\t"theme": "dark",\n\t"hooks": {}\n}\n',
        b"{}",
    ],
    ids=["4-space", "trailing-newline", "compact-escaped", "tabs-empty-hooks", "empty-object"],
)
def test_round_trip_is_byte_identical(tmp_path: Path, spool: Path, original: bytes) -> None:
    settings = tmp_path / "settings.json"
    settings.write_bytes(original)
    os.chmod(settings, 0o600)
    install(settings, spool)
    assert settings.read_bytes() != original
    assert uninstall(settings).changed
    assert settings.read_bytes() == original
    assert settings.stat().st_mode & 0o777 == 0o600
    assert not uninstall(settings).changed


def test_a_symlinked_settings_file_stays_a_symlink(tmp_path: Path, spool: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_bytes(USER_SETTINGS)
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    install(link, spool)
    assert link.is_symlink() and hooks.installed_events(json.loads(real.read_text()))
    uninstall(link)
    assert link.is_symlink() and real.read_bytes() == USER_SETTINGS


def test_round_trip_on_a_missing_file_removes_it_again(tmp_path: Path, spool: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    install(settings, spool)
    assert _ours(json.loads(settings.read_text())) == dict.fromkeys(HOOK_EVENTS, 1)
    uninstall(settings)
    assert not settings.exists()


def test_uninstall_after_the_user_edited_keeps_their_edit(tmp_path: Path, spool: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_bytes(USER_SETTINGS)
    install(settings, spool)
    data = json.loads(settings.read_text())
    data["theme"] = "light"
    data["hooks"]["Notification"].insert(0, {"hooks": [{"type": "command", "command": "beep"}]})
    settings.write_text(json.dumps(data, indent=4))
    assert uninstall(settings).changed
    left = json.loads(settings.read_text())
    assert hooks.installed_events(left) == {}
    assert left["theme"] == "light"
    assert left["hooks"]["Notification"] == [{"hooks": [{"type": "command", "command": "beep"}]}]
    original = json.loads(USER_SETTINGS)
    for event in ("Stop", "PreToolUse", "SubagentStop"):
        assert left["hooks"][event] == original["hooks"][event]


def test_uninstall_removes_only_marked_entries_even_inside_a_shared_group(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    mine = {"type": "command", "command": f"sh x {MARKER}"}
    theirs = {"type": "command", "command": "echo theirs"}
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [theirs, mine]}]}}))
    uninstall(settings)
    assert json.loads(settings.read_text()) == {"hooks": {"Stop": [{"hooks": [theirs]}]}}


def test_invalid_json_is_left_alone(tmp_path: Path, spool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = tmp_path / "settings.json"
    settings.write_bytes(b"{ not json")
    assert hooks_command("install", settings, spool) == 1
    assert settings.read_bytes() == b"{ not json"
    assert "not valid JSON" in capsys.readouterr().err


def test_status_reports_each_event(tmp_path: Path, spool: Path) -> None:
    settings = tmp_path / "settings.json"
    out = io.StringIO()
    assert hooks_command("status", settings, spool, out=out) == 1
    assert "not installed" in out.getvalue()
    install(settings, spool)
    report = status(settings, spool)
    assert report.installed and report.missing == ()
    out = io.StringIO()
    assert hooks_command("status", settings, spool, out=out) == 0
    text = out.getvalue()
    assert all(f"{event}: ok" in text for event in HOOK_EVENTS)
    script_path(spool).unlink()
    assert not status(settings, spool).installed


def test_cli_round_trip(tmp_path: Path, spool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = tmp_path / "settings.json"
    settings.write_bytes(USER_SETTINGS)
    base = ["hooks", "--settings-file", str(settings), "--spool", str(spool)]
    assert main([base[0], "install", *base[1:]]) == 0
    assert main([base[0], "status", *base[1:]]) == 0
    assert main([base[0], "uninstall", *base[1:]]) == 0
    assert settings.read_bytes() == USER_SETTINGS
    project = tmp_path / "proj"
    assert main(["hooks", "install", "--project-dir", str(project), "--spool", str(spool)]) == 0
    assert (project / ".claude" / "settings.local.json").is_file()
    capsys.readouterr()


# -- the hook command, run the way Claude Code runs it ------------------------------------------


def _run_hook(command: str, payload: bytes, env: dict[str, str] | None = None, shell: str = "sh") -> subprocess.CompletedProcess[bytes]:
    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(env or {})}
    return subprocess.run([shell, "-c", command], input=payload, env=full_env, capture_output=True, timeout=10, check=False)


def _lines(spool: Path) -> list[dict]:
    return [json.loads(line) for line in spool.read_bytes().splitlines()]


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_hook_appends_one_line_with_the_pane(tmp_path: Path, spool: Path, shell: str) -> None:
    install(tmp_path / "settings.json", spool)
    payload = {"session_id": "s1", "hook_event_name": "Stop", "last_assistant_message": "two\nlines \"quoted\" é"}
    text = json.dumps(payload, indent=2).encode()  # a pretty-printed payload still becomes one line
    result = _run_hook(hook_command(spool), text, {"TMUX_PANE": "%12", "TMUX": "/tmp/tmux-0/x,99,0"}, shell)
    assert result.returncode == 0, result.stderr
    # Nothing on stdout: for SessionStart and UserPromptSubmit it would reach the model's context.
    assert result.stdout == b"" and result.stderr == b""
    [line] = _lines(spool)
    assert line["nbs_pane"] == "%12" and line["nbs_tmux"] == "/tmp/tmux-0/x"
    assert line["payload"] == payload
    assert line["nbs_time"] > 1e9
    assert spool.stat().st_mode & 0o777 == 0o600  # events carry prompts and tool output


def test_hook_without_tmux_records_no_pane(tmp_path: Path, spool: Path) -> None:
    install(tmp_path / "settings.json", spool)
    assert _run_hook(hook_command(spool), b'{"hook_event_name":"Stop"}').returncode == 0
    [line] = _lines(spool)
    assert line["nbs_pane"] == "" and line["payload"]["hook_event_name"] == "Stop"


def test_hook_exits_zero_when_the_spool_cannot_be_written(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    spool = blocker / "hooks.jsonl"
    install(tmp_path / "settings.json", tmp_path / "real" / "hooks.jsonl")
    script = script_path(tmp_path / "real" / "hooks.jsonl")
    blocker.write_text("a file where the spool folder should be")
    command = f"/bin/sh {script} {spool}; exit 0"
    result = _run_hook(command, b'{"hook_event_name":"Stop"}', {"TMUX_PANE": "%1"})
    assert result.returncode == 0 and result.stderr == b""
    # And the installed command when its script is gone (nbs-tui removed): still exit 0.
    missing = tmp_path / "gone" / "hooks.jsonl"
    result = _run_hook(hook_command(missing), b'{"hook_event_name":"Stop"}')
    assert result.returncode == 0 and result.stderr == b""
    assert not missing.parent.exists()


def test_concurrent_large_payloads_never_interleave(tmp_path: Path, spool: Path) -> None:
    install(tmp_path / "settings.json", spool)
    command = hook_command(spool)

    def one(i: int) -> int:
        payload = json.dumps({"hook_event_name": "PostToolUse", "i": i, "tool_response": str(i) * 150_000})
        return _run_hook(command, payload.encode(), {"TMUX_PANE": f"%{i}"}).returncode

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(one, range(16))) == [0] * 16
    lines = _lines(spool)
    assert sorted(line["payload"]["i"] for line in lines) == list(range(16))
    for line in lines:
        i = line["payload"]["i"]
        assert line["nbs_pane"] == f"%{i}" and line["payload"]["tool_response"] == str(i) * 150_000
