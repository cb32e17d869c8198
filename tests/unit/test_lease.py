"""The lease's pure rules: value format, observed-renewal expiry, the in-flight rule."""

from __future__ import annotations

import pytest

from nbs_tui.core.sidecar.lease_rules import (
    DEFAULT_TTL,
    MAX_TTL,
    ForeignLease,
    InflightMark,
    Lease,
    LeaseObserver,
    answered,
    cas_format,
    clean_host,
    describe_holder,
    escape_format_literal,
    fence_format,
    inflight_erase_count,
    may_act,
    new_lease,
    parse_inflight,
    parse_lease,
    parse_switch,
    renew_due,
    too_old,
)

TOKEN = "0123456789abcdef"
OTHER = "fedcba9876543210"


def test_value_round_trips_and_renewal_changes_it() -> None:
    lease = new_lease("box.example", 4242, TOKEN, since=1700000000.7)
    raw = lease.render()
    assert raw == f"nbs1 box.example 4242 {TOKEN} 0 8 1700000000"
    assert parse_lease(raw) == lease
    renewed = lease.renewed()
    assert renewed.seq == 1 and renewed.render() != raw
    assert parse_lease(renewed.render()) == renewed


def test_empty_is_free() -> None:
    assert parse_lease("") is None


@pytest.mark.parametrize(
    "raw",
    [
        "someone else's",
        "nbs1 host 1 0123456789abcdef 0 8",  # a field short
        "nbs2 host 1 0123456789abcdef 0 8 1",  # another version
        "nbs1 host x 0123456789abcdef 0 8 1",
        "nbs1 host 1 NOTHEX 0 8 1",
        "nbs1 ho/st 1 0123456789abcdef 0 8 1",
        "nbs1 host 0 0123456789abcdef 0 8 1",
        "nbs1 host 1 0123456789abcdef -1 8 1",
        "nbs1 host 1 0123456789abcdef 0 0 1",
        "nbs1 host 01 0123456789abcdef 0 8 1",  # not canonical
        "nbs1  host 1 0123456789abcdef 0 8 1",
        "nbs1 host 1 0123456789abcdef 0 nan 1",
    ],
)
def test_garbled_values_are_foreign_not_free(raw: str) -> None:
    value = parse_lease(raw)
    assert isinstance(value, ForeignLease)
    assert value.raw == raw


def test_host_is_cleaned_and_token_checked() -> None:
    assert clean_host("my host;rm") == "my_host_rm"
    assert clean_host("") == "unknown"
    with pytest.raises(ValueError):
        new_lease("h", 1, "short", since=0)


def test_huge_ttl_is_clamped() -> None:
    lease = Lease("h", 1, TOKEN, 0, 1e9, 0)
    assert lease.effective_ttl == MAX_TTL


def test_observer_expires_only_an_unchanged_value() -> None:
    obs = LeaseObserver()
    assert obs.takeover_from(0.0) is None  # never read: no decision
    held = new_lease("h", 1, TOKEN, since=0).render()
    assert obs.observe(held, 100.0)
    assert obs.takeover_from(100.0 + DEFAULT_TTL - 0.01) is None
    assert not obs.observe(held, 104.0)  # the same value again does not restart the clock
    assert obs.takeover_from(100.0 + DEFAULT_TTL) == held
    # a renewal seen in time keeps it alive, timed from when it was seen
    renewed = parse_lease(held)
    assert isinstance(renewed, Lease)
    assert obs.observe(renewed.renewed().render(), 107.0)
    assert obs.takeover_from(107.0 + DEFAULT_TTL - 0.01) is None
    assert obs.takeover_from(107.0 + DEFAULT_TTL) == renewed.renewed().render()


def test_free_is_taken_at_once_and_ttl_comes_from_the_value() -> None:
    obs = LeaseObserver()
    obs.observe("", 5.0)
    assert obs.takeover_from(5.0) == ""
    short = Lease("h", 1, TOKEN, 3, 2.0, 0).render()
    obs.observe(short, 10.0)
    assert obs.takeover_from(11.9) is None
    assert obs.takeover_from(12.0) == short


def test_foreign_value_is_held_until_it_stops_changing() -> None:
    obs = LeaseObserver(DEFAULT_TTL)
    obs.observe("garbage", 0.0)
    assert isinstance(obs.value, ForeignLease)
    assert obs.takeover_from(DEFAULT_TTL - 0.1) is None
    obs.observe("garbage2", DEFAULT_TTL - 0.1)  # something keeps writing it: still live
    assert obs.takeover_from(DEFAULT_TTL + 1) is None
    assert obs.takeover_from(2 * DEFAULT_TTL) == "garbage2"


def test_holder_timing_leaves_a_margin_before_any_takeover() -> None:
    ttl = 8.0
    assert not renew_due(0.0, 1.99, ttl)
    assert renew_due(0.0, 2.0, ttl)
    assert may_act(0.0, 3.99, ttl)
    assert not may_act(0.0, 4.0, ttl)
    assert not may_act(None, 0.0, ttl)


