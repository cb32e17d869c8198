"""One frozen settings object: defaults < config file < NBS_* environment < command-line flags."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from nbs_tui.core.model import ServerAddress

DEFAULT_CONFIG_PATH = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "nbs-tui" / "config.toml"


class ConfigError(ValueError):
    """A setting has a value nbs-tui cannot use; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Settings:
    server: ServerAddress = field(default_factory=ServerAddress)
    sessions: tuple[str, ...] = ()
    """Only watch these sessions; empty means every session of the server."""
    projects: tuple[Path, ...] = ()
    """Extra project folders whose ``.nbs/`` is watched even when no pane sits in them."""
    poll_interval: float = 30.0
    """Seconds a pane's screen must stay unchanged at an idle prompt before ``/nbs-poll``."""
    poll_disabled: bool = False
    plan_policy: str = "no-prompts"
    """How plan-approval menus are answered: ``no-prompts`` (bypass, auto, accept edits) or ``off``."""
    plan_fallback: int | None = None
    """Option number to pick when no label matches the policy; None means leave the menu alone."""
    poll_command: str = "/nbs-poll"
    stuck_grace: float = 60.0
    """Seconds idle with a quiet transcript before a stuck agent is nudged."""
    stuck_nudge: str = "Please continue with your task, or say what you are waiting for."
    stuck_max_nudges: int = 1
    needs_you_idle: float = 300.0
    """An idle agent joins the "needs you" queue after this many seconds."""
    bell: bool = True
    """Ring the terminal bell when an agent joins the "needs you" queue."""
    desktop_notify: bool = False
    """Also raise a desktop notification (``notify-send``) when one joins."""
    action_log: Path = field(default_factory=lambda: Path.home() / ".local" / "state" / "nbs-tui" / "actions.log")
    hook_spool: Path = field(default_factory=lambda: Path.home() / ".local" / "state" / "nbs-tui" / "hooks.jsonl")
    claude_home: Path = field(default_factory=lambda: Path.home() / ".claude")
    keymap: Mapping[str, str] = field(default_factory=dict)
    """Rebound keys: binding id -> comma-separated keys (the config file's ``[keymap]`` table)."""


_ENV_KEYS: Mapping[str, str] = {
    "NBS_POLL_INTERVAL": "poll_interval",
    "NBS_POLL_DISABLE": "poll_disabled",
    "NBS_PLAN_POLICY": "plan_policy",
    "NBS_STUCK_GRACE": "stuck_grace",
}


def _coerce(name: str, value: Any, current: Any) -> Any:
    try:
        if isinstance(current, bool):
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "on")
            return bool(value)
        if isinstance(current, float):
            number = float(value)
            if number <= 0:
                raise ConfigError(f"{name} must be a positive number of seconds, not {value!r}")
            return number
        if isinstance(current, int) and not isinstance(current, bool):
            return int(value)
        if isinstance(current, Path):
            return Path(str(value)).expanduser()
        if isinstance(current, tuple):
            return tuple(value)
        if isinstance(current, Mapping):
            if not isinstance(value, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise ConfigError(f"{name} must be a table of binding id = \"keys\"")
            return dict(value)
    except (TypeError, ValueError) as error:
        if isinstance(error, ConfigError):
            raise
        raise ConfigError(f"{name}: cannot use {value!r} ({error})") from None
    return value


def load_settings(
    config_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Build the settings from every layer; ``overrides`` (flags) win, ``None`` values are skipped."""
    settings = Settings()
    known = {f.name for f in fields(Settings)}
    path = config_path or DEFAULT_CONFIG_PATH
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise ConfigError(f"config file {path}: {error}") from None
        for key, value in data.items():
            attr = key.replace("-", "_")
            if attr not in known or attr == "server":
                raise ConfigError(f"config file {path}: unknown setting {key!r}")
            settings = replace(settings, **{attr: _coerce(attr, value, getattr(settings, attr))})
    env = os.environ if environ is None else environ
    for env_key, attr in _ENV_KEYS.items():
        if env.get(env_key):
            settings = replace(settings, **{attr: _coerce(env_key, env[env_key], getattr(settings, attr))})
    for attr, value in overrides.items():
        if value is None:
            continue
        if attr not in known:
            raise ConfigError(f"unknown setting {attr!r}")
        current = getattr(settings, attr)
        settings = replace(settings, **{attr: value if attr == "server" else _coerce(attr, value, current)})
    if settings.plan_policy not in ("no-prompts", "off"):
        raise ConfigError(f"plan policy must be 'no-prompts' or 'off', not {settings.plan_policy!r}")
    return settings
