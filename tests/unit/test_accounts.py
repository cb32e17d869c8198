"""Accounts and budgets in the config file (issue 37 item 1): named, found, and bad entries named."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbs_tui.config import ConfigError, load_settings
from nbs_tui.core.fleet.accounts import Account, Budget, account_for, found_name, kind_of


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_accounts_and_budget_are_read_in_order_with_home_expanded(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        '[accounts.work]\nconfig_dir = "~/.claude-work"\nmax_five_hour_percent = 80\n'
        '[accounts.home]\nconfig_dir = "/srv/claude-home/"\nkind = "api-key"\n'
        "[budget]\nmax_five_hour_percent = 90\nmax_seven_day_percent = 70\nagent_max_cost_usd_per_day = 5\n",
    )
    settings = load_settings(config, environ={})
    work, home = settings.accounts
    assert work == Account("work", str(Path("~/.claude-work").expanduser()), "auto", 80.0, None)
    assert home == Account("home", "/srv/claude-home", "api-key")
    assert settings.budget == Budget(90.0, 70.0, 5.0, None)
    assert settings.budget.caps_of(work) == (80.0, 70.0)
    assert settings.budget.caps_of(home) == (90.0, 70.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[accounts.work]\nkind = "subscription"\n', "[accounts.work]: config_dir is missing"),
        ('[accounts.work]\nconfig_dir = "relative/dir"\n', "[accounts.work]: config_dir 'relative/dir' is not an absolute path"),
        ('[accounts.work]\nconfig_dir = "/a"\nkind = "oauth"\n', "[accounts.work]: kind must be one of"),
        ('[accounts.work]\nconfig_dir = "/a"\nmax_five_hour_percent = 120\n', "[accounts.work]: max_five_hour_percent must be between 0 and 100"),
        ('[accounts.work]\nconfig_dir = "/a"\nmax_5h = 10\n', "[accounts.work]: unknown key 'max_5h'"),
        ('[accounts.work]\nconfig_dir = "/a"\n[accounts.play]\nconfig_dir = "/a/"\n', "[accounts.play]: config_dir '/a/' is already account 'work'"),
        ('[accounts.auto]\nconfig_dir = "/a"\n', "[accounts.auto]: the name"),
        ('accounts = 3\n', "[accounts] must be a table"),
        ("[budget]\nfleet_max_cost_usd_per_day = \"lots\"\n", "[budget]: fleet_max_cost_usd_per_day must be a number"),
        ("[budget]\nmax_weekly = 3\n", "[budget]: unknown key 'max_weekly'"),
    ],
)
def test_a_bad_entry_is_a_config_error_naming_it(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        load_settings(write(tmp_path, text), environ={})
    assert message in str(caught.value)
    assert str(tmp_path / "config.toml") in str(caught.value)


def test_an_agent_s_account_is_the_named_one_else_found_from_its_folder() -> None:
    named = (Account("work", "/home/u/.claude-work"),)
    assert account_for("/home/u/.claude-work/", named) is named[0]
    found = account_for("/home/u/.claude", named, home="/home/u")
    assert (found.name, found.named, found.config_dir) == ("default", False, "/home/u/.claude")
    assert found_name("/srv/.claude-ci") == "claude-ci"


def test_kind_auto_follows_the_oauth_login() -> None:
    account = Account("a", "/a")
    assert kind_of(account, has_oauth_login=True) == "subscription"
    assert kind_of(account, has_oauth_login=False) == "api-key"
    assert kind_of(Account("b", "/b", kind="api-key"), has_oauth_login=True) == "api-key"
