"""Every start is held to the accounts' caps (issue 37, item 4: "no new start"), through the one
place a start is prepared (`nbs_tui.lifecycle.operations.Lifecycle.prepare` calls
`resolve_account`): a named account, ``auto``, and the default account when none is asked for,
read from a real usage spool as the status-line recorder writes it."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from nbs_tui.claude.status_recorder import usage_spool_for
from nbs_tui.claude.usage_spool import append_line, resolve_account
from nbs_tui.config import Settings, load_settings
from nbs_tui.core.fleet.agent_spec import NewAgent, SpecError

NOW = time.time()


def settings_with(tmp_path: Path, budget: str = "") -> Settings:
    """Accounts a and b, a capped at 80 % of its 5-hour window, and ~/.claude as the default."""
    config = tmp_path / "config.toml"
    config.write_text(
        f'[accounts.a]\nconfig_dir = "{tmp_path / "a"}"\nmax_five_hour_percent = 80\n'
        f'[accounts.b]\nconfig_dir = "{tmp_path / "b"}"\n' + budget,
        encoding="utf-8",
    )
    loaded = load_settings(config, environ={})
    return replace(loaded, hook_spool=tmp_path / "state" / "hooks.jsonl", claude_home=tmp_path / "home" / ".claude")


def report(settings: Settings, config_dir: Path, five_hour: float) -> None:
    """One status-line document for the account, as the recorder appends it after a turn."""
    spool = usage_spool_for(settings.hook_spool)
    spool.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "session_id": "s1", "cost": {"total_cost_usd": 0.5},
        "rate_limits": {
            "five_hour": {"used_percentage": five_hour, "resets_at": NOW + 3600},
            "seven_day": {"used_percentage": 10, "resets_at": NOW + 86400},
        },
    }  # fmt: skip
    line = {"nbs_pane": "%1", "nbs_time": NOW - 5, "nbs_config_dir": str(config_dir), "payload": payload}
    append_line(spool, (json.dumps(line) + "\n").encode())


def agent(**fields: str) -> NewAgent:
    return NewAgent(directory="/srv/work", **fields)  # type: ignore[arg-type]


def test_a_named_account_at_its_cap_is_refused_and_auto_goes_where_there_is_headroom(tmp_path: Path) -> None:
    settings = settings_with(tmp_path)
    report(settings, tmp_path / "a", 85)
    report(settings, tmp_path / "b", 30)
    with pytest.raises(SpecError) as refused:
        resolve_account(agent(account="a"), settings, now=NOW)
    assert refused.value.problems == (
        "--account a: account a at its 5-hour cap: 85 % of 80 %, resets in 1h00m; start under another account or --account auto",
    )
    assert resolve_account(agent(account="auto"), settings, now=NOW).config_dir == str(tmp_path / "b")
    assert resolve_account(agent(account="b"), settings, now=NOW).config_dir == str(tmp_path / "b")


def test_no_account_asked_the_default_account_at_a_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    settings = settings_with(tmp_path, "[budget]\nmax_five_hour_percent = 90\n")  # the default for accounts not named
    default = settings.claude_home
    report(settings, default, 50)
    assert resolve_account(agent(), settings, now=NOW) == agent()  # under its cap: started as it is
    report(settings, default, 95)
    with pytest.raises(SpecError) as refused:
        resolve_account(agent(), settings, now=NOW)
    (problem,) = refused.value.problems
    assert problem == (
        f"account claude at its 5-hour cap: 95 % of 90 %, resets in 1h00m "  # a found account: named from its folder
        f"(the default account, {default}): start under another with --account NAME or auto"
    )
    # $CLAUDE_CONFIG_DIR names the default account instead: b, under no cap
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "b"))
    assert resolve_account(agent(), settings, now=NOW) == agent()


def test_another_hosts_start_takes_no_account_of_this_machine_and_a_resolved_one_is_kept(tmp_path: Path) -> None:
    settings = settings_with(tmp_path)
    report(settings, tmp_path / "a", 99)
    with pytest.raises(SpecError, match="--account works on this machine's accounts: start on hosta without it"):
        resolve_account(agent(account="b", host="hosta"), settings, now=NOW)
    there = agent(host="hosta")
    assert resolve_account(there, settings, now=NOW) is there  # its caps are judged there
    assert resolve_account(agent(), settings, here=False, now=NOW) == agent()
    resolved = agent(account="a", config_dir=str(tmp_path / "a"))
    assert resolve_account(resolved, settings, now=NOW) is resolved  # resolved once, not again
