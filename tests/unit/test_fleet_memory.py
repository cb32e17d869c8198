"""The fleet memory's model (nbs_tui/core/fleet/fleet_memory.py): the current session id, what a new
server run keeps, what a restore brings back, the JSON form."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from nbs_tui.core.fleet.fleet_memory import (
    SCHEMA,
    FleetMemory,
    MemoryFormatError,
    NewerSchemaError,
    RememberedAgent,
    RememberedPane,
    RememberedWindow,
    ServerInstance,
    SessionSighting,
    SessionSource,
    current_session,
    fleet_to_restore,
    forget_restored,
    memory_from_json,
    memory_to_json,
    remember,
    store_key,
)
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.review.agent_base import AgentBase
from nbs_tui.runtime.service import server_key

HOOK, STATUS, TRANSCRIPT = SessionSource.HOOK, SessionSource.STATUS, SessionSource.TRANSCRIPT
OLD, NEW = "b7078004-e598-4a8a-9837-8091eecaea04", "59ced8f6-e666-4fb8-b9d9-c1e86c10dae9"

# -- the current session id: a /clear as 2.1.332 did it (times from one run, seconds) --------------

CLEAR = [
    SessionSighting(OLD, HOOK, 718.822),  # SessionStart startup
    SessionSighting(OLD, HOOK, 719.379),  # UserPromptSubmit
    SessionSighting(OLD, TRANSCRIPT, 718.900),  # its first record
    SessionSighting(OLD, STATUS, 719.646),
    SessionSighting(OLD, HOOK, 720.019),  # SessionEnd reason=clear
    SessionSighting(NEW, HOOK, 720.065),  # SessionStart source=clear
    SessionSighting(NEW, STATUS, 720.101),
    SessionSighting(NEW, TRANSCRIPT, 720.252),  # the new transcript's first record
]


def test_after_clear_the_new_session_is_current_from_every_source() -> None:
    for cut in range(6, len(CLEAR) + 1):
        found = current_session(CLEAR[:cut])
        assert found is not None and found.session_id == NEW


def test_before_the_new_session_shows_the_old_one_is_current() -> None:
    found = current_session(CLEAR[:5])
    assert found is not None and found.session_id == OLD


def test_each_source_alone_follows_the_clear() -> None:
    for source in (HOOK, STATUS, TRANSCRIPT):
        found = current_session(s for s in CLEAR if s.source is source)
        assert found is not None and found.session_id == NEW, source


def test_resume_back_to_an_older_conversation_wins_over_its_old_transcript() -> None:
    back = [*CLEAR, SessionSighting(OLD, HOOK, 730.0), SessionSighting(OLD, STATUS, 730.05)]
    found = current_session(back)
    assert found is not None and found.session_id == OLD


def test_a_tie_goes_to_the_hook_then_the_status_file() -> None:
    tie = [SessionSighting("t", TRANSCRIPT, 5.0), SessionSighting("s", STATUS, 5.0), SessionSighting("h", HOOK, 5.0)]
    assert current_session(tie) == tie[2]
    assert current_session(tie[:2]) == tie[1]
    assert current_session([]) is None
    assert current_session([SessionSighting("", HOOK, 9.0)]) is None


# -- remembering --------------------------------------------------------------------------------

SERVER = ServerAddress(socket_name="work")
RUN1, RUN2 = ServerInstance(100, 1_700_000_000), ServerInstance(200, 1_700_090_000)


def agent(name: str, session_id: str | None = "s-" + "1") -> RememberedAgent:
    return RememberedAgent(name, session_id, ("claude", "-n", name), config_dir="/home/me/.claude")


def window(session: str, index: int, name: str, *panes: RememberedPane) -> RememberedWindow:
    return RememberedWindow(session, index, name, "bb62,159x48,0,0,1", panes)


API = window("work", 1, "api", RememberedPane(0, "/src/api", "%1", agent("api", "s-api")))
WEB = window(
    "work", 2, "web", RememberedPane(1, "/src/web", "%3"), RememberedPane(0, "/src/web", "%2", agent("web", "s-web"))
)
SHELLS = window("misc", 0, "bash", RememberedPane(0, "/tmp", "%4"))


def test_the_first_memory_keeps_agent_windows_in_order_with_their_panes_in_order() -> None:
    memory = remember(None, "local", SERVER, RUN1, [WEB, SHELLS, API])
    assert [w.name for w in memory.windows] == ["api", "web"]
    assert [p.index for p in memory.windows[1].panes] == [0, 1]
    assert memory.agent_names() == ["api", "web"]


def test_nothing_new_is_the_same_memory_so_nothing_is_written() -> None:
    memory = remember(None, "local", SERVER, RUN1, [API, WEB])
    assert remember(memory, "local", SERVER, RUN1, [WEB, API]) is memory


def test_a_new_session_id_or_a_closed_pane_changes_the_memory() -> None:
    memory = remember(None, "local", SERVER, RUN1, [API, WEB])
    cleared = replace(API, panes=(replace(API.panes[0], agent=agent("api", "s-api-2")),))
    after = remember(memory, "local", SERVER, RUN1, [cleared, WEB])
    assert after != memory and after.windows[0].panes[0].agent is not None
    assert after.windows[0].panes[0].agent.session_id == "s-api-2"
    closed = remember(after, "local", SERVER, RUN1, [cleared])
    assert closed.agent_names() == ["api"] and closed.previous == ()


def test_no_server_forgets_nothing() -> None:
    memory = remember(None, "local", SERVER, RUN1, [API, WEB])
    assert remember(memory, "local", SERVER, None, []) is memory
    assert remember(None, "local", SERVER, None, [API]).windows == ()


def test_a_new_server_run_keeps_the_lost_fleet_to_restore() -> None:
    memory = remember(None, "local", SERVER, RUN1, [API, WEB])
    after_reboot = remember(memory, "local", SERVER, RUN2, [])
    assert after_reboot.instance == RUN2 and after_reboot.windows == ()
    assert after_reboot.previous == memory.windows and after_reboot.previous_instance == RUN1
    # agents started by hand in the new run do not push the lost fleet out
    with_new = remember(after_reboot, "local", SERVER, RUN2, [SHELLS, window("w", 0, "x", RememberedPane(0, "/x", "%0", agent("x")))])
    assert with_new.previous == memory.windows
    # nor does a third run without agents
    third = remember(after_reboot, "local", SERVER, ServerInstance(300, 3), [])
    assert third.previous == memory.windows


def test_what_a_restore_brings_back() -> None:
    memory = remember(None, "local", SERVER, RUN1, [API, WEB])
    assert fleet_to_restore(memory, None) == memory.windows  # the server is gone
    assert fleet_to_restore(memory, RUN2) == memory.windows  # a new run the service has not seen
    assert fleet_to_restore(memory, RUN1) == ()  # its own run is live
    seen = remember(memory, "local", SERVER, RUN2, [])
    assert fleet_to_restore(seen, RUN2) == memory.windows
    assert fleet_to_restore(forget_restored(seen), RUN2) == ()


def test_store_key_is_the_services_key_on_this_machine() -> None:
    for server in (ServerAddress(), ServerAddress("work"), ServerAddress(None, "/tmp/tmux-0/my sock"), ServerAddress("a/b")):
        assert store_key("local", server) == server_key(server)
        assert store_key("", server) == server_key(server)
    assert store_key("box:22", ServerAddress("work")) == "H-box_22-L-work"


# -- the JSON form --------------------------------------------------------------------------------


def test_the_json_form_round_trips() -> None:
    memory = remember(remember(None, "box", SERVER, RUN1, [API, WEB]), "box", SERVER, RUN2, [API])
    data = json.loads(json.dumps(memory_to_json(memory)))
    assert data["schema"] == SCHEMA
    assert memory_from_json(data) == memory


def test_an_agents_base_round_trips_and_an_older_file_has_none() -> None:
    """Issue 38: the commit and branch an agent's changes are counted from."""
    base = AgentBase("0123456789abcdef0123456789abcdef01234567", None)
    agent = RememberedAgent("feat", "s-1", base=base)
    window = RememberedWindow("work", 1, "feat", "", (RememberedPane(0, "/src", "%1", agent),))
    data = json.loads(json.dumps(memory_to_json(remember(None, "local", SERVER, RUN1, [window]))))
    assert data["windows"][0]["panes"][0]["agent"]["base"] == {"commit": base.commit, "branch": None}
    assert memory_from_json(data).windows[0].panes[0].agent == agent
    del data["windows"][0]["panes"][0]["agent"]["base"]  # written before bases were kept
    older = memory_from_json(data).windows[0].panes[0].agent
    assert older is not None and older.base is None


