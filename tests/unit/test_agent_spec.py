"""The new-agent spec, its checks, and the Claude Code command line (nbs_tui/core/fleet/agent_spec.py).

The flags are checked against the real ``claude --help`` of each corpus version
(tests/corpus/claude/<version>/help.txt, agents-help.txt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbs_tui.core.fleet.agent_spec import (
    ASSUMED_FLAGS,
    ClaudeFlags,
    ClaudeLaunch,
    LaunchError,
    NewAgent,
    SpecError,
    checked,
    claude_argv,
    default_name,
    launch_for,
    launch_from_args,
    mode_argument,
    problems,
    shell_command,
)
from nbs_tui.core.fleet.model import ServerAddress

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "claude"
VERSIONS = ("2.1.100", "2.1.150", "2.1.197", "2.1.265", "2.1.332")


def flags_of(version: str) -> ClaudeFlags:
    help_text = (CORPUS / version / "help.txt").read_text(encoding="utf-8")
    agents = (CORPUS / version / "agents-help.txt").read_text(encoding="utf-8")
    return ClaudeFlags.from_help(help_text, agents, version=version)


# -- the spec ------------------------------------------------------------------------------------


def test_a_plain_spec_has_no_problem_and_is_named_after_its_folder() -> None:
    spec = checked(NewAgent("/home/me/src/my.app"))
    assert spec.name == "my-app"


def test_a_worker_names_the_agent_when_no_name_is_given() -> None:
    assert checked(NewAgent("/p", worker="parser-a3f1")).name == "parser-a3f1"
    assert checked(NewAgent("/p", worker="parser-a3f1", name="x")).name == "x"


@pytest.mark.parametrize(
    ("folder", "name"),
    [("/srv/2024", "agent-2024"), ("/", "agent"), ("/a/b/", "b"), ("/x/-lead", "lead"), ("/x/日本", "agent")],
)
def test_default_names_are_valid_window_names(folder: str, name: str) -> None:
    assert default_name(NewAgent(folder)) == name
    assert problems(NewAgent(folder, name=default_name(NewAgent(folder)))) == []


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (NewAgent(""), "DIR is empty"),
        (NewAgent("/p", name="a:b"), "--name 'a:b' may hold only"),
        (NewAgent("/p", name="a.b"), "--name 'a.b' may hold only"),
        (NewAgent("/p", name="-x"), "may not start with '-'"),
        (NewAgent("/p", name="12"), "all digits: tmux would read it as a window number"),
        (NewAgent("/p", name="x" * 65), "longer than 64"),
        (NewAgent("/p", prompt="a", prompt_file="f"), "give --prompt or --prompt-file, not both"),
        (NewAgent("/p", worker="w", prompt="a"), "give --worker or --prompt, not both"),
        (NewAgent("/p", worker="../etc/passwd"), "--worker '../etc/passwd' may hold only"),
        (NewAgent("/p", worker="a b"), "--worker 'a b' may hold only"),
        (NewAgent("/p", prompt="  \n"), "--prompt is empty"),
        (NewAgent("/p", model="claude opus"), "is not a model name"),
        (NewAgent("/p", model="--print"), "is not a model name"),
        (NewAgent("/p", permission_mode="yolo"), "--permission-mode 'yolo' is not one of"),
        (NewAgent("/p", worktree_name="w"), "a worktree name needs --worktree"),
        (NewAgent("/p", worktree=True, worktree_name="a/b"), "--worktree 'a/b' may hold only"),
        (NewAgent("/p", session="a:b"), "--session 'a:b' may not hold"),
        (NewAgent("/p", session=""), "--session is empty"),
        (NewAgent("/p", server=ServerAddress("x", "/tmp/s")), "give -L or -S, not both"),
        (NewAgent("/p", host="a b"), "--host 'a b'"),
    ],
)
def test_each_bad_input_is_named(spec: NewAgent, words: str) -> None:
    found = problems(spec)
    assert any(words in line for line in found), found
    with pytest.raises(SpecError) as raised:
        checked(spec)
    assert raised.value.problems == tuple(found)


def test_every_problem_is_listed_at_once() -> None:
    found = problems(NewAgent("/p", name="a b", permission_mode="x", session="s.t"))
    assert len(found) == 3


def test_both_names_of_the_default_mode_are_accepted() -> None:
    assert problems(NewAgent("/p", permission_mode="default")) == []
    assert problems(NewAgent("/p", permission_mode="manual")) == []


# -- what each version offers -------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_every_corpus_version_has_the_flags_nbs_tui_sets(version: str) -> None:
    flags = flags_of(version)
    assert flags.name and flags.worktree and flags.resume
    assert {"acceptEdits", "auto", "bypassPermissions", "dontAsk", "plan"} <= flags.permission_modes


def test_the_modes_and_background_commands_by_version() -> None:
    assert flags_of("2.1.197").permission_modes >= {"default"}
    assert "manual" not in flags_of("2.1.197").permission_modes
    assert "manual" in flags_of("2.1.265").permission_modes
    assert "default" not in flags_of("2.1.332").permission_modes
    assert [flags_of(v).background for v in VERSIONS] == [False, False, True, True, True]
    assert [flags_of(v).attach for v in VERSIONS] == [False, False, False, True, True]
    assert [flags_of(v).agents_json for v in VERSIONS] == [False, True, True, True, True]


def test_a_help_without_the_flags_says_so() -> None:
    flags = ClaudeFlags.from_help("Usage: claude [options]\n  --model <model>  Model\n  -h, --help\n")
    assert not flags.name and not flags.worktree and not flags.resume
    assert flags.permission_modes == ASSUMED_FLAGS.permission_modes  # no list: assume the old one


def test_the_mode_sent_is_the_one_the_version_lists() -> None:
    assert mode_argument("manual", flags_of("2.1.197")) == "default"
    assert mode_argument("default", flags_of("2.1.332")) == "manual"
    assert mode_argument("plan", flags_of("2.1.100")) == "plan"
    older = ClaudeFlags(version="2.0.1", permission_modes=frozenset({"default", "plan"}))
    with pytest.raises(LaunchError, match=r"Claude Code 2.0.1 has no permission mode 'auto' \(it offers default, plan\)"):
        mode_argument("auto", older)


# -- the command line -----------------------------------------------------------------------------


def test_the_command_carries_every_option_asked() -> None:
    spec = checked(NewAgent("/p", name="api", model="opus", permission_mode="bypassPermissions", worktree=True, worktree_name="feat"))
    argv = claude_argv("claude", launch_for(spec), flags_of("2.1.332"))
    assert argv == ["claude", "-n", "api", "--model", "opus", "--permission-mode", "bypassPermissions", "-w", "feat"]


def test_a_worktree_without_a_name_is_a_bare_w() -> None:
    assert claude_argv("claude", ClaudeLaunch(worktree=True)) == ["claude", "-w"]


def test_the_configured_command_may_hold_words() -> None:
    argv = claude_argv("env CLAUDE_CONFIG_DIR='/my dir' claude --verbose", ClaudeLaunch(name="a"))
    assert argv == ["env", "CLAUDE_CONFIG_DIR=/my dir", "claude", "--verbose", "-n", "a"]
    assert shell_command(argv) == "env 'CLAUDE_CONFIG_DIR=/my dir' claude --verbose -n a"


@pytest.mark.parametrize(("command", "words"), [("", "claude_command is empty"), ("claude 'x", "cannot be split")])
def test_a_bad_configured_command_is_named(command: str, words: str) -> None:
    with pytest.raises(SpecError, match=words):
        claude_argv(command, ClaudeLaunch())


def test_resume_comes_first_and_never_with_a_worktree() -> None:
    argv = claude_argv("claude", ClaudeLaunch(name="api", resume="59ced8f6-e666-4fb8-b9d9-c1e86c10dae9"))
    assert argv == ["claude", "--resume", "59ced8f6-e666-4fb8-b9d9-c1e86c10dae9", "-n", "api"]
    with pytest.raises(LaunchError, match="starts in its worktree's folder"):
        claude_argv("claude", ClaudeLaunch(resume="x", worktree=True))


def test_a_version_without_n_still_starts_and_one_without_w_does_not() -> None:
    plain = ClaudeFlags(version="2.0.9", name=False, worktree=False)
    assert claude_argv("claude", ClaudeLaunch(name="api", model="opus"), plain) == ["claude", "--model", "opus"]
    with pytest.raises(LaunchError, match=r"Claude Code 2\.0\.9 has no -w/--worktree"):
        claude_argv("claude", ClaudeLaunch(worktree=True), plain)
    with pytest.raises(LaunchError, match="has no --resume"):
        claude_argv("claude", ClaudeLaunch(resume="x"), ClaudeFlags(resume=False))


# -- reading a command line back ------------------------------------------------------------------


def test_a_built_command_reads_back_as_it_was_asked() -> None:
    launch = ClaudeLaunch(name="api", model="opus", permission_mode="plan", worktree=True, worktree_name="feat")
    assert launch_from_args(claude_argv("claude", launch)[1:]) == launch


def test_reading_back_a_hand_typed_command() -> None:
    launch = launch_from_args(
        ["--add-dir", "../lib", "--name=web", "--dangerously-skip-permissions", "-r", "abc", "-w", "--verbose", "fix it"]
    )
    assert launch == ClaudeLaunch(name="web", permission_mode="bypassPermissions", worktree=True, resume="abc")
    assert launch_from_args(["--resume", "--model", "sonnet"]) == ClaudeLaunch(model="sonnet")
    assert launch_from_args(["--session-id", "s1", "--", "-n", "x"]) == ClaudeLaunch(resume="s1")
