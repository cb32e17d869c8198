"""Property tests: the inbox, chat, hook-spool and transcript parsers under hostile input.

Whatever bytes an agent, a hook or a person leaves in these files, reading them never raises
(the readers' own loops catch only what the parsers document), and what is valid survives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nbs_tui.claude.spool import SpoolReader, parse_line
from nbs_tui.claude.transcript import TranscriptFacts, TranscriptTail, apply_record
from nbs_tui.core.control.chat import (
    ChatError,
    append_message,
    decode_message,
    empty_chat,
    parse_chat,
    parse_cursors,
)
from nbs_tui.core.control.control_commands import Comment, ControlCommand, ControlError
from nbs_tui.core.control.control_commands import parse_line as parse_control
from nbs_tui.core.control.inbox import decode_line
from nbs_tui.core.sidecar.meters import MeterAccount, usage_of_record
from nbs_tui.files.tail import TailLine, TailReader
from tests.unit.fuzz import HOSTILE_TEXT, bounded, cuts, hostile_bytes

JSON_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20), st.sampled_from([10**400, -(10**400), 2**63, "SessionStart", "%3", "assistant", "user"]),
)
JSON_VALUE = st.recursive(
    JSON_LEAF, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5), max_leaves=20
)
KEYS = ("payload", "hook_event_name", "nbs_pane", "nbs_tmux", "nbs_time", "session_id", "transcript_path", "cwd")


@st.composite
def spool_lines(draw: st.DrawFn) -> bytes:
    """A spool line: near a real one (its keys, odd values), or any bytes."""
    kind = draw(st.sampled_from(["near", "json", "bytes", "deep"]))
    if kind == "near":
        payload = {"hook_event_name": draw(st.sampled_from(["Stop", "SessionStart", ""]) | JSON_LEAF)}
        payload.update(draw(st.dictionaries(st.sampled_from(KEYS), JSON_VALUE, max_size=4)))
        record: Any = {"payload": payload, "nbs_pane": draw(JSON_LEAF), "nbs_time": draw(JSON_LEAF)}
        return json.dumps(record).encode()
    if kind == "json":
        return json.dumps(draw(JSON_VALUE)).encode()
    if kind == "deep":
        depth = draw(st.integers(100, 3000))  # past the recursion limit (1000)
        return b'{"payload": ' + b"[" * depth + b"]" * depth + b"}"
    return draw(hostile_bytes()).replace(b"\n", b" ")


@bounded(200)
@given(line=spool_lines())
def test_a_spool_line_parses_or_raises_only_what_the_reader_catches(line: bytes) -> None:
    try:
        event = parse_line(line, 1000.0)
    except (ValueError, TypeError):
        return
    assert event.event and isinstance(event.time, float)
    assert event.time == event.time and event.time not in (float("inf"), float("-inf"))  # a real instant


@bounded(40)
@given(lines=st.lists(spool_lines(), min_size=1, max_size=8))
def test_the_spool_reader_survives_any_lines_and_keeps_the_good_ones(tmp_path_factory: pytest.TempPathFactory, lines: list[bytes]) -> None:
    spool = tmp_path_factory.mktemp("spool") / "hooks.jsonl"
    good = json.dumps({"payload": {"hook_event_name": "Stop", "session_id": "s"}, "nbs_pane": "%1", "nbs_time": 5}).encode()
    spool.write_bytes(b"\n".join([*lines, good]) + b"\n")
    reader = SpoolReader(spool, from_start=True, clock=lambda: 1000.0)
    events = reader.read()
    assert events and events[-1].pane_id == "%1" and events[-1].time == 5.0
    assert len(events) + reader.bad_lines == sum(1 for line in [*lines, good] if line.strip())


def test_regression_a_huge_hook_time_or_deep_nesting_is_a_bad_line_not_an_error(tmp_path: Path) -> None:
    """Found by the fuzzing above: ``float(10**400)`` raised OverflowError and a deeply nested
    payload RecursionError, out of the reader's loop: the whole batch of events was lost and the
    watcher's cycle failed on every read."""
    spool = tmp_path / "hooks.jsonl"
    huge = b'{"payload": {"hook_event_name": "Stop"}, "nbs_time": 1' + b"0" * 400 + b"}"
    deep = b'{"payload": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    inf = b'{"payload": {"hook_event_name": "Stop"}, "nbs_time": Infinity}'
    good = b'{"payload": {"hook_event_name": "Stop"}, "nbs_pane": "%1", "nbs_time": 5}'
    spool.write_bytes(b"\n".join([huge, deep, inf, good]) + b"\n")
    reader = SpoolReader(spool, from_start=True, clock=lambda: 1000.0)
    events = reader.read()
    # the huge and the infinite time are no instants: the reading time stands in; the deep line is bad
    assert [(e.pane_id, e.time) for e in events] == [(None, 1000.0), (None, 1000.0), ("%1", 5.0)]
    assert reader.bad_lines == 1


# -- control inbox -------------------------------------------------------------------------------


