"""Decoding only the newest messages of a chat, and only those appended since the last read
(core.control.chat.tail_chat), reports exactly what a full parse reports about the whole chat."""

from __future__ import annotations

import base64
import random
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from nbs_tui.core.control.chat import (
    ChatTail,
    append_message,
    empty_chat,
    encode_message,
    parse_chat,
    render_chat,
    tail_chat,
    tail_of,
)
from tests.unit.fuzz import bounded, hostile_bytes

PATH = "/p/.nbs/chat/team.chat"


def same_as_full(tail: ChatTail, data: bytes, keep: int) -> None:
    """Everything the tail reports is what parse_chat reports, messages cut to the newest keep."""
    full = parse_chat(PATH, data)
    assert replace(tail, counted=-1, crc=0, unfinished=False) == tail_of(full, keep)
    assert tail.messages == full.messages[max(0, len(full.messages) - keep) :]
    assert tail.total == len(full.messages) and tail.undecodable == full.undecodable


def test_a_growing_chat_read_post_by_post_decodes_only_the_new_messages() -> None:
    rng = random.Random(7)
    data = empty_chat(1_700_000_000)
    tail, grew = tail_chat(PATH, data, 10)
    assert grew is None and tail.total == 0 and tail.messages == ()
    same_as_full(tail, data, 10)
    for n in range(60):
        for _ in range(rng.choice([1, 1, 2, 15])):  # sometimes several posts between reads
            data, _ = append_message(PATH, data, rng.choice(["alice", "bob"]), f"m{n} @bob", 1_700_000_000 + n)
        before = tail
        tail, grew = tail_chat(PATH, data, 10, before)
        same_as_full(tail, data, 10)
        assert grew == tail.total - before.total
    assert [m.index for m in tail.messages] == list(range(tail.total - 10, tail.total))
    # nothing new (a cursor moved, the header was rewritten): nothing appended
    assert tail_chat(PATH, data, 10, tail)[1] == 0


def test_what_was_read_before_is_taken_on_trust_and_anything_else_is_read_afresh() -> None:
    messages = [("alice", 1, f"m{i}") for i in range(40)]
    data = render_chat(messages, "alice", 100)
    tail, _ = tail_chat(PATH, data, 5)
    grown, _ = append_message(PATH, data, "bob", "new", 200)
    # a read that claims 999 messages so far is continued from, not checked again
    claimed = replace(tail, total=999)
    after, grew = tail_chat(PATH, grown, 5, claimed)
    assert grew == 1 and after.total == 1000 and after.newest is not None and after.newest.index == 999
    # but one whose bytes differ (an edit), of another chat, or after an unfinished line is not
    forged = replace(tail, crc=tail.crc ^ 1)
    for other in (forged, tail_chat("/p/.nbs/chat/other.chat", data, 5)[0], tail_of(parse_chat(PATH, data), 5)):
        after, grew = tail_chat(PATH, grown, 5, other)
        assert grew is None
        same_as_full(after, grown, 5)
    # an archive split (the first half moved out) is read afresh
    split = render_chat(messages[20:], "alice", 101)
    after, grew = tail_chat(PATH, split, 5, tail)
    assert grew is None and after.total == 20
    same_as_full(after, split, 5)


def test_an_unfinished_last_line_counts_now_and_is_read_again_next_time() -> None:
    data = render_chat([("alice", 1, f"m{i}") for i in range(8)], "alice", 100)
    tail, _ = tail_chat(PATH, data, 3)
    unfinished = data + encode_message("bob", "half", 5).encode()  # no newline yet
    tail, grew = tail_chat(PATH, unfinished, 3, tail)
    same_as_full(tail, unfinished, 3)
    assert grew == 1 and tail.unfinished and tail.newest is not None and tail.newest.text == "half"
    finished = unfinished + b"\n" + encode_message("bob", "whole", 6).encode() + b"\n"
    tail, grew = tail_chat(PATH, finished, 3, tail)
    assert grew is None and not tail.unfinished  # shown again whole, not appended twice
    same_as_full(tail, finished, 3)


def test_no_header_and_keeping_nothing() -> None:
    tail, grew = tail_chat(PATH, b"just some text\n", 5)
    assert grew is None and not tail.valid_header
    same_as_full(tail, b"just some text\n", 5)
    data = render_chat([("alice", 1, "a"), ("bob", 2, "b")], "bob", 3) + b"not base64!\n"
    tail, _ = tail_chat(PATH, data, 0)
    assert tail.messages == () and tail.total == 2 and tail.undecodable == 1
    same_as_full(tail, data, 0)


CHAT_PIECES = st.lists(
    st.one_of(
        st.builds(lambda h, t, e: encode_message(h, t, e).encode(), st.sampled_from(["a", "b", "|c", ""]),
                  st.text(max_size=30), st.integers(0, 2**40)),
        st.builds(lambda t: base64.b64encode(t.encode()), st.text(max_size=12)),
        hostile_bytes(),
        st.sampled_from([b"", b"---", b"=== nbs-chat ===", b"file-length: 12", b"\r", b"   ", b"\x1c", b"\xc2\x85"]),
    ),
    max_size=25,
)


@given(before=CHAT_PIECES, after=CHAT_PIECES, common=st.integers(0, 25), keep=st.integers(0, 8))
@bounded(200)
def test_any_bytes_before_and_after_give_the_full_parse(
    before: list[bytes], after: list[bytes], common: int, keep: int
) -> None:
    head = render_chat([], "x", 1)
    first = head + b"\n".join(before)
    second = head + b"\n".join(before[:common] + after)
    tail, _ = tail_chat(PATH, first, keep)
    same_as_full(tail, first, keep)
    again, grew = tail_chat(PATH, second, keep, tail)
    same_as_full(again, second, keep)
    if grew is not None:
        assert grew == again.total - tail.total
    # and with no header at all, or with one anywhere
    for data in (b"\n".join(before), b"\n".join(after) + b"\n" + head + b"\n".join(before)):
        same_as_full(tail_chat(PATH, data, keep, again)[0], data, keep)
        same_as_full(tail_chat(PATH, data, keep)[0], data, keep)
