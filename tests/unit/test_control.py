"""Control-command parsing and application: every verb, prefixes, comments and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbs_tui.core.control.control_commands import (
    Comment,
    ControlCommand,
    ControlError,
    Outcome,
    Verb,
    parse_line,
    process_line,
    scan_screen_lines,
)
from nbs_tui.core.control.registry import Registry


@pytest.mark.parametrize("verb", [v.value for v in Verb if v is not Verb.SET_POLL_INTERVAL])
@pytest.mark.parametrize("prefix", ["", "\\nbs-"])
def test_every_path_verb_parses_with_and_without_prefix(verb: str, prefix: str) -> None:
    parsed = parse_line(f"{prefix}{verb} .nbs/chat/x.chat")
    assert isinstance(parsed, ControlCommand)
    assert parsed.verb.value == verb
    assert parsed.argument == ".nbs/chat/x.chat"
    assert parsed.inbox_line() == f"{verb} .nbs/chat/x.chat"


def test_set_poll_interval_parses_seconds() -> None:
    parsed = parse_line("set-poll-interval 45")
    assert isinstance(parsed, ControlCommand) and parsed.seconds == 45.0
    parsed = parse_line("\\nbs-set-poll-interval 2.5s")
    assert isinstance(parsed, ControlCommand) and parsed.seconds == 2.5


@pytest.mark.parametrize("bad", ["0", "-3", "abc", "nan", "inf", "1e9", ""])
def test_bad_interval_is_an_error(bad: str) -> None:
    parsed = parse_line(f"set-poll-interval {bad}")
    assert isinstance(parsed, ControlError)
    assert "interval" in parsed.reason or "seconds" in parsed.reason


@pytest.mark.parametrize("line", ["# a comment", "   # indented", "", "   ", "\t"])
def test_comments_and_blank_lines(line: str) -> None:
    assert isinstance(parse_line(line), Comment)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("register-chats x", "unknown verb"),
        ("hello world", "unknown verb"),
        ("register-chat", "needs a path"),
        ("\\nbs-unregister-bus   ", "needs a path"),
        ("register-chat a\x00b", "control character"),
        ("register-chat caf\ufffd", "UTF-8"),
        ("register-chat " + "x" * 5000, "characters long"),
    ],
)
def test_errors_say_why(line: str, reason: str) -> None:
    parsed = parse_line(line)
    assert isinstance(parsed, ControlError)
    assert reason in parsed.reason


def test_paths_with_spaces_and_quotes() -> None:
    parsed = parse_line("register-chat .nbs/chat/my team.chat  ")
    assert isinstance(parsed, ControlCommand) and parsed.argument == ".nbs/chat/my team.chat"
    parsed = parse_line('register-chat "/tmp/a b.chat"')
    assert isinstance(parsed, ControlCommand) and parsed.argument == "/tmp/a b.chat"


def test_crlf_line_is_accepted() -> None:
    parsed = parse_line("register-bus .nbs/events\r")
    assert isinstance(parsed, ControlCommand) and parsed.argument == ".nbs/events"


def test_apply_every_verb(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    for kind in ("chat", "bus", "hub"):
        _, result = process_line(registry, f"register-{kind} ./{kind}/a")
        assert result.outcome is Outcome.APPLIED
        _, result = process_line(registry, f"register-{kind} {tmp_path}/{kind}/a")
        assert result.outcome is Outcome.DUPLICATE
    assert registry.lines == ("chat:chat/a", "bus:bus/a", "hub:hub/a")
    for kind in ("chat", "bus", "hub"):
        _, result = process_line(registry, f"\\nbs-unregister-{kind} {kind}/a")
        assert result.outcome is Outcome.APPLIED
        _, result = process_line(registry, f"unregister-{kind} {kind}/a")
        assert result.outcome is Outcome.DUPLICATE and "not registered" in result.why
    assert registry.lines == ()
    _, result = process_line(registry, "set-poll-interval 12")
    assert result.outcome is Outcome.APPLIED and result.poll_interval == 12.0
    _, result = process_line(registry, "# note")
    assert result.outcome is Outcome.COMMENT
    _, result = process_line(registry, "frobnicate x")
    assert result.outcome is Outcome.ERROR and "unknown verb" in result.why


def test_register_types_are_separate(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    process_line(registry, "register-chat .nbs/x")
    _, result = process_line(registry, "register-hub .nbs/x")
    assert result.outcome is Outcome.APPLIED
    assert registry.lines == ("chat:.nbs/x", "hub:.nbs/x")


def test_scan_screen_lines_finds_commands_not_prose() -> None:
    screen = [
        "⏺ I will register the new chat.",
        "  \\nbs-register-chat .nbs/chat/debug.chat",
        "● \\nbs-set-poll-interval 60",
        "Use `\\nbs-register-chat <path>` to register.",
        "The verb \\nbs-register-chat is described here.",
        "\\nbs-frobnicate x",
        "⏺ \\nbs-register-chat .nbs/chat/debug.chat",
        "  \\nbs-set-poll-interval 120",
        "● \\nbs-unregister-bus .nbs/events",
        "  I will run \\nbs-register-chat .nbs/chat/x.chat later",  # mid-sentence
        "  \\nbs-frobnicate foo",  # unknown verb
        "❯ \\nbs-register-chat typed.chat",  # user input / echo
        "  ⎿  \\nbs-register-hub tool-output",  # tool output
        "  \\nbs-register-hub <path>",  # documentation placeholder
        "\\nbs-register-hub hubs/main.hub",
        "     \\nbs-register-chat deeper.chat",  # a tool result's continuation row
        "●\u00a0\\nbs-register-bus\u00a0.nbs/bus2 \u00a0",  # no-break spaces count as spaces
    ]
    assert scan_screen_lines(screen) == [
        "\\nbs-register-chat .nbs/chat/debug.chat",
        "\\nbs-set-poll-interval 60",
        "\\nbs-register-chat .nbs/chat/debug.chat",
        "\\nbs-set-poll-interval 120",
        "\\nbs-unregister-bus .nbs/events",
        "\\nbs-register-hub hubs/main.hub",
        "\\nbs-register-bus .nbs/bus2",
    ]


def test_replay_of_the_inbox_is_a_fixed_point(tmp_path: Path) -> None:
    import random

    from nbs_tui.core.control.control_commands import Replay

    rng = random.Random(7)
    paths = [f".nbs/chat/c{i}.chat" for i in range(6)] + [f"./.nbs/chat/c{i}.chat" for i in range(3)]
    for _ in range(200):
        start = Registry(tmp_path, [f"chat:{p}" for p in rng.sample(paths[:6], 3)])
        inbox = []
        for _ in range(rng.randint(0, 15)):
            verb = rng.choice(["register-chat", "unregister-chat", "register-hub", "# c", "bad line"])
            inbox.append(f"{verb} {rng.choice(paths)}")
        live = start.copy()
        for line in inbox:  # the dashboard applying lines as they arrive
            process_line(live, line)
        replay = Replay(live.copy())
        outcomes = [replay.feed(line)[1].outcome for line in inbox]
        assert replay.finish().lines == live.lines
        assert len(outcomes) == len(inbox)


def test_replay_keeps_position_where_one_by_one_would_move(tmp_path: Path) -> None:
    from nbs_tui.core.control.control_commands import Replay

    registry = Registry(tmp_path, ["chat:a.chat", "chat:b.chat"])
    replay = Replay(registry)
    results = [replay.feed(line)[1].outcome for line in ("unregister-chat a.chat", "register-chat a.chat")]
    assert results == [Outcome.APPLIED, Outcome.APPLIED]
    assert replay.finish().lines == ("chat:a.chat", "chat:b.chat")


def test_replay_outcomes_match_one_by_one(tmp_path: Path) -> None:
    import random

    from nbs_tui.core.control.control_commands import Replay

    rng = random.Random(3)
    paths = ["a.chat", "./a.chat", "b.chat", f"{tmp_path}/b.chat", "c dir/c.chat"]
    verbs = ["register-chat", "unregister-chat", "register-bus", "unregister-bus", "set-poll-interval", "# x", "bad"]
    for _ in range(200):
        start = Registry(tmp_path, ["chat:a.chat", "chat:./a.chat"] if rng.random() < 0.5 else [])
        lines = [f"{rng.choice(verbs)} {rng.choice([*paths, '5'])}" for _ in range(rng.randint(0, 20))]
        one_by_one = start.copy()
        expected = [process_line(one_by_one, line)[1] for line in lines]
        replay = Replay(start.copy())
        assert [replay.feed(line)[1] for line in lines] == expected
        finished = replay.finish()
        # the same resources (a resource listed twice at the start may keep both lines)...
        assert {(e.kind, e.absolute) for e in finished.entries()} == {(e.kind, e.absolute) for e in one_by_one.entries()}
        if not start.lines:  # ...and with nothing to keep in place, exactly the same file
            assert finished.lines == one_by_one.lines
