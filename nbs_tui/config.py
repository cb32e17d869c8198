"""One frozen settings object: defaults < config file < NBS_* environment < command-line flags.

Below the ports: nothing here imports `nbs_tui.claude` or `nbs_tui.files` (they import this).
Writing a setting back to the user's file is `nbs_tui.files.config_edit.save_setting`; where
Claude Code's hook spool is by default is decided here (`default_spool`), for the hooks
(`nbs_tui.claude.hooks`) and the settings alike.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from nbs_tui.core.fleet.accounts import Account, AccountsError, Budget, parse_accounts, parse_budget
from nbs_tui.core.fleet.agent_spec import SpecError, command_words
from nbs_tui.core.fleet.host_spec import HostsError, HostSpec, choose_hosts, parse_hosts
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.notifications.notify_rules import NotifySettingsError, parse_kinds
from nbs_tui.core.notifications.notify_settings import (
    NotifyConfigError,
    check_command,
    check_urls,
    parse_protocols,
)
from nbs_tui.core.queue.handout import parse_max_concurrent
from nbs_tui.core.sidecar.meters import DEFAULT_PRICES, ModelPrice, parse_prices
from nbs_tui.housekeeping.logs import state_dir

SPOOL_NAME = "hooks.jsonl"
SCRIPT_NAME = "nbs-tui-hook.sh"


def script_path(spool: Path) -> Path:
    """Where the hook script lives: next to the spool, so one spool means one script."""
    return spool.parent / SCRIPT_NAME


def xdg_spool(environ: Mapping[str, str] | None = None) -> Path:
    """The spool in nbs-tui's state folder, ``$XDG_STATE_HOME/nbs-tui`` (default
    ``~/.local/state/nbs-tui``), next to its log and action log."""
    return state_dir(environ) / SPOOL_NAME


def legacy_spool(environ: Mapping[str, str] | None = None) -> Path:
    """Where the default spool was before it followed ``$XDG_STATE_HOME``: always under ~."""
    env = os.environ if environ is None else environ
    return state_dir({k: v for k, v in env.items() if k != "XDG_STATE_HOME"}) / SPOOL_NAME


def default_spool(environ: Mapping[str, str] | None = None) -> Path:
    """The spool to read and to install hooks for when none is named: `xdg_spool`, unless hooks
    were installed for `legacy_spool` and never for the XDG one (only its hook script is there).

    An installed hook command has its spool's absolute path baked in, so those hooks keep writing
    to the old place after ``$XDG_STATE_HOME`` is set; reading there keeps their events coming
    without the user doing anything, and ``hooks status`` says how to move them."""
    new, old = xdg_spool(environ), legacy_spool(environ)
    if new != old and not script_path(new).exists() and script_path(old).exists():
        return old
    return new


DEFAULT_CONFIG_PATH = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "nbs-tui" / "config.toml"


class ConfigError(ValueError):
    """A setting has a value nbs-tui cannot use; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Settings:
    server: ServerAddress = field(default_factory=ServerAddress)
    server_from_tmux_env: bool = False
    """``server`` was not chosen (``-L``/``-S``) but is the one ``$TMUX`` names: a socket on this
    machine, so another host watched with ``--host`` gets its own default server, not this."""
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
    limit_resume: bool = False
    """After a usage limit resets, type ``limit_resume_message`` into each limited agent (opt-in;
    never where Claude Code continues by itself)."""
    limit_resume_message: str = "continue"
    limit_resume_margin: float = 60.0
    """Seconds after the announced reset before the first resume."""
    limit_resume_stagger: float = 30.0
    """Seconds between two resumes, so the fleet does not fire at once."""
    needs_you_idle: float = 300.0
    """An idle agent joins the "needs you" queue after this many seconds."""
    bell: bool = True
    """Ring the terminal bell when an agent joins the "needs you" queue."""
    desktop_notify: bool = False
    """Also raise a desktop notification (``notify-send``) when one joins."""
    notify_osc: str = "auto"
    """Terminal notifications written to the dashboard's own terminal (they travel back through
    ssh): ``auto`` (the terminal's one, else a bell), ``off`` or protocols ``9,777,99,bell`` (nbs_tui/notify/terminal_notifier.py)."""
    notify_command: str = ""
    """A command run per notification, without a shell: ``{pane} {host} {project} {state} {reason} {event}``."""
    notify_mute: tuple[str, ...] = ()
    """Notification kinds not sent: ``needs-input``, ``finished``, ``error``, ``limited``, ``stuck``."""
    notify_repeat: float = 60.0
    """Seconds before the same kind of notification for the same pane is sent again."""
    notify_urls: tuple[str, ...] = ()
    """Apprise URLs (``ntfy://host/topic``, ``tgram://...``, ``json://host/``) the lease holder
    sends each notification to as a push (nbs_tui/notify/push.py, docs/notifications.md)."""
    web_link_ttl: float = 10.0
    """Minutes a push's link to the browser view's answer card works (once), and at most how
    long the card it opened stays open."""
    web_session_ttl: float = 12.0
    """Hours the browser view's session cookie (the token's) lasts; showing the token again renews it."""
    action_log: Path = field(default_factory=lambda: state_dir() / "actions.log")
    hook_spool: Path = field(default_factory=default_spool)
    """Where hooks append and the watcher reads: ``$XDG_STATE_HOME/nbs-tui/hooks.jsonl``, or
    the old ``~/.local/state`` one while hooks installed for it are the only ones (claude/hooks.py)."""
    claude_home: Path = field(default_factory=lambda: Path.home() / ".claude")
    keymap: Mapping[str, str] = field(default_factory=dict)
    """Rebound keys: binding id -> comma-separated keys (the config file's ``[keymap]`` table)."""
    theme: str = "textual-dark"
    """Textual theme name; the one picked in the command palette is saved back here."""
    service: str = "auto"
    """``auto``: a dashboard that finds no sidecar acting for its server starts ``nbs-tui service``
    for it; ``off``: the dashboard holds the sidecar lease itself while it runs (docs/lease.md)."""
    lease_ttl: float = 8.0
    """Seconds the sidecar lease lasts without renewal (failover comes within twice this)."""
    config_file: Path = DEFAULT_CONFIG_PATH
    """The file these settings were read from (or would be): where ``save_setting`` writes."""
    hosts: tuple[HostSpec, ...] = ()
    """The config file's ``[[hosts]]`` table (docs/remote.md, nbs_tui/core/fleet/host_spec.py)."""
    host_choice: tuple[str, ...] = ()
    """``--host`` values (flags only): which hosts to watch."""
    prices: Mapping[str, ModelPrice] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    """USD per million tokens by model id, for the meters' cost estimate: the defaults
    (nbs_tui/core/sidecar/meters.py, docs/reference.md "Meters") with the config file's ``[prices]`` over them."""
    claude_command: str = "claude"
    """The command that starts Claude Code for ``nbs-tui new`` and ``restore``: words split as a
    shell would (``"npx -y @anthropic-ai/claude-code"``, ``"env CLAUDE_CONFIG_DIR=/x claude"``),
    nbs-tui's own options after them (docs/lifecycle.md)."""
    restore_stagger: float = 2.0
    """Seconds between two agents' starts in a restore."""
    open_card: str = ""
    """``--open-card host/server/pane`` (flags only): once the fleet is seeded, the dashboard
    selects that agent and opens its answer card (the browser view's one-time links)."""
    card_only: bool = False
    """``--card-only`` (flags only, with ``--open-card``): show that one card and nothing else, and
    quit when it closes (what a browser view's one-time link starts)."""
    open_review: str = ""
    """``--open-review host/server/pane`` (flags only): once the fleet is seen, open that agent's
    review (with ``--card-only``: that review and nothing else, as a push's review link starts)."""
    remember_fleet: bool = True
    """The acting runtime keeps the server's fleet memory for ``nbs-tui restore`` (the demo's
    throw-away servers are not remembered)."""
    web_token_file: str = ""
    """``nbs-tui web``'s token, read from this file (mode 0600) instead of a new random one at each
    start; ``--token-file`` overrides it."""
    accounts: tuple[Account, ...] = ()
    """The config file's ``[accounts.NAME]`` tables: Claude Code configurations agents run under,
    with their caps (nbs_tui/core/fleet/accounts.py, docs/usage.md)."""
    budget: Budget = field(default_factory=Budget)
    """The config file's ``[budget]`` table: fleet-wide caps and the defaults for accounts not named."""
    max_concurrent: Mapping[str, int] = field(default_factory=dict)
    """The work queue's limit per folder (the config file's ``[max_concurrent]`` table, absolute
    folder = number): never more of a folder's tasks out at once, and the queue may start new
    agents there (docs/queue.md)."""
    background_sessions: bool = True
    """List Claude Code's own background sessions (``claude agents --json``) in the dashboard's
    fleet, where the installed ``claude_command`` has them (docs/lifecycle.md)."""

    def watched_hosts(self) -> tuple[HostSpec, ...]:
        """The hosts to watch: ``--host``, else ``[[hosts]]``, else this machine."""
        return choose_hosts(self.hosts, self.host_choice, self.server, server_is_local=self.server_from_tmux_env)


