"""The fleet filter's query language."""

from __future__ import annotations

from nbs_tui.core.fleet.fleet_filter import FleetFilter
from nbs_tui.core.fleet.model import AgentState, PaneInfo


def pane(session: str, window: int, title: str, path: str, pane_id: str = "%1") -> PaneInfo:
    return PaneInfo(pane_id, session, window, "win", 0, title, "claude", path, 1, 80, 24, is_agent=True)


API = pane("work", 1, "✳ Fix the API", "/src/api-server", "%3")
WEB = pane("play", 2, "✳ Style the page", "/src/web-ui", "%4")


def test_empty_query_matches_everything() -> None:
    query = FleetFilter.parse("   ")
    assert not query and query.matches(API) and query.matches(WEB, AgentState.IDLE)


def test_fields_and_bare_words() -> None:
    assert FleetFilter.parse("session:work").matches(API)
    assert not FleetFilter.parse("s:work").matches(WEB)
    assert FleetFilter.parse("project:web").matches(WEB)
    assert FleetFilter.parse("name:api").matches(API)
    assert FleetFilter.parse("API").matches(API)  # any field, any case
    assert FleetFilter.parse("%4").matches(WEB)
    assert FleetFilter.parse("play:2.0").matches(WEB)  # a target is a bare word, not a key
    assert not FleetFilter.parse("api web").matches(API)  # every word must match


def test_state_words() -> None:
    assert FleetFilter.parse("state:idle").matches(API, AgentState.IDLE)
    assert not FleetFilter.parse("state:idle").matches(API, AgentState.WORKING)
    assert not FleetFilter.parse("state:idle").matches(API, None)
    assert FleetFilter.parse("st:perm").matches(API, AgentState.PERMISSION)
    needs = FleetFilter.parse("state:needs")
    assert needs.matches(API, AgentState.QUESTION) and not needs.matches(API, AgentState.PLAN)
    assert needs.describe() == "state:needs"


def test_host_filter_matches_the_panes_host_only() -> None:
    from dataclasses import replace

    a = replace(pane("api", 0, "t", "/w/api", "hosta:%1"), host="hosta")
    b = replace(pane("api", 0, "t", "/w/api", "hostb:%1"), host="hostb")
    one = pane("api", 0, "t", "/w/api")  # one host watched: no host to match
    assert [p.pane_id for p in (a, b, one) if FleetFilter.parse("host:hostb").matches(p)] == ["hostb:%1"]
    assert [p.pane_id for p in (a, b, one) if FleetFilter.parse("h:HOSTA").matches(p)] == ["hosta:%1"]
    assert FleetFilter.parse("host:hosta").describe() == "host:hosta"
    assert a.target == "hosta:api:0.0" and one.target == "api:0.0"
