"""The restore plan (nbs_tui/core/fleet/restore.py): what comes back, where, how, and why not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbs_tui.core.fleet.agent_spec import ClaudeFlags, SpecError
from nbs_tui.core.fleet.fleet_memory import RememberedAgent, RememberedPane, RememberedWindow
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.fleet.restore import (
    HostChecks,
    LiveServer,
    LiveWindow,
    plan_as_json,
    plan_lines,
    plan_restore,
    sessions_in_agents_json,
)
from nbs_tui.core.review.agent_base import AgentBase

LAYOUT = "5aed,159x48,0,0{79x48,0,0,1,79x48,80,0,2}"
NO_SERVER = LiveServer(running=False)
ALL_WELL = HostChecks()


def agent_pane(index: int, name: str, session_id: str | None, folder: str = "", **extra: object) -> RememberedPane:
    agent = RememberedAgent(name, session_id, ("claude", "-n", name), config_dir="/home/me/.claude", **extra)  # type: ignore[arg-type]
    return RememberedPane(index, folder or f"/src/{name}", f"%{index}", agent)


API = RememberedWindow("work", 1, "api", LAYOUT, (agent_pane(0, "api", "s-api", model="opus"), RememberedPane(1, "/src/api", "%9")))
WEB = RememberedWindow("work", 2, "web", "", (agent_pane(0, "web", "s-web", permission_mode="plan"),))
DOCS = RememberedWindow("docs", 0, "docs", "", (agent_pane(0, "docs", "s-docs", folder="/src/repo/.claude/worktrees/feat", worktree=True, worktree_name="feat"),))
FLEET = (API, WEB, DOCS)


def test_after_a_reboot_everything_comes_back_staggered_in_order() -> None:
    plan = plan_restore(FLEET, NO_SERVER, {}, ALL_WELL, server=ServerAddress("work"), stagger=3.0)
    assert plan.start_server and plan.create_sessions == ("work", "docs")
    assert [(w.session, w.index, w.name) for w in plan.windows] == [("work", 1, "api"), ("work", 2, "web"), ("docs", 0, "docs")]
    assert [(p.agent, p.start_after) for p in plan.agents] == [("api", 0.0), ("web", 3.0), ("docs", 6.0)]
    api, shell = plan.windows[0].panes
    assert api.argv == ("claude", "--resume", "s-api", "-n", "api", "--model", "opus") and api.folder == "/src/api"
    assert shell.argv is None and shell.folder == "/src/api" and shell.start_after == 0.0
    assert plan.windows[0].layout == LAYOUT
    assert plan.windows[1].panes[0].argv == ("claude", "--resume", "s-web", "-n", "web", "--permission-mode", "plan")
    docs = plan.windows[2].panes[0]
    assert docs.folder == "/src/repo/.claude/worktrees/feat" and "-w" not in (docs.argv or ())
    assert plan.not_restored == ()


def test_a_running_server_gets_only_what_is_missing() -> None:
    live = LiveServer(True, (LiveWindow("work", 1, "shell"), LiveWindow("work", 2, "web")))
    plan = plan_restore(FLEET, live, {"s-web": "pane %4 (work:2.0)"}, ALL_WELL)
    assert not plan.start_server and plan.create_sessions == ("docs",)
    assert [w.name for w in plan.windows] == ["api", "docs"]
    assert plan.windows[0].index is None and "work:1 is taken" in plan.windows[0].note
    assert [(n.name, n.reason) for n in plan.not_restored] == [
        ("web", "its conversation s-web is live already (pane %4 (work:2.0))")
    ]


def test_an_open_window_of_the_same_name_is_left_alone() -> None:
    plan = plan_restore([WEB], LiveServer(True, (LiveWindow("work", 5, "web"),)), {}, ALL_WELL)
    assert plan.windows == ()
    assert plan.not_restored[0].reason == "a window work:web is open already: restore leaves it alone"
    assert plan_lines(plan)[1] == "  nothing to start"


@pytest.mark.parametrize(
    ("checks", "live", "reason"),
    [
        (HostChecks(up=False, why_down="ssh: connect to host box port 22: Connection refused"), {}, "its host is down (ssh: connect to host box port 22: Connection refused)"),
        (HostChecks(folders={"/src/web": False}), {}, "its folder /src/web is gone"),
        (HostChecks(conversations={"s-web": False}), {}, "its conversation s-web is gone (no transcript in /home/me/.claude)"),
        (ALL_WELL, {"s-web": "background session 'web' (claude agents)"}, "its conversation s-web is live already (background session 'web' (claude agents))"),
    ],
)
def test_each_reason_an_agent_stays_away(checks: HostChecks, live: dict[str, str], reason: str) -> None:
    plan = plan_restore([WEB], NO_SERVER, live, checks)
    assert [(n.name, n.where, n.reason) for n in plan.not_restored] == [("web", "work:2.0", reason)]
    assert plan.windows == () and not plan.start_server


def test_an_agent_never_seen_with_a_session_id_cannot_come_back() -> None:
    window = RememberedWindow("work", 3, "new", "", (agent_pane(0, "new", None),))
    plan = plan_restore([window], NO_SERVER, {}, ALL_WELL)
    assert "conversation id was never seen" in plan.not_restored[0].reason


def test_one_conversation_remembered_twice_comes_back_once() -> None:
    copy = RememberedWindow("work", 7, "api-copy", "", (agent_pane(0, "api2", "s-api"),))
    plan = plan_restore([API, copy], NO_SERVER, {}, ALL_WELL)
    assert [p.agent for p in plan.agents] == ["api"]
    assert plan.not_restored[0].reason == "its conversation s-api comes back in work:1.0 already"


def test_a_window_missing_a_pane_gets_no_layout_and_unchecked_folders_do_not_stop() -> None:
    two = RememberedWindow("work", 1, "pair", LAYOUT, (agent_pane(0, "a", "s-a"), agent_pane(1, "b", "s-b")))
    plan = plan_restore([two], NO_SERVER, {}, HostChecks(folders={"/src/b": False}))
    (window,) = plan.windows
    assert window.layout is None and window.note == "layout not applied: 1 of its 2 panes not restored"
    assert [p.agent for p in window.panes] == ["a"]


def test_a_shell_pane_whose_folder_is_gone_starts_in_the_default_folder() -> None:
    plan = plan_restore([API], NO_SERVER, {}, HostChecks(folders={"/src/api": True}))
    assert plan.windows[0].panes[1].folder == "/src/api"
    shell_gone = RememberedWindow("work", 1, "api", LAYOUT, (API.panes[0], RememberedPane(1, "/gone", "%9")))
    plan = plan_restore([shell_gone], NO_SERVER, {}, HostChecks(folders={"/gone": False}))
    assert plan.windows[0].panes[1].folder == "" and plan.windows[0].layout == LAYOUT


def test_names_pick_agents_or_windows_and_an_unknown_name_is_an_error() -> None:
    assert [p.agent for p in plan_restore(FLEET, NO_SERVER, {}, ALL_WELL, names=["web", "docs"]).agents] == ["web", "docs"]
    assert [p.agent for p in plan_restore(FLEET, NO_SERVER, {}, ALL_WELL, names=["work:api"]).agents] == ["api"]
    with pytest.raises(SpecError) as raised:
        plan_restore(FLEET, NO_SERVER, {}, ALL_WELL, names=["web", "nope", "zzz"])
    assert raised.value.problems == (
        "no remembered agent or window named 'nope' (remembered agents: api, docs, web)",
        "no remembered agent or window named 'zzz' (remembered agents: api, docs, web)",
    )


def test_a_version_that_cannot_resume_is_a_reason() -> None:
    plan = plan_restore([WEB], NO_SERVER, {}, ALL_WELL, flags=ClaudeFlags(version="2.0.1", resume=False))
    assert plan.not_restored[0].reason == "Claude Code 2.0.1 has no --resume: it cannot bring a conversation back"


def test_the_dry_run_text() -> None:
    plan = plan_restore(
        FLEET, LiveServer(True, (LiveWindow("work", 2, "other"),)), {}, HostChecks(folders={"/src/web": False}),
        server=ServerAddress("work"), claude_command="claude --verbose",
    )  # fmt: skip
    assert plan_lines(plan) == [
        "restore 2 agents to tmux server -L work; 1 not restored:",
        "  create session docs",
        "  window work:1 'api'",
        "    pane 0: in /src/api, after 0 s: claude --verbose --resume s-api -n api --model opus",
        "    pane 1: a shell in /src/api",
        f"    layout {LAYOUT}",
        "  window docs:0 'docs'",
        "    pane 0: in /src/repo/.claude/worktrees/feat, after 2 s: claude --verbose --resume s-docs -n docs",
        "  not restored: web (work:2.0): its folder /src/web is gone",
    ]


def test_the_json_form_has_everything_the_text_has() -> None:
    plan = plan_restore(FLEET, NO_SERVER, {}, HostChecks(conversations={"s-docs": False}), host="box")
    data = json.loads(json.dumps(plan_as_json(plan)))
    assert data["host"] == "box" and data["start_server"] is True
    assert [w["name"] for w in data["windows"]] == ["api", "web"]
    assert data["windows"][0]["panes"][0]["argv"][:3] == ["claude", "--resume", "s-api"]
    assert data["not_restored"] == [
        {"name": "docs", "where": "docs:0.0", "reason": "its conversation s-docs is gone (no transcript in /home/me/.claude)"}
    ]
    assert plan_lines(plan)[0] == "restore 2 agents to the default tmux server on box; 1 not restored:"


@pytest.mark.parametrize("version", ["2.1.197", "2.1.332"])
def test_live_sessions_from_claude_agents_json(version: str) -> None:
    text = (Path(__file__).resolve().parents[1] / "corpus" / "claude" / version / "agents-json.txt").read_text()
    text = text.split("\n", 1)[1]
    session_id = json.loads(text)[0]["sessionId"]
    found = sessions_in_agents_json(text, host="box")
    assert list(found) == [session_id]
    assert found[session_id].startswith("interactive Claude Code session 'myname' pid ") and found[session_id].endswith(" on box")
    plan = plan_restore([RememberedWindow("w", 0, "x", "", (agent_pane(0, "x", session_id),))], NO_SERVER, found, ALL_WELL)
    assert "is live already (interactive Claude Code session 'myname'" in plan.not_restored[0].reason


def test_agents_json_that_is_not_a_list_of_sessions_gives_nothing() -> None:
    for text in ("", "error: unknown command 'agents'", "{}", '[{"pid": 3}]', "[1]"):
        assert sessions_in_agents_json(text) == {}


def test_a_restored_agent_keeps_the_base_its_changes_are_counted_from() -> None:
    base = AgentBase("c0ffee" * 6 + "beef", "feature")
    window = RememberedWindow("work", 3, "feat", "", (agent_pane(0, "feat", "s-feat", base=base),))
    plan = plan_restore((window,), NO_SERVER, {}, ALL_WELL)
    assert plan.windows[0].panes[0].base == base
    assert plan_restore((API,), NO_SERVER, {}, ALL_WELL).windows[0].panes[0].base is None
