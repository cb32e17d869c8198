"""The budget governor's rules (issue 37 item 4): held at a cap, one notice, staggered release,
the per-agent cap and the operator's lift."""

from __future__ import annotations

from nbs_tui.core.fleet.accounts import Account, Budget
from nbs_tui.core.fleet.budget_rules import BudgetGovernor
from nbs_tui.core.fleet.usage import StatusSample, UsageBook, Window

NOW = 1_800_000_000.0
RESET = NOW + 600


def book_with(a_percent: float, b_percent: float = 10, *, cost: float = 0.5) -> UsageBook:
    book = UsageBook([Account("a", "/a", max_five_hour_percent=80), Account("b", "/b")])
    book.add(StatusSample(NOW, "/a", "%1", "s1", Window(a_percent, RESET), Window(5, None), cost, 10))
    book.add(StatusSample(NOW, "/a", "%2", "s2", Window(a_percent, RESET), Window(5, None), 0.1, 10))
    book.add(StatusSample(NOW, "/b", "%3", "s3", Window(b_percent, RESET), Window(5, None), 0.1, 10))
    return book


PANES = {"%1": "/a", "%2": "/a", "%3": "/b"}


def test_an_account_at_its_cap_holds_its_agents_only_and_says_so_once() -> None:
    governor = BudgetGovernor(stagger=30)
    book = book_with(85)
    first = governor.decide(NOW, book.all_accounts(NOW), PANES, Budget())
    assert set(first.held) == {"%1", "%2"} and "account a at its 5-hour cap: 85 % of 80 %" in first.held["%1"]
    assert [(n.pane_id, n.account) for n in first.notices] == [("%1", "a")]
    assert list(first.needs_you) == ["%1"]
    again = governor.decide(NOW + 1, book.all_accounts(NOW + 1), PANES, Budget())
    assert again.notices == () and set(again.held) == {"%1", "%2"}


def test_a_cap_reached_before_the_lease_is_held_is_said_once_the_holder_acts() -> None:
    governor = BudgetGovernor()
    book = book_with(85)
    quiet = governor.decide(NOW, book.all_accounts(NOW), PANES, Budget(), announce=False)
    assert quiet.notices == () and set(quiet.held) == {"%1", "%2"}  # held all the same
    told = governor.decide(NOW + 1, book.all_accounts(NOW + 1), PANES, Budget())
    assert [n.account for n in told.notices] == ["a"]


def test_after_the_reset_the_agents_are_released_one_at_a_time() -> None:
    governor = BudgetGovernor(stagger=30)
    book = book_with(85)
    governor.decide(NOW, book.all_accounts(NOW), PANES, Budget())
    after = RESET + 1  # the window reset: empty until Claude Code says otherwise
    released = governor.decide(after, book.all_accounts(after), PANES, Budget())
    assert set(released.held) == {"%2"} and "in turn" in released.held["%2"]
    assert governor.decide(after + 31, book.all_accounts(after + 31), PANES, Budget()).held == {}


def test_the_per_agent_cap_holds_that_agent_until_the_operator_lifts_it() -> None:
    governor = BudgetGovernor()
    book = book_with(10, cost=3.0)
    budget = Budget(agent_max_cost_usd_per_day=2.0)
    held = governor.decide(NOW, book.all_accounts(NOW), PANES, budget).held
    assert list(held) == ["%1"] and "daily cap: $3.00 of $2.00" in held["%1"]
    governor.lift("%1", "s1")
    assert governor.decide(NOW, book.all_accounts(NOW), PANES, budget).held == {}


def test_the_fleet_cap_holds_everyone() -> None:
    governor = BudgetGovernor()
    book = book_with(10, cost=3.0)
    held = governor.decide(NOW, book.all_accounts(NOW), PANES, Budget(fleet_max_cost_usd_per_day=3.0)).held
    assert set(held) == {"%1", "%2", "%3"} and "fleet at its daily cap" in held["%3"]


def test_an_agent_burning_far_faster_than_its_peers_gets_a_burn_alarm_once() -> None:
    book = UsageBook([Account("a", "/a"), Account("b", "/b")])
    for minutes in (9, 0):
        at = NOW - minutes * 60
        grown = 9 - minutes  # minutes since the first sample
        book.add(StatusSample(at, "/a", "%1", "s1", None, None, 1.0 + grown * 0.5, 100_000 + grown * 600_000))  # a loop: $3/h
        book.add(StatusSample(at, "/a", "%2", "s2", None, None, 1.0 + grown * 0.01, 1000))
        book.add(StatusSample(at, "/b", "%3", "s3", None, None, 1.0 + grown * 0.02, 1000))
    governor = BudgetGovernor()
    first = governor.decide(NOW, book.all_accounts(NOW), {"%1": "/a", "%2": "/a", "%3": "/b"}, Budget())
    assert [n.pane_id for n in first.alarms] == ["%1"] and first.held == {}
    line = first.needs_you["%1"]
    assert line.startswith("burn: $27.00/h, 33x its peers' median $0.81/h (5,400,000 tokens in 10 min; account a)"), line
    assert governor.decide(NOW, book.all_accounts(NOW), {}, Budget()).alarms == ()