def test_unknown_keys_are_passed_over() -> None:
    data = memory_to_json(remember(None, "local", SERVER, RUN1, [API]))
    data["later"] = {"x": 1}
    data["windows"][0]["panes"][0]["agent"]["colour"] = "blue"
    assert memory_from_json(data).agent_names() == ["api"]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d.update(schema=None), "schema is missing"),
        (lambda d: d.update(schema=0), "schema 0 is not one this nbs-tui reads"),
        (lambda d: d.update(windows={}), "windows: expected a list"),
        (lambda d: d["windows"][0].update(index="1"), "windows[0].index: expected an integer, found str"),
        (lambda d: d["windows"][0].update(index=True), "windows[0].index: expected an integer, found bool"),
        (lambda d: d["windows"][0]["panes"][0].pop("folder"), "windows[0].panes[0].folder is missing"),
        (lambda d: d["windows"][0]["panes"][0]["agent"].update(command="claude"), "agent.command: expected a list of strings"),
        (lambda d: d["windows"][0]["panes"].append(3), "windows[0].panes[1]: expected an object"),
        (lambda d: d.update(instance={"pid": 1}), "instance.started is missing"),
    ],
)
def test_a_bad_file_says_where(change: object, words: str) -> None:
    data = memory_to_json(remember(None, "local", SERVER, RUN1, [API]))
    change(data)  # type: ignore[operator]
    with pytest.raises(MemoryFormatError) as raised:
        memory_from_json(data)
    assert words in str(raised.value)
    assert not isinstance(raised.value, NewerSchemaError)


def test_a_newer_schema_is_its_own_error() -> None:
    data = memory_to_json(FleetMemory("local", SERVER, RUN1))
    data["schema"] = SCHEMA + 1
    with pytest.raises(NewerSchemaError, match="newer than this nbs-tui's"):
        memory_from_json(data)
    with pytest.raises(MemoryFormatError, match="not a JSON object"):
        memory_from_json([1, 2])