def test_formats_escape_what_tmux_would_read() -> None:
    assert escape_format_literal("a,b}c#d{e") == "a#,b#}c##d{e"
    assert cas_format("") == "#{==:#{@nbs_sidecar},}"
    assert fence_format(TOKEN) == "#{m:* " + TOKEN + " *,#{@nbs_sidecar}}"
    with pytest.raises(ValueError):
        fence_format("*")


def test_inflight_mark_round_trips() -> None:
    mark = InflightMark(TOKEN, "/nbs-poll")
    assert parse_inflight(mark.render()) == mark
    assert parse_inflight(f"{TOKEN} text with spaces") == InflightMark(TOKEN, "text with spaces")
    assert parse_inflight("") is None
    assert parse_inflight(f"{TOKEN} ") is None
    assert parse_inflight("nothex /nbs-poll") is None


@pytest.mark.parametrize(
    ("box", "expected"),
    [
        ("/nbs-poll", 9),  # typed whole, never submitted
        ("/nbs-p", 6),  # typing cut short
        ("", 0),  # submitted (or never typed): just drop the mark
        ("/nbs-poll please", 0),  # the operator typed on: not ours to touch
        ("hello", 0),  # the operator's own text
        ("/nbs-poll/nbs-poll", 0),  # not a prefix: left alone
        (None, None),  # no box on screen now: look again later
    ],
)
def test_inflight_rule_erases_exactly_the_left_over_poll(box: str | None, expected: int | None) -> None:
    mark = InflightMark(OTHER, "/nbs-poll")
    assert inflight_erase_count(mark, TOKEN, box) == expected


def test_own_inflight_mark_is_not_recovered() -> None:
    assert inflight_erase_count(InflightMark(TOKEN, "/nbs-poll"), TOKEN, "/nbs-poll") is None


def test_switches_and_answers() -> None:
    assert parse_switch("off") is False
    assert parse_switch(" ON ") is True
    assert parse_switch("") is None
    assert answered("r1", "r1 ok")
    assert not answered("r1", "r10 ok")
    assert not answered("", " ok")


@pytest.mark.parametrize(
    ("text", "old"),
    [("tmux 3.3a", False), ("tmux 2.9a", True), ("tmux next-3.5", False), ("tmux master", False), ("tmux 3.0", False)],
)
def test_tmux_version_check(text: str, old: bool) -> None:
    reason = too_old(text)
    assert (reason is not None) == old
    if reason:
        assert "\n" not in reason and "viewer only" in reason


def test_holder_described_for_the_status_bar() -> None:
    lease = Lease("vm", 42, TOKEN, 0, 8.0, 0)
    assert describe_holder(lease, True) == "sidecar: here"
    assert describe_holder(None, False) == "no sidecar"
    assert describe_holder(ForeignLease("x", "y"), False) == "sidecar: unknown holder"
    assert describe_holder(lease, False).startswith("sidecar: vm pid 42 since ")


def test_one_look_by_a_command_judges_dead_expired_and_held() -> None:
    """`lease_vacancy`: a holder of this host whose pid is gone is dead at once; any other value
    is held until an earlier command saw the same value a whole ttl ago (a foreign one: 8 s)."""
    from nbs_tui.core.sidecar.lease_rules import Vacancy, lease_vacancy

    here = new_lease("box one", 41, "ab" * 8, since=1000.0, ttl=4).render()
    there = new_lease("elsewhere", 41, "cd" * 8, since=1000.0, ttl=4).render()
    alive, gone = (lambda pid: True), (lambda pid: False)
    assert lease_vacancy("", "box one", alive, None, 0.0) is Vacancy.FREE
    assert lease_vacancy(here, "box one", gone, None, 0.0) is Vacancy.DEAD  # the host's name cleaned alike
    assert lease_vacancy(here, "box one", alive, None, 0.0) is Vacancy.HELD
    assert lease_vacancy(there, "box one", gone, None, 0.0) is Vacancy.HELD  # its pid is not ours to ask
    assert lease_vacancy(there, "box one", gone, (there, 10.0), 13.9) is Vacancy.HELD
    assert lease_vacancy(there, "box one", gone, (there, 10.0), 14.0) is Vacancy.EXPIRED
    assert lease_vacancy(here, "box one", alive, (here, 10.0), 14.0) is Vacancy.EXPIRED  # alive but not renewing
    assert lease_vacancy(there, "box one", gone, (here, 10.0), 99.0) is Vacancy.HELD  # it changed since
    assert lease_vacancy("someone's", "box one", gone, ("someone's", 0.0), 7.9) is Vacancy.HELD
    assert lease_vacancy("someone's", "box one", gone, ("someone's", 0.0), 8.0) is Vacancy.EXPIRED
