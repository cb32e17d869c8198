"""TARGET resolution of the fleet API (`nbs_tui.core.fleet_api.target`) and its agent rows."""

from __future__ import annotations

import pytest

from nbs_tui.core.fleet_api.agent_row import AgentRow, agents_table, row_from_json
from nbs_tui.core.fleet_api.exit_codes import ExitCode, FleetApiError
from nbs_tui.core.fleet_api.target import resolve_target


def row(pane: str, session: str, window: int, name: str, *, host: str = "local", worker: str = "") -> AgentRow:
    return AgentRow(host, "L-work", pane, session, window, 0, name, worker=worker, state="idle")


ROWS = (
    row("%1", "main", 0, "builder", worker="w-build"),
    row("%2", "main", 1, "tester"),
    row("%3", "side", 0, "tester"),
    row("%1", "box", 0, "remote-one", host="box"),
)


def fails(text: str, rows: tuple[AgentRow, ...] = ROWS) -> FleetApiError:
    with pytest.raises(FleetApiError) as raised:
        resolve_target(text, rows)
    return raised.value


def test_each_kind_of_target_names_its_agent() -> None:
    assert resolve_target("%2", ROWS) is ROWS[1]
    assert resolve_target("side:0.0", ROWS) is ROWS[2]
    assert resolve_target("builder", ROWS) is ROWS[0]
    assert resolve_target("w-build", ROWS) is ROWS[0]
    assert resolve_target("box/L-work/%1", ROWS) is ROWS[3]
    assert resolve_target(" local/L-work/%1 ", ROWS) is ROWS[0]


def test_an_ambiguous_target_is_bad_input_listing_every_candidate() -> None:
    error = fails("tester")
    assert error.code == ExitCode.BAD_INPUT == 4
    assert "local/L-work/%2" in error.message and "local/L-work/%3" in error.message
    error = fails("%1")  # the same pane id on two hosts
    assert error.code == ExitCode.BAD_INPUT
    assert "local/L-work/%1" in error.message and "box/L-work/%1" in error.message


def test_a_target_that_names_no_agent_is_no_such_agent() -> None:
    for text in ("%9", "main:5.0", "nobody", "local/default/%1", "elsewhere/L-work/%1"):
        error = fails(text)
        assert error.code == ExitCode.NO_SUCH_AGENT == 3, text
        assert text in error.message


def test_a_target_that_is_no_target_is_bad_input() -> None:
    assert fails("").code == ExitCode.BAD_INPUT
    error = fails("local/L-work/3")  # host/server/pane with no pane id
    assert error.code == ExitCode.BAD_INPUT and "not a tmux pane id" in error.message


def test_a_window_named_like_a_path_is_still_found_by_name() -> None:
    odd = (row("%7", "main", 2, "a/b/c"),)
    assert resolve_target("a/b/c", odd) is odd[0]


def test_the_codes_are_the_documented_numbers() -> None:
    assert [int(c) for c in ExitCode] == [0, 2, 3, 4, 124]


def test_a_row_survives_its_json_and_the_table_shows_each_agent() -> None:
    full = AgentRow(
        "local", "default", "%5", "my:sess", 3, 1, "win", worker="w", folder="/p", state="question", needs="question",
        since=1000, quiet_seconds=12, session_id="abc", model="claude-x", version="2.1", needs_line="Pick one?", task="7",
        task_state="running",
    )  # fmt: skip
    assert row_from_json(full.as_json()) == full
    assert full.as_json()["address"] == "my:sess:3.1" and full.as_json()["target"] == "local/default/%5"
    assert full.as_json()["task"] == {"id": "7", "state": "running"} and ROWS[1].as_json()["task"] is None
    table = agents_table([full, ROWS[1]], now=1090).splitlines()
    assert table[0].split()[:3] == ["TARGET", "ADDRESS", "WINDOW"]
    assert "1m" in table[1] and "12s" in table[1] and table[1].endswith("Pick one?")
    assert table[2].startswith("local/L-work/%2")
    assert agents_table([]) == "no agents"
