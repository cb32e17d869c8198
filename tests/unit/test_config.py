"""Settings layering: defaults < config file < NBS_* environment < flags, with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbs_tui.config import ConfigError, Settings, load_settings
from nbs_tui.files.config_edit import save_setting


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_when_nothing_is_set(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, ""), environ={})
    assert settings == Settings(config_file=tmp_path / "config.toml")
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
        ('claude_command = ""\n', "claude_command is empty"),
        ("claude_command = \"claude 'x\"\n", "claude_command .* cannot be split"),
        ("restore_stagger = 0\n", "restore_stagger must be a positive number"),
    ],
)
def test_bad_values_are_reported_with_the_setting(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(write(tmp_path, text), environ={})


def test_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="NBS_POLL_INTERVAL"):
        load_settings(write(tmp_path, ""), environ={"NBS_POLL_INTERVAL": "0"})


def test_a_named_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.toml does not exist"):
        load_settings(tmp_path / "missing.toml", environ={})
    with pytest.raises(ConfigError, match="is a directory"):
        load_settings(tmp_path, environ={})


def test_theme_is_a_setting_and_the_file_is_remembered(tmp_path: Path) -> None:
    config = write(tmp_path, 'theme = "nord"\n')
    settings = load_settings(config, environ={})
    assert settings.theme == "nord"
    assert settings.config_file == config
    assert Settings().theme == "textual-dark"
    with pytest.raises(ConfigError, match="unknown setting 'config_file'"):
        load_settings(write(tmp_path, 'config_file = "/x"\n'), environ={})


USER_FILE = """\
# my nbs-tui settings
poll_interval = 12   # seconds, keep short
plan-policy = "off"

# keys I changed
[keymap]
"pane.jump" = "g,enter"
"""


def test_save_setting_adds_a_key_before_the_first_table_and_keeps_the_rest(tmp_path: Path) -> None:
    config = write(tmp_path, USER_FILE)
    save_setting(config, "theme", "nord")
    assert config.read_text(encoding="utf-8") == USER_FILE.replace(
        '"off"\n', '"off"\ntheme = "nord"\n'
    )
    settings = load_settings(config, environ={})
    assert (settings.theme, settings.poll_interval, settings.keymap) == ("nord", 12.0, {"pane.jump": "g,enter"})


def test_save_setting_replaces_only_the_value_and_keeps_its_comment(tmp_path: Path) -> None:
    original = USER_FILE.replace("[keymap]", 'theme = "a#b"  # picked in the palette\n[keymap]')
    config = write(tmp_path, original)
    save_setting(config, "theme", "gruvbox")
    assert config.read_text(encoding="utf-8") == original.replace('"a#b"', '"gruvbox"')
    save_setting(config, "plan_policy", "no-prompts")  # the file's dashed spelling is kept
    assert 'plan-policy = "no-prompts"\n' in config.read_text(encoding="utf-8")
    assert "plan_policy" not in config.read_text(encoding="utf-8")


def test_save_setting_replaces_a_value_over_several_lines(tmp_path: Path) -> None:
    config = write(tmp_path, 'theme = """\nnord\n"""\nbell = false\r\n')
    save_setting(config, "theme", "dracula")
    assert config.read_bytes() == b'theme = "dracula"\nbell = false\r\n'


def test_save_setting_is_not_fooled_by_a_multi_line_string(tmp_path: Path) -> None:
    text = 'stuck_nudge = """\ntheme = "inside"\n[not a table]\n"""\n\n[keymap]\n'
    config = write(tmp_path, text)
    save_setting(config, "theme", "nord")
    assert config.read_text(encoding="utf-8") == text.replace('"""\n\n', '"""\ntheme = "nord"\n\n')
    assert load_settings(config, environ={}).stuck_nudge == 'theme = "inside"\n[not a table]\n'


def test_save_setting_creates_the_file_and_escapes(tmp_path: Path) -> None:
    config = tmp_path / "new" / "config.toml"
    save_setting(config, "stuck_nudge", 'say "go"\\\tnow')
    assert config.read_text(encoding="utf-8") == 'stuck_nudge = "say \\"go\\"\\\\\\u0009now"\n'
    assert load_settings(config, environ={}).stuck_nudge == 'say "go"\\\tnow'
    save_setting(config, "bell", False)
    save_setting(config, "stuck_max_nudges", 3)
    settings = load_settings(config, environ={})
    assert (settings.bell, settings.stuck_max_nudges) == (False, 3)


def test_save_setting_appends_after_a_last_line_without_newline(tmp_path: Path) -> None:
    config = write(tmp_path, "# only a comment")
    save_setting(config, "theme", "nord")
    assert config.read_text(encoding="utf-8") == '# only a comment\ntheme = "nord"\n'


def test_save_setting_writes_through_a_symlink_and_keeps_the_mode(tmp_path: Path) -> None:
    real = write(tmp_path, "bell = true\n")
    real.chmod(0o600)
    link = tmp_path / "link.toml"
    link.symlink_to(real)
    save_setting(link, "theme", "nord")
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8") == 'bell = true\ntheme = "nord"\n'
    assert real.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml", "link.toml"]


def test_save_setting_refuses_a_broken_file_and_leaves_it_alone(tmp_path: Path) -> None:
    broken = "theme = \n# half-typed\n"
    config = write(tmp_path, broken)
    with pytest.raises(ConfigError, match="not changing it"):
        save_setting(config, "theme", "nord")
    assert config.read_text(encoding="utf-8") == broken
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]  # no temporary file left behind


def test_prices_table_adds_and_replaces_models_over_the_defaults(tmp_path: Path) -> None:
    from nbs_tui.core.sidecar.meters import DEFAULT_PRICES

    config = write(tmp_path, '[prices."claude-opus-5-5"]\ninput = 1\noutput = 2\n\n[prices.my-proxy-model]\ninput = 0.5\noutput = 1.5\ncontext = 32000\n')
    prices = load_settings(config, environ={}).prices
    assert prices["claude-opus-5-5"].input == 1 and prices["claude-opus-5-5"].cache_read == pytest.approx(0.1)
    assert prices["my-proxy-model"].context == 32000
    assert prices["claude-haiku-4-5"] == DEFAULT_PRICES["claude-haiku-4-5"]
    with pytest.raises(ConfigError, match=r"prices\.m: input and output are required"):
        load_settings(write(tmp_path, "[prices.m]\ninput = 1\n"), environ={})


def test_state_files_follow_xdg_state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The action log and the hook spool sit next to the log file, in nbs-tui's XDG state folder."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    settings = load_settings(write(tmp_path, ""), environ={})
    assert settings.action_log == tmp_path / "state" / "nbs-tui" / "actions.log"
    assert settings.hook_spool == tmp_path / "state" / "nbs-tui" / "hooks.jsonl"
    monkeypatch.delenv("XDG_STATE_HOME")
    settings = load_settings(write(tmp_path, ""), environ={})
    assert settings.action_log == tmp_path / "home" / ".local" / "state" / "nbs-tui" / "actions.log"


def test_the_claude_command_and_the_restore_stagger(tmp_path: Path) -> None:
    assert (load_settings(write(tmp_path, ""), environ={}).claude_command) == "claude"
    settings = load_settings(write(tmp_path, 'claude_command = "npx -y @anthropic-ai/claude-code"\nrestore_stagger = 0.5\n'), environ={})
    assert settings.claude_command == "npx -y @anthropic-ai/claude-code" and settings.restore_stagger == 0.5