@bounded(200)
@given(raw=hostile_bytes(), too_long=st.booleans())
def test_an_inbox_line_always_decodes_and_classifies(raw: bytes, too_long: bool) -> None:
    raw = raw.replace(b"\n", b"")
    line = decode_line(7, 100, raw, len(raw), too_long)
    assert line.number == 7 and "\n" not in line.text
    parsed = parse_control(line.text)
    assert isinstance(parsed, Comment | ControlCommand | ControlError)
    if isinstance(parsed, ControlCommand):
        assert parsed.argument.isprintable()  # nothing with a control character is ever applied


# -- chats ----------------------------------------------------------------------------------------


@bounded(150)
@given(data=hostile_bytes(), tail=HOSTILE_TEXT)
def test_a_chat_file_always_parses(data: bytes, tail: str) -> None:
    for candidate in (data, empty_chat(0) + data, empty_chat(0) + tail.encode("utf-8", "surrogatepass")):
        chat = parse_chat("c.chat", candidate)
        assert chat.size == len(candidate)
        assert all(m.handle for m in chat.messages)
    parse_cursors(tail)
    decode_message(tail, 0)


@bounded(100)
@given(
    messages=st.lists(
        st.tuples(st.from_regex(r"[A-Za-z0-9._@+-]{1,20}", fullmatch=True), HOSTILE_TEXT.filter(lambda t: t.strip())),
        min_size=1, max_size=5,
    ),
    junk=hostile_bytes(),
)
def test_appended_messages_read_back_whole_even_after_junk_lines(messages: list[tuple[str, str]], junk: bytes) -> None:
    data = empty_chat(0) + junk.replace(b"\n", b" ") + b"\n"
    for handle, text in messages:
        try:
            data, _ = append_message("c.chat", data, handle, text, 1_700_000_000)
        except ChatError:  # junk that made the header unreadable: refused, nothing written
            return
    chat = parse_chat("c.chat", data)
    assert [(m.handle, m.text) for m in chat.messages][-len(messages):] == [
        (h, t.encode("utf-8", "replace").decode("utf-8", "replace")) for h, t in messages
    ]
    assert chat.consistent


# -- transcripts (states and meters) ---------------------------------------------------------------


@bounded(60)
@given(records=st.lists(st.dictionaries(st.sampled_from(["type", "message", "timestamp", "isSidechain", "requestId", "uuid", "isApiErrorMessage", "error", "apiErrorStatus", "subtype"]), JSON_VALUE, max_size=6), max_size=6))
def test_transcript_records_of_any_shape_fold_without_an_error(records: list[dict[str, Any]]) -> None:
    facts = TranscriptFacts(path=Path("t.jsonl"))
    account = MeterAccount()
    for record in records:
        facts = apply_record(facts, record, 0.0)
        usage = usage_of_record(record)
        if usage is not None:
            account.add(usage)
    tokens = account.meters.tokens
    assert min(tokens.input, tokens.output, tokens.cache_read, tokens.cache_creation) >= 0


@bounded(30)
@given(lines=st.lists(spool_lines() | hostile_bytes(), max_size=6))
def test_a_transcript_of_any_bytes_is_read_without_an_error(tmp_path_factory: pytest.TempPathFactory, lines: list[bytes]) -> None:
    path = tmp_path_factory.mktemp("t") / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    tail = TranscriptTail(path)
    tail.read()
    assert tail.facts.records + tail.facts.bad_lines <= len(lines) + sum(line.count(b"\n") for line in lines)


# -- the tail reader under all three (inbox, spool, transcript) ------------------------------------


@bounded(60)
@given(data=hostile_bytes(), cut=st.data())
def test_the_tail_reader_returns_each_complete_line_once_however_the_writes_fall(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, cut: st.DataObject
) -> None:
    """Written in any pieces (mid-line, mid-character), read between the writes: the lines read
    are exactly the file's complete lines, in order, each once; a line over the limit comes back
    once as too long."""
    data = data + b"\n" + b"x" * cut.draw(st.sampled_from([0, 10, 300]), label="long line") + b"\ntail"
    path = tmp_path_factory.mktemp("tail") / "f"
    path.write_bytes(b"")
    reader: TailReader[TailLine] = TailReader(path, TailLine, max_line=200)
    got: list[TailLine] = []
    for piece in cut.draw(cuts(data), label="writes"):
        with path.open("ab") as handle:
            handle.write(piece)
        got.extend(item for item in reader.read(cut.draw(st.sampled_from([None, 7, 64]), label="limit")) if isinstance(item, TailLine))
    got.extend(item for item in reader.read() if isinstance(item, TailLine))
    expected = data.split(b"\n")[:-1]  # "tail" has no newline yet: held back
    assert [line.length for line in got] == [len(line) for line in expected]
    assert [line.raw for line in got if not line.too_long] == [line for line in expected if len(line) <= 200]
    assert all(line.raw == raw[:120] for line, raw in zip(got, expected, strict=True) if line.too_long)
