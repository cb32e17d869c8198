"""Usage per account and per agent from status-line samples (issue 37 items 2-3, the pure part)."""

from __future__ import annotations

from nbs_tui.core.fleet.accounts import Account, Budget
from nbs_tui.core.fleet.usage import StatusSample, UsageBook, Window, choose_account, usage_document

NOW = 1_800_000_000.0
RESET = NOW + 3 * 3600


def sample(at: float, pct: float, cost: float, *, session: str = "s1", pane: str = "%1", where: str = "/a") -> StatusSample:
    return StatusSample(at, where, pane, session, Window(pct, RESET), Window(pct / 4, RESET + 86400), cost, int(cost * 1000))


def test_burn_rate_projection_and_shares() -> None:
    book = UsageBook([Account("work", "/a")])
    book.add(sample(NOW - 1800, 20, 1.0, session="s1"))
    book.add(sample(NOW - 1800, 20, 0.0, session="s2", pane="%2"))
    book.add(sample(NOW, 30, 4.0, session="s1"))
    book.add(sample(NOW, 30, 1.0, session="s2", pane="%2"))
    usage = book.account("/a", NOW)
    assert usage.burn_percent_per_hour == 20.0  # 10 points in half an hour
    assert usage.limit_at is None  # 70 points at 20 an hour is 3.5 h: the window resets first (3 h)
    book.add(sample(NOW + 600, 40, 5.0, session="s1"))  # faster now: 20 points in 40 minutes
    assert book.account("/a", NOW + 600).limit_at == NOW + 600 + 60 / 30 * 3600
    assert usage.cost_usd == 5.0
    s1, s2 = usage.agents  # a session first seen within the hour counts from nothing
    assert (s1.session_id, s1.burn_share, s2.burn_share) == ("s1", 0.8, 0.2)
    document = usage_document([usage])
    assert document["accounts"][0]["five_hour"]["used_percentage"] == 30
    assert document["accounts"][0]["agents"][0] == {"session_id": "s1", "pane": "%1", "cost_usd": 4.0, "tokens": 4000, "burn_share": 0.8}
    assert set(document["accounts"][0]) == {"name", "kind", "config_dir", "five_hour", "seven_day", "cost_usd", "agents"}
    assert document["accounts"][0]["kind"] == "subscription"


def test_a_window_past_its_reset_is_empty_and_a_limit_screen_fills_it() -> None:
    book = UsageBook()
    book.add(sample(NOW, 90, 1.0))
    assert book.account("/a", RESET + 1).five_hour == Window(0.0, None)
    book.limit_seen("/b", "five_hour", RESET, NOW)
    assert book.account("/b", NOW).five_hour == Window(100.0, RESET)


def test_auto_takes_the_account_with_headroom_under_its_caps() -> None:
    accounts = [Account("a", "/a", max_five_hour_percent=50), Account("b", "/b")]
    book = UsageBook(accounts)
    book.add(sample(NOW, 60, 1.0, where="/a"))
    book.add(sample(NOW, 70, 1.0, where="/b"))
    budget = Budget(max_five_hour_percent=80)
    chosen = choose_account(book.all_accounts(NOW), budget)
    assert chosen is not None and chosen.account.name == "b"  # a is over its own 50 % cap
    assert choose_account(book.all_accounts(NOW), Budget(max_five_hour_percent=65)) is None


def test_a_limit_screen_s_record_fills_its_window_until_the_reset_and_adds_no_agent() -> None:
    import json

    from nbs_tui.core.fleet.usage import limit_record, sample_from_line

    book = UsageBook()
    book.add(sample(NOW - 60, 70, 1.0))
    weekly = sample_from_line(json.loads(limit_record("/a", "%1", "weekly", RESET + 86400, NOW)))
    session = sample_from_line(json.loads(limit_record("/a", "%1", "5-hour", RESET, NOW)))
    assert weekly is not None and session is not None
    book.add(weekly)
    book.add(session)
    usage = book.account("/a", NOW)
    assert usage.five_hour == Window(100.0, RESET) and usage.seven_day == Window(100.0, RESET + 86400)
    assert [agent.session_id for agent in usage.agents] == ["s1"]
