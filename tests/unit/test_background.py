"""Claude Code's background sessions as ``claude agents --json`` reports them (recorded replies of
the real CLI in tests/corpus/claude/<version>/agents-json-bg.txt; docs/lifecycle.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbs_tui.core.fleet.background import (
    BackgroundSession,
    attach_argv,
    background_support,
    parse_agents_json,
)

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "claude"


def _replies(version: str) -> list[str]:
    """The recorded replies of one file: after the header line, one JSON array after another."""
    text = (CORPUS / version / "agents-json-bg.txt").read_text(encoding="utf-8").split("\n", 1)[1]
    decoder, replies, at = json.JSONDecoder(), [], 0
    while at < len(text.rstrip()):
        _value, end = decoder.raw_decode(text, at)
        replies.append(text[at:end])
        at = end + 1
    return replies


def _help(version: str, name: str) -> str:
    return (CORPUS / version / name).read_text(encoding="utf-8").split("\n", 1)[1]


@pytest.mark.parametrize(
    ("version", "lists", "attaches"),
    [("2.1.100", False, False), ("2.1.150", True, True), ("2.1.197", True, True), ("2.1.265", True, True), ("2.1.332", True, True)],
)
def test_support_read_from_the_versions_help(version: str, lists: bool, attaches: bool) -> None:
    support = background_support(_help(version, "agents-help.txt"), _help(version, "attach-help.txt"))
    assert (support.list_json, support.attach) == (lists, attaches)


def test_2_1_120_has_no_attach() -> None:
    # measured: `claude attach --help` of 2.1.120 prints this line, and its agents --help no --json
    assert not background_support("Usage: claude agents [options]\n", "'attach' is not available in this release.\n").attach


def test_2_1_332_running_then_stopped() -> None:
    running, stopped = (parse_agents_json(reply) for reply in _replies("2.1.332"))
    assert running.problem is None
    assert running.sessions == (
        BackgroundSession(
            id="1163b0f0", name="bgname", cwd="/tmp/bgx/2.1.332/work",
            session_id="1163b0f0-8f7e-4d6c-b659-b7d7cf1f228c", status="idle", state="working",
            pid=8093, started_at=1795924139.458,
        ),
    )  # fmt: skip
    assert running.sessions[0].reported == "idle"
    assert stopped.sessions[0].reported == "stopped" and stopped.sessions[0].pid is None


def test_2_1_197_while_it_starts_has_no_status() -> None:
    starting, running = (parse_agents_json(reply) for reply in _replies("2.1.197"))
    assert starting.sessions[0].reported == "working"
    assert running.sessions[0].reported == "busy"
    assert [s.label for s in running.sessions] == ["bgname"]


def test_2_1_265_busy_then_idle() -> None:
    assert [parse_agents_json(r).sessions[0].reported for r in _replies("2.1.265")] == ["busy", "idle"]


def test_interactive_sessions_are_not_listed() -> None:
    reply = (CORPUS / "2.1.332" / "agents-json.txt").read_text(encoding="utf-8").split("\n", 1)[1]
    assert parse_agents_json(reply) == parse_agents_json("[]")
    assert parse_agents_json(reply).problem is None


def test_unknown_fields_and_odd_values_are_tolerated() -> None:
    reply = json.dumps(
        [
            {"id": "aa11", "kind": "background", "name": 7, "pid": True, "startedAt": "soon", "colour": "red",
             "nested": {"x": 1}},
            {"id": "bad id; rm -rf", "kind": "background"},  # never goes on a command line
            {"id": "-rf", "kind": "background"},  # nor as an option
            {"kind": "background"},
        ]
    )  # fmt: skip
    sessions = parse_agents_json(reply).sessions
    assert sessions == (BackgroundSession(id="aa11"),)
    assert sessions[0].label == "aa11" and sessions[0].reported == "starting"


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        ("Error: unknown option '--json'", "printed no JSON"),
        ("", "printed no JSON"),
        ('{"sessions": []}', "a dict, not a list"),
        ('[1, 2]', "listed a int, not a session"),
        ('[{"id": "a1", "kind": "background"', "printed no JSON"),
    ],
)
def test_a_malformed_reply_is_a_problem_not_a_crash(reply: str, words: str) -> None:
    parsed = parse_agents_json(reply)
    assert parsed.sessions == ()
    assert parsed.problem is not None and words in parsed.problem


def test_the_attach_command_line() -> None:
    session = BackgroundSession(id="1163b0f0")
    assert attach_argv(["env", "HOME=/x", "claude"], session) == ["env", "HOME=/x", "claude", "attach", "1163b0f0"]
