"""Settings layering: defaults < config file < NBS_* environment < flags, with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbs_tui.config import ConfigError, Settings, load_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_when_nothing_is_set(tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "missing.toml", environ={})
    assert settings == Settings()
    assert settings.poll_interval == 30.0
    assert settings.plan_policy == "no-prompts"


def test_file_then_environment_then_flags(tmp_path: Path) -> None:
    config = write(tmp_path, 'poll_interval = 12\nplan-policy = "off"\nstuck_max_nudges = 3\n')
    from_file = load_settings(config, environ={})
    assert (from_file.poll_interval, from_file.plan_policy, from_file.stuck_max_nudges) == (12.0, "off", 3)

    from_env = load_settings(config, environ={"NBS_POLL_INTERVAL": "7", "NBS_POLL_DISABLE": "1"})
    assert from_env.poll_interval == 7.0
    assert from_env.poll_disabled is True

    from_flags = load_settings(config, environ={"NBS_POLL_INTERVAL": "7"}, poll_interval=3, plan_policy=None)
    assert from_flags.poll_interval == 3.0
    assert from_flags.plan_policy == "off", "a flag left unset (None) must not override the file"


def test_keys_table_rebinds_by_id(tmp_path: Path) -> None:
    config = write(tmp_path, '[keymap]\n"pane.jump" = "g,enter"\n')
    assert load_settings(config, environ={}).keymap == {"pane.jump": "g,enter"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("poll_interval = -1\n", "positive"),
        ('poll_interval = "soon"\n', "poll_interval"),
        ("no_such_thing = 1\n", "unknown setting"),
        ('plan_policy = "always"\n', "plan policy"),
        ("[keymap]\n\"pane.jump\" = 3\n", "binding id"),
        ("poll_interval = \n", "config file"),
    ],
)
def test_bad_values_are_reported_with_the_setting(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(write(tmp_path, text), environ={})


def test_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="NBS_POLL_INTERVAL"):
        load_settings(tmp_path / "missing.toml", environ={"NBS_POLL_INTERVAL": "0"})