_NOT_IN_FILE = frozenset({"server", "server_from_tmux_env", "config_file", "host_choice", "open_card", "card_only", "open_review"})

_ENV_KEYS: Mapping[str, str] = {
    "NBS_POLL_INTERVAL": "poll_interval",
    "NBS_POLL_DISABLE": "poll_disabled",
    "NBS_PLAN_POLICY": "plan_policy",
    "NBS_STUCK_GRACE": "stuck_grace",
    "NBS_LIMIT_RESUME": "limit_resume",
    "NBS_SERVICE": "service",
    "NBS_LEASE_TTL": "lease_ttl",
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
            if isinstance(value, str):  # "a, b" from a flag or the environment
                return tuple(part.strip() for part in value.split(",") if part.strip())
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
    """Build the settings from every layer; ``overrides`` (flags) win, ``None`` values are skipped.

    Only the default config file may be absent: a ``config_path`` the user named that does not
    exist is a mistake worth stopping for, not something to ignore silently.
    """
    settings = Settings()
    known = {f.name for f in fields(Settings)}
    path = config_path or DEFAULT_CONFIG_PATH
    if config_path is not None and not config_path.is_file():
        why = "is a directory" if config_path.is_dir() else "does not exist"
        raise ConfigError(f"config file {config_path} {why}")
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise ConfigError(f"config file {path}: {error}") from None
        for key, value in data.items():
            attr = key.replace("-", "_")
            if attr not in known or attr in _NOT_IN_FILE:
                raise ConfigError(f"config file {path}: unknown setting {key!r}")
            if attr == "prices":
                try:
                    settings = replace(settings, prices={**DEFAULT_PRICES, **parse_prices(value)})
                except ValueError as error:
                    raise ConfigError(f"config file {path}: {error}") from None
                continue
            if attr in ("accounts", "budget"):
                try:
                    if attr == "accounts":
                        settings = replace(settings, accounts=parse_accounts(value, expand=lambda raw: Path(raw).expanduser()))
                    else:
                        settings = replace(settings, budget=parse_budget(value))
                except AccountsError as error:
                    raise ConfigError(f"config file {path}: {error}") from None
                continue
            if attr == "max_concurrent":
                try:
                    settings = replace(settings, max_concurrent=parse_max_concurrent(value))
                except ValueError as error:
                    raise ConfigError(f"config file {path}: {error}") from None
                continue
            if attr == "hosts":
                try:
                    settings = replace(settings, hosts=parse_hosts(value))
                except HostsError as error:
                    raise ConfigError(f"config file {path}: {error}") from None
                continue
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
    try:
        command_words(settings.claude_command)
    except SpecError as error:
        raise ConfigError(str(error)) from None
    if settings.service not in ("auto", "off"):
        raise ConfigError(f"service must be 'auto' or 'off', not {settings.service!r}")
    try:
        parse_kinds(settings.notify_mute)
        parse_protocols(settings.notify_osc, {})
        check_command(settings.notify_command)
        check_urls(settings.notify_urls)
    except (NotifySettingsError, NotifyConfigError) as error:
        raise ConfigError(str(error)) from None
    try:
        settings.watched_hosts()
    except HostsError as error:
        raise ConfigError(str(error)) from None
    return replace(settings, config_file=path)
