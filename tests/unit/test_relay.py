"""The relay of the holder's actions through a pane option (nbs_tui/core/sidecar/relay.py): the value
travels as one ``list-panes`` field, each action is shown once, a gap is counted."""

from __future__ import annotations

from nbs_tui.core.fleet.pane_state import HistoryEntry
from nbs_tui.core.sidecar.relay import (
    MAX_TEXT,
    RELAY_KEEP,
    RelayedAction,
    RelayReader,
    append_action,
    encode_ring,
    parse_ring,
    read_all,
)
from nbs_tui.sidecar.events import PollStep


def ring_of(*seqs: int) -> tuple[RelayedAction, ...]:
    return tuple(RelayedAction(s, 100.0 + s, "poll", "box pid 7", "", (("result", "typed"),)) for s in seqs)


def test_a_ring_survives_its_encoding_and_stays_one_row() -> None:
    ring: tuple[RelayedAction, ...] = ()
    ring = append_action(ring, 10.5, "poll", "box pid 7", "", {"result": "typed", "text": "/nbs-poll"}.items())
    ring = append_action(ring, 11.0, "plan-select", "box pid 7", "tab\there\nnewline ; #{pane_id} \"q\"",
                         {"result": "pressed", "number": 2, "label": "Yes, auto", "options": [1, 2]}.items())
    raw = encode_ring(ring)
    assert "\t" not in raw and "\n" not in raw and raw.isascii()
    back = parse_ring(raw)
    assert back == ring
    assert [a.seq for a in back] == [1, 2]
    assert dict(back[1].data) == {"result": "pressed", "number": 2, "label": "Yes, auto"}  # no lists


def test_numbers_continue_from_the_ring_read_and_only_the_last_few_are_kept() -> None:
    ring = ring_of(5, 6)
    for _ in range(RELAY_KEEP + 2):
        ring = append_action(ring, 1.0, "nudge", "b pid 1", "x" * 500, ())
    assert len(ring) == RELAY_KEEP
    assert [a.seq for a in ring] == list(range(14 - RELAY_KEEP + 1, 15))
    assert len(ring[-1].message) == MAX_TEXT


def test_garbled_values_give_nothing_or_only_the_good_rows() -> None:
    assert parse_ring("") == () and parse_ring("not json") == () and parse_ring('{"a":1}') == ()
    good = encode_ring(ring_of(3))[1:-1]
    assert [a.seq for a in parse_ring(f'[[1],"x",[true,1,"poll","b","",{{}}],{good}]')] == [3]


def test_a_reader_shows_each_action_once_and_counts_a_gap() -> None:
    reader = RelayReader()
    assert reader.read("%1", ring_of(1, 2)).actions == ()  # the first look: history, not news
    assert reader.read("%1", ring_of(1, 2)).actions == ()
    news = reader.read("%1", ring_of(1, 2, 3))
    assert [a.seq for a in news.actions] == [3] and news.missed == 0
    assert reader.read("%1", ring_of(1, 2, 3)).actions == ()
    news = reader.read("%1", ring_of(*range(6, 12)))  # 4 and 5 fell out of the ring unseen
    assert [a.seq for a in news.actions] == list(range(6, 12)) and news.missed == 2
    news = reader.read("%1", ring_of(1))  # cleared and started again (a new holder found nothing)
    assert [a.seq for a in news.actions] == [1] and news.missed == 0
    assert reader.read("%1", ()).actions == ()


def test_a_reader_does_not_repeat_what_this_process_wrote_and_forgets_gone_panes() -> None:
    reader = RelayReader()
    assert read_all(reader, {"%1": (), "%2": ring_of(1)}) == {}
    reader.mark("%1", 1)
    assert read_all(reader, {"%1": ring_of(1), "%2": ring_of(1, 2)}).keys() == {"%2"}
    assert read_all(reader, {"%1": ring_of(1)}) == {}
    assert read_all(reader, {"%1": ring_of(1), "%2": ring_of(1, 2, 3)}) == {}  # %2 came back: a first look


def test_a_relayed_event_reads_as_the_holders_in_the_history() -> None:
    event = PollStep("%3", 1.0, by="gpu pid 42", result="typed", text="/nbs-poll")
    entry = HistoryEntry.from_sidecar_event(event)
    assert entry is not None and entry.text == "poll typed /nbs-poll (by sidecar gpu pid 42)"
    own = HistoryEntry.from_sidecar_event(PollStep("%3", 1.0, result="typed"))
    assert own is not None and "by sidecar" not in own.text


def test_a_ring_nested_past_the_recursion_limit_reads_as_garbled_not_raised() -> None:
    from nbs_tui.core.sidecar.relay import parse_ring

    assert parse_ring("[" * 100_000 + "]" * 100_000) == ()
