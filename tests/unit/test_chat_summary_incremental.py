"""A chat's summary counted on from the last read (core.control.chat.tail_chat with keep=1, as the
control plane does) is exactly the summary a full parse gives, however the file changed."""

from __future__ import annotations

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
    summary_of,
    summary_of_tail,
    tail_chat,
)
from tests.unit.fuzz import bounded, hostile_bytes

PATH = "/p/.nbs/chat/team.chat"
CURSORS = {"alice": 3, "bob": -1}


def full(data: bytes) -> object:
    return summary_of(parse_chat(PATH, data), CURSORS, ("old-archive.chat",))


def tallied(data: bytes, before: ChatTail | None) -> tuple[object, ChatTail]:
    tail, _ = tail_chat(PATH, data, 1, before)
    return summary_of_tail(tail, CURSORS, ("old-archive.chat",)), tail


def test_a_growing_chat_counted_post_by_post_matches_a_full_parse() -> None:
    rng = random.Random(5)
    data = empty_chat(1_700_000_000)
    tally: ChatTail | None = None
    for n in range(300):
        data, _ = append_message(PATH, data, rng.choice(["alice", "bob", "carol"]), f"message {n} @bob", 1_700_000_000 + n)
        summary, tally = tallied(data, tally)
        assert summary == full(data)
    assert tally is not None and tally.total == 300
    assert tally.newest is not None and tally.newest.text == "message 299 @bob"


def test_only_the_appended_lines_are_decoded() -> None:
    data = render_chat([("alice", 1, f"m{i}") for i in range(50)], "alice", 100)
    _, tally = tallied(data, None)
    assert tally is not None
    grown, _ = append_message(PATH, data, "bob", "new", 200)
    # the header changed (file-length, participants, last-write): the body's start did not
    body_start = grown.index(b"\n---\n") + 5
    assert grown[body_start : body_start + tally.counted] == data[data.index(b"\n---\n") + 5 :]
    summary, after = tallied(grown, tally)
    assert after is not None and after.total == 51 and summary == full(grown)
    # what was counted is taken on trust, not decoded again: a tally that claims 999 there
    trusted = replace(tally, total=999)
    summary, after = tallied(grown, trusted)
    assert after is not None and after.total == 1000
    # a tally whose text differs from the file's (an archive split, an edit) is not trusted
    forged = replace(tally, crc=tally.crc ^ 1, total=999)
    summary, again = tallied(grown, forged)
    assert summary == full(grown) and again is not None and again.total == 51


def test_an_archive_split_and_an_unfinished_last_line_are_counted_afresh() -> None:
    messages = [("alice", 1, f"m{i}") for i in range(40)]
    data = render_chat(messages, "alice", 100)
    _, tally = tallied(data, None)
    split = render_chat(messages[20:], "alice", 101)  # the first half moved to an archive
    summary, tally = tallied(split, tally)
    assert summary == full(split) and tally is not None and tally.total == 20
    unfinished = split + encode_message("bob", "half", 5).encode()  # no newline yet
    summary, after = tallied(unfinished, tally)
    assert summary == full(unfinished)
    assert after.total == 21 and after.unfinished  # counted now, and read afresh next time
    finished = unfinished + b"\n"
    summary, _ = tallied(finished, after)
    assert summary == full(finished)


CHAT_PIECES = st.lists(
    st.one_of(
        st.builds(lambda h, t, e: encode_message(h, t, e).encode(), st.sampled_from(["a", "b"]), st.text(max_size=30),
                  st.integers(0, 2**40)),
        hostile_bytes(),
        st.sampled_from([b"", b"---", b"=== nbs-chat ===", b"file-length: 12", b"\r", b"   "]),
    ),
    max_size=25,
)


@given(before=CHAT_PIECES, after=CHAT_PIECES, keep=st.integers(0, 25))
@bounded(200)
def test_any_bytes_before_and_after_give_the_full_parse(before: list[bytes], after: list[bytes], keep: int) -> None:
    head = render_chat([], "x", 1)
    first = head + b"\n".join(before)
    second = head + b"\n".join(before[:keep] + after)
    _, tally = tallied(first, None)
    summary, _ = tallied(second, tally)
    assert summary == full(second)
    # and with no header at all, or with one anywhere
    for data in (b"\n".join(before), b"\n".join(after) + b"\n" + head + b"\n".join(before)):
        _, tally = tallied(data, tally)
        assert tallied(data, None)[0] == full(data)
