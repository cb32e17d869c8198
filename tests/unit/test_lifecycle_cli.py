"""``nbs-tui new`` and ``nbs-tui restore`` arguments (nbs_tui/lifecycle/arguments.py) and new's checks
against real files (nbs_tui/files/agent_input.py): every bad input named, nothing left behind."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from nbs_tui.cli import UsageError, _Parser
from nbs_tui.core.fleet.agent_spec import NewAgent, SpecError
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.files.agent_input import MAX_PROMPT, PreparedAgent, prepare_local
from nbs_tui.lifecycle.arguments import (
    add_lifecycle_parsers,
    prepare_new,
    restore_request_from_args,
)
from nbs_tui.server_options import add_server_options


def parse(*argv: str) -> argparse.Namespace:
    """As the CLI parses: the main options (-L/-S/--host before the subcommand), then ours."""
    parser = _Parser(prog="nbs-tui")
    add_server_options(parser)
    add_lifecycle_parsers(parser.add_subparsers(dest="command", parser_class=_Parser))
    return parser.parse_args(list(argv))


def tree(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_size if p.is_file() else -1) for p in root.rglob("*"))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "proj"
    (root / ".nbs" / "workers").mkdir(parents=True)
    (root / ".nbs" / "events").mkdir()
    (root / ".nbs" / "workers" / "parser-a3f1.md").write_text("# Worker: parser\n\n## Task\n\nParse it.\n\n")
    (root / ".git").mkdir()
    (tmp_path / "prompt.md").write_text("Fix the failing test.\n")
    return root


def prepared(*argv: str, cwd: Path, **options: object) -> PreparedAgent:
    found = prepare_new(parse("new", *argv), cwd=cwd, **options)  # type: ignore[arg-type]
    assert isinstance(found, PreparedAgent)
    return found


def test_a_plain_new_is_named_after_its_folder_and_resolved(project: Path) -> None:
    agent = prepared("proj", cwd=project.parent)
    assert agent.spec.directory == str(project.resolve()) and agent.spec.name == "proj"
    assert agent.prompt is None and agent.worker_file is None and agent.events is None


def test_every_option_reaches_the_spec(project: Path) -> None:
    agent = prepared(
        str(project), "--name", "api", "--prompt-file", "prompt.md", "--model", "opus", "--permission-mode", "plan",
        "--worktree", "feat", "--session", "work", "-L", "lab", "--json", cwd=project.parent,
    )  # fmt: skip
    spec = agent.spec
    assert (spec.name, spec.model, spec.permission_mode, spec.worktree, spec.worktree_name, spec.session) == (
        "api", "opus", "plan", True, "feat", "work",
    )  # fmt: skip
    assert spec.server == ServerAddress("lab") and spec.host is None
    assert agent.prompt == "Fix the failing test."


def test_a_bare_worktree_after_dir(project: Path) -> None:
    spec = prepared(str(project), "--worktree", cwd=project).spec
    assert spec.worktree and spec.worktree_name is None


def test_the_server_may_be_named_before_the_subcommand(project: Path) -> None:
    assert prepared(str(project), cwd=project).spec.server == ServerAddress()
    args = parse("-S", "/tmp/sock", "new", str(project))
    found = prepare_new(args, cwd=project)
    assert isinstance(found, PreparedAgent) and found.spec.server == ServerAddress(None, "/tmp/sock")


def test_a_worker_types_its_task_file_whole_and_has_a_bus(project: Path) -> None:
    agent = prepared(str(project), "--worker", "parser-a3f1", cwd=project)
    assert agent.spec.name == "parser-a3f1"
    assert agent.prompt == "# Worker: parser\n\n## Task\n\nParse it."
    assert agent.worker_file == project.resolve() / ".nbs" / "workers" / "parser-a3f1.md"
    assert agent.events == project.resolve() / ".nbs" / "events"


def test_a_folder_reached_through_a_symlink_keeps_both_names(project: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(project)
    agent = prepared(str(link), cwd=tmp_path)
    assert agent.spec.directory == str(project.resolve()) and agent.typed_folder == str(link)


def test_a_remote_agent_is_left_to_its_host_to_check_once(project: Path) -> None:
    found = prepare_new(parse("new", "/on/the/box", "--host", "box", "--worker", "w"), cwd=project)
    assert isinstance(found, NewAgent) and found.host == "box" and found.directory == "/on/the/box"
    assert found.name == ""  # not checked here (a check fills the name in): RemoteHost.prepare checks it


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["missing"], "DIR {tmp}/missing does not exist"),
        (["prompt-file-as-dir"], "is not a folder"),
        (["{proj}", "--prompt-file", "nope.md"], "--prompt-file {tmp}/nope.md: no such file"),
        (["{proj}", "--prompt-file", "proj"], "--prompt-file {tmp}/proj: cannot read it (not a regular file (a directory))"),
        (["{proj}", "--prompt-file", "fifo"], "cannot read it (not a regular file (a FIFO))"),
        (["{proj}", "--prompt-file", "empty.md"], "--prompt-file {tmp}/empty.md: is empty"),
        (["{proj}", "--prompt-file", "latin1.md"], "not UTF-8 text"),
        (["{proj}", "--prompt-file", "huge.md"], "larger than 1 MiB"),
        (["{tmp}", "--worker", "w"], "--worker w: {tmp} has no .nbs/ folder"),
        (["{proj}", "--worker", "gone"], "--worker gone: task file {proj}/.nbs/workers/gone.md: no such file"),
        (["{proj}", "--worker", "../../etc/passwd"], "--worker '../../etc/passwd' may hold only"),
        (["{proj}", "--worker", "parser-a3f1", "--prompt", "also"], "give --worker or --prompt, not both"),
        (["{tmp}", "--worktree"], "--worktree: {tmp} is not in a git repository"),
        (["{proj}", "--name", "a.b"], "--name 'a.b' may hold only"),
        (["{proj}", "--host", "a", "--host", "b"], "new works on one host at a time"),
        (["{proj}", "-L", "x", "-S", "/s"], None),  # argparse: not allowed with
    ],
)
def test_each_bad_input_is_named_and_nothing_is_left_behind(project: Path, tmp_path: Path, argv: list[str], words: str | None) -> None:
    tmp = tmp_path
    (tmp / "empty.md").write_text("\n \n")
    (tmp / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (tmp / "huge.md").write_text("x" * (MAX_PROMPT + 1))
    os.mkfifo(tmp / "fifo")  # a plain open() would wait here for a writer forever
    (tmp / "prompt-file-as-dir").write_text("not a folder")
    before = tree(tmp)
    argv = [a.format(proj=project, tmp=tmp) for a in argv]
    if words is None:
        with pytest.raises(UsageError, match="not allowed with"):
            parse("new", *argv)
        return
    with pytest.raises(SpecError) as raised:
        prepare_new(parse("new", *argv), cwd=tmp)
    wanted = words.format(proj=project, tmp=tmp)
    assert any(wanted in line for line in raised.value.problems), raised.value.problems
    assert tree(tmp) == before


def test_all_problems_come_at_once(project: Path, tmp_path: Path) -> None:
    with pytest.raises(SpecError) as raised:
        prepare_new(parse("new", "missing", "--prompt-file", "nope.md", "--name", "a:b"), cwd=tmp_path)
    assert len(raised.value.problems) == 3


def test_claude_code_must_be_on_path_when_asked(project: Path) -> None:
    with pytest.raises(SpecError, match=r"Claude Code not found: 'claude' is not on PATH"):
        prepare_local(NewAgent(str(project)), claude_command="claude", which=lambda _: None)
    assert prepare_local(NewAgent(str(project)), claude_command="claude --verbose", which=lambda word: f"/bin/{word}")
    with pytest.raises(SpecError, match="claude_command is empty"):
        prepare_local(NewAgent(str(project)), claude_command=" ")


def test_argparse_refusals_are_usage_errors(project: Path) -> None:
    for argv in (["new"], ["new", "p", "--prompt", "a", "--prompt-file", "b"], ["new", "p", "--permission-mode", "yolo"]):
        with pytest.raises(UsageError):
            parse(*argv)


def test_restore_arguments() -> None:
    request = restore_request_from_args(parse("-L", "work", "restore", "--dry-run", "api", "web"))
    assert request.server == ServerAddress("work") and request.names == ("api", "web")
    assert request.dry_run and not request.json and request.host is None
    request = restore_request_from_args(parse("restore", "--host", "box", "--json"))
    assert request.host == "box" and request.names == () and request.json
    with pytest.raises(SpecError, match="an empty NAME"):
        restore_request_from_args(parse("restore", ""))
    with pytest.raises(SpecError, match="restore works on one host at a time"):
        restore_request_from_args(parse("restore", "--host", "a", "--host", "b"))


def test_a_bad_spec_for_another_host_is_refused_before_the_host_is_asked() -> None:
    from nbs_tui.core.fleet.host_spec import HostSpec
    from nbs_tui.lifecycle.remote_agent import prepare_remote
    from nbs_tui.tmux.ssh import SshTmuxRunner

    runner = SshTmuxRunner(HostSpec("nowhere", "nowhere.invalid"))
    try:
        with pytest.raises(SpecError) as raised:
            prepare_remote(NewAgent("/on/the/box", name="a:b", host="nowhere"), runner, "claude")
    finally:
        runner.close()
    assert raised.value.problems and not any("nowhere" in p for p in raised.value.problems), raised.value.problems
    assert runner.master_pid() is None  # no connection was made
