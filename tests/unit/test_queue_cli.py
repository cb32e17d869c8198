"""``nbs-tui queue ...`` as a script runs it (a process, its exit code, its stdout), and the
``queue_*_document`` functions MCP calls, on a queue file under a private XDG state folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbs_tui.config import ConfigError, load_settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError
from nbs_tui.files.queue_store import queue_path
from nbs_tui.fleet_api.queue_commands import (
    queue_add_document,
    queue_cancel_document,
    queue_ls_document,
    queue_pause_document,
    queue_resume_document,
    queue_table,
)

REPO = Path(__file__).resolve().parents[2]


def nbs(tmp: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "NBS_", "XDG_"))}
    env.update(
        HOME=str(tmp),
        XDG_STATE_HOME=str(tmp / "state"),
        XDG_CONFIG_HOME=str(tmp / "cfg"),
        NBS_SERVICE="off",
    )
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "-L", "queue-cli-test", *argv],
        capture_output=True, text=True, cwd=cwd or REPO, env=env, timeout=60, check=False,
    )  # fmt: skip


def test_add_prints_the_id_and_ls_cancel_pause_resume_work_on_the_servers_file(
    tmp_path: Path,
) -> None:
    first = nbs(tmp_path, "queue", "add", "write the tests")
    assert (first.returncode, first.stdout) == (0, "1\n"), first.stderr
    second = nbs(
        tmp_path,
        "queue",
        "add",
        "--folder",
        str(tmp_path),
        "--priority",
        "2",
        "--agents",
        "rev*",
        "--json",
        "review",
    )
    assert second.returncode == 0, second.stderr
    task = json.loads(second.stdout)["task"]
    assert (task["id"], task["state"], task["folder"], task["agents"], task["priority"]) == (
        "2", "queued", os.path.realpath(tmp_path), "rev*", 2,
    )  # fmt: skip
    assert queue_path(
        "local", ServerAddress(socket_name="queue-cli-test"), tmp_path / "state" / "nbs-tui"
    ).is_file()
    listing = json.loads(nbs(tmp_path, "queue", "ls", "--json").stdout)
    assert [t["id"] for t in listing["tasks"]] == ["2", "1"] and listing["paused"] is False
    assert nbs(tmp_path, "queue", "cancel", "1").stdout == "task 1 cancelled\n"
    again = nbs(tmp_path, "queue", "cancel", "1")
    assert again.returncode == ExitCode.REFUSED and "already cancelled" in again.stderr
    assert nbs(tmp_path, "queue", "pause").stdout == "queue paused\n"
    table = nbs(tmp_path, "queue", "ls").stdout
    assert table.startswith("queue paused") and "review" in table and "cancelled" in table
    assert json.loads(nbs(tmp_path, "queue", "resume", "--json").stdout)["paused"] is False


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (("queue", "add"), "exactly one of TEXT"),
        (("queue", "add", "x", "--worker", "w"), "exactly one of TEXT"),
        (("queue", "add", "   "), "the text is empty"),
        (("queue", "add", "a\x1bb"), "control character"),
        (("queue", "add", "--file", "/nonexistent/f"), "--file /nonexistent/f"),
        (("queue", "add", "x", "--folder", "/nonexistent/dir"), "not a folder"),
        (("queue", "add", "x", "--after", "7"), "no such task"),
        (("queue", "add", "--worker", "builder"), "no "),
        (("queue", "add", "--worker", "-bad"), "--worker"),
        (("queue", "cancel", "9"), "no task 9"),
    ],
)
def test_bad_input_exits_4_with_the_reason(tmp_path: Path, argv: tuple[str, ...], why: str) -> None:
    done = nbs(tmp_path, *argv)
    assert done.returncode == ExitCode.BAD_INPUT, (done.stdout, done.stderr)
    assert why in done.stderr and done.stdout == ""


def test_a_worker_task_and_a_file_task(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".nbs" / "workers").mkdir(parents=True)
    (project / ".nbs" / "workers" / "builder.md").write_text("build it\n")
    prompt = tmp_path / "prompt.md"
    prompt.write_text("line one\nline two\n\n")
    worker = nbs(tmp_path, "queue", "add", "--worker", "builder", "--json", cwd=project)
    assert worker.returncode == 0, worker.stderr
    task = json.loads(worker.stdout)["task"]
    assert (task["worker"], task["text"], task["folder"]) == (
        "builder",
        None,
        os.path.realpath(project),
    )
    from_file = nbs(
        tmp_path,
        "queue",
        "add",
        "--file",
        str(prompt),
        "--start",
        "--after",
        "1",
        "--json",
        cwd=project,
    )
    task = json.loads(from_file.stdout)["task"]
    assert (task["text"], task["start"], task["after"], task["folder"]) == (
        "line one\nline two", True, "1", os.path.realpath(project),
    )  # fmt: skip


def test_the_documents_mcp_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    settings = load_settings(
        None, environ={"NBS_SERVICE": "off"}, server=ServerAddress(socket_name="queue-doc-test")
    )
    added = queue_add_document(settings, text="one")
    assert added["task"]["id"] == "1"
    assert queue_ls_document(settings)["tasks"][0]["text"] == "one"
    assert (
        queue_pause_document(settings)["paused"] and not queue_resume_document(settings)["paused"]
    )
    assert queue_cancel_document(settings, "1")["task"]["state"] == "cancelled"
    with pytest.raises(FleetApiError) as raised:
        queue_add_document(settings, text="x", worker="w")
    assert raised.value.code == ExitCode.BAD_INPUT
    assert queue_table({"paused": False, "tasks": []}) == "no tasks"


def test_max_concurrent_from_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[max_concurrent]\n"/work/proj/" = 2\n"/other" = 1\n')
    assert dict(load_settings(config, environ={}).max_concurrent) == {"/work/proj": 2, "/other": 1}
    for bad, why in (
        ('"rel" = 2', "not an absolute folder"),
        ('"/p" = 0', "1 or more"),
        ('"/p" = true', "1 or more"),
    ):
        config.write_text(f"[max_concurrent]\n{bad}\n")
        with pytest.raises(ConfigError, match=why):
            load_settings(config, environ={})
