"""An agent's meters relayed through a pane option (nbs_tui/core/sidecar/meters_relay.py): the value
round-trips as one ``list-panes`` field, and a garbled or oversized one is no meters."""

from __future__ import annotations

import json

import pytest

from nbs_tui.core.fleet.pane_state import HistoryEntry
from nbs_tui.core.sidecar.meters import DEFAULT_PRICES, Meters, Tokens, describe
from nbs_tui.core.sidecar.meters_relay import MAX_MODELS, MAX_VALUE, encode_meters, parse_meters

METERS = Meters(
    by_model=(
        ("claude-haiku-4-5", Tokens(10, 20, 30, 40, 5)),
        ("claude-sonnet-4-5-20250929[1m]", Tokens(1200, 340, 5000, 120_000, 0)),
    ),
    responses=7,
    context=Tokens(3, 40, 500, 60_000, 0),
    context_model="claude-sonnet-4-5-20250929[1m]",
)


def test_meters_survive_their_encoding_and_stay_one_ascii_row() -> None:
    raw = encode_meters(METERS)
    assert "\t" not in raw and "\n" not in raw and raw.isascii() and " " not in raw
    back = parse_meters(raw)
    assert back == METERS
    # the viewer prices them with its own table, to the same line the holder would show
    assert back is not None and describe(back, DEFAULT_PRICES) == describe(METERS, DEFAULT_PRICES)


def test_no_responses_is_no_option_and_an_empty_option_is_no_meters() -> None:
    assert encode_meters(None) == "" and encode_meters(Meters()) == ""
    assert parse_meters("") is None and parse_meters("  ") is None
    no_context = Meters((("m", Tokens(1, 2, 0, 0, 0)),), 1)
    assert parse_meters(encode_meters(no_context)) == no_context


@pytest.mark.parametrize(
    "raw",
    [
        "{", "null", "[]", "{}", '"x"', "[2,1,[],null,null]",  # broken, not a list, another version
        "[1,-1,[],null,null]", "[1,true,[],null,null]", "[1,1.5,[],null,null]",
        '[1,1,[["m",1,2,3]],null,null]',  # too few counts
        '[1,1,[["m",1,2,3,4,"5"]],null,null]', '[1,1,[["m",1,2,3,4,9]],null,null]',  # 1h > writes
        '[1,1,[[7,1,2,3,4,0]],null,null]', '[1,1,[["a\\tb",1,2,3,4,0]],null,null]',
        "[1,1,[],[1,2],null]", '[1,1,[],null,["m"]]', "[1,1,{},null,null]",
        "[1,1,[],null,null" + "]" * 3, "[" * 5000 + "]" * 5000,  # nested past any sane depth
        '[1,1,[["m",100000000000000,0,0,0,0]],null,null]',
    ],
)
def test_a_garbled_value_is_no_meters_never_an_exception(raw: str) -> None:
    assert parse_meters(raw) is None


def test_sizes_are_bounded() -> None:
    many = Meters(tuple((f"model-{i:02d}", Tokens(1, 1, 0, 0, 0)) for i in range(MAX_MODELS + 5)), 30)
    raw = encode_meters(many)
    back = parse_meters(raw)
    assert back is not None and len(back.by_model) == MAX_MODELS  # the encoder trims
    long_name = Meters((("m" * 500, Tokens(1, 1, 0, 0, 0)),), 1, Tokens(1, 1, 0, 0, 0), "m" * 500)
    back = parse_meters(encode_meters(long_name))
    assert back is not None and len(back.by_model[0][0]) == 100
    rows = [[f"m{i}", 1, 1, 0, 0, 0] for i in range(MAX_MODELS + 1)]
    assert parse_meters(json.dumps([1, 1, rows, None, None])) is None  # too many models
    padded = json.dumps([1, 1, [], None, None]) + " " * MAX_VALUE
    assert parse_meters(padded) is not None  # surrounding blanks are not the value
    assert parse_meters("[1,1,[],null," + '"' + "x" * MAX_VALUE + '"]') is None  # too long


def test_the_dashboard_shows_relayed_meters_only_where_it_reads_no_transcript() -> None:
    from nbs_tui.core.fleet.model import PaneInfo
    from nbs_tui.core.fleet.pane_state import ClaudeFacts, PaneState
    from nbs_tui.sidecar.events import MetersNews

    state = PaneState()
    here = PaneInfo("%1", "s", 0, "w", 0, "t", "claude", "/p", 1, 80, 24)
    there = PaneInfo("b:%1", "s", 0, "w", 0, "t", "claude", "/p", 1, 80, 24)
    state.set_fleet([here, there])
    local = Meters((("claude-haiku-4-5", Tokens(1, 2, 0, 0, 0)),), 1)
    state.facts["%1"] = ClaudeFacts(model="m", meters=local)
    assert state.set_relayed_meters("%1", METERS) and state.set_relayed_meters("b:%1", METERS)
    assert not state.set_relayed_meters("b:%1", METERS)  # unchanged
    assert not state.set_relayed_meters("gone:%9", METERS)  # not listed
    assert state.meters_of("%1") == local  # the transcript read here wins
    shown = state.facts_shown("b:%1")
    assert shown is not None and shown.meters == METERS and shown.model is None
    total = state.fleet_meters()
    assert total is not None and total.responses == 8
    event = MetersNews("b:%1", 1.0, meters=METERS)
    assert HistoryEntry.from_sidecar_event(event) is None  # not a line of history
    assert state.set_relayed_meters("b:%1", None) and state.facts_shown("b:%1") is None
    state.set_fleet([here])
    assert "b:%1" not in state.relayed_meters
