"""Two (or more) accounts for the real Claude Code: a ``CLAUDE_CONFIG_DIR`` each with its own
OAuth login, one scripted API that answers each token with its own rate-limit headers, and a
config naming the accounts, for agents the real ``nbs-tui new --account`` starts (issue 37)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.realclaude.harness import (
    _SCRUB_PREFIXES,
    NBS_POLL_COMMAND,
    OFFLINE_ENV,
    ClaudeFleet,
    FakeAPI,
    Scenario,
)
from tests.realclaude.new_world import REPO

USER_STATUS_LINE = "read -r doc; printf 'MINE %s' \"$(printf '%s' \"$doc\" | sed -n 's/.*\"version\":\"\\([^\"]*\\)\".*/\\1/p')\""
"""The user's own status line: ``MINE <Claude Code version>``."""


@dataclass
class AccountsWorld:
    root: Path
    home: Path
    api: FakeAPI
    wrapper: Path
    config: Path
    state: Path
    accounts: dict[str, Path]
    tokens: dict[str, str]
    workdirs: list[Path]
    settings_bytes: dict[str, bytes] = field(default_factory=dict)
    """Each account's settings.json as written, before any install."""
    born: float = field(default_factory=lambda: float(int(time.time())))
    resets: dict[str, float] = field(default_factory=dict)

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "CLAUDE", "NBS_"))}
        env.update(XDG_STATE_HOME=str(self.state), XDG_CONFIG_HOME=str(self.state / "config"), NBS_SERVICE="off")
        env.update(extra)
        return env

    def nbs_tui(self, socket: str, *argv: str, timeout: float = 150.0, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "nbs_tui", "--config", str(self.config), "-L", socket, *argv],
            capture_output=True, text=True, timeout=timeout, env=self.env(**env), cwd=REPO, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def usage(self, socket: str) -> dict[str, Any]:
        done = self.nbs_tui(socket, "usage", "--json")
        assert done.returncode == 0, done.stderr
        by_name: dict[str, Any] = {a["name"]: a for a in json.loads(done.stdout)["accounts"]}
        return by_name

    def set_usage(self, account: str, five_hour: float, seven_day: float = 0.1, *, five_hour_reset: float | None = None) -> None:
        """From now on the API reports these for the account's token; the resets stay the
        world's (a window's reset does not move while it lasts) unless ``five_hour_reset``."""
        if five_hour_reset is not None:
            self.resets[account] = five_hour_reset
        five_reset = self.resets.setdefault(account, self.born + 3 * 3600)
        self.api.set_utilisation(
            self.tokens[account], five_hour, seven_day, five_hour_reset=five_reset, seven_day_reset=self.born + 4 * 86400
        )

    def tokens_seen(self, prompt: str) -> set[str]:
        """The OAuth tokens of the main requests whose last user text is ``prompt``."""
        found = set()
        for request in self.api.main_requests():
            if request.last_user_text() == prompt:
                auth = next((v for k, v in request.headers.items() if k.lower() == "authorization"), "")
                found.add(auth.removeprefix("Bearer "))
        return found


def make_accounts_world(
    fleet: ClaudeFleet,
    tmp: Path,
    accounts: Sequence[str] = ("a", "b"),
    *,
    scenario: Scenario = (),
    caps: Mapping[str, str] | None = None,
    budget: str = "",
    extra_config: str = "",
    workdirs: int = 4,
) -> AccountsWorld:
    """``caps``: account -> TOML lines for its table (``max_five_hour_percent = 80``)."""
    api = FakeAPI(scenario, name="accounts").start()
    fleet._apis.append(api)
    root = tmp / "world"
    home = (root / "home").resolve()
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "claude").symlink_to(fleet.binary.path)
    dirs = []
    for index in range(workdirs):
        folder = root / f"w{index + 1}"
        folder.mkdir()
        commands = folder / ".claude" / "commands"
        commands.mkdir(parents=True)
        (commands / "nbs-poll.md").write_text(NBS_POLL_COMMAND)  # a poll is a turn, as in a real project
        dirs.append(folder.resolve())
    world_accounts = {name: (root / f"acct-{name}").resolve() for name in accounts}
    tokens = {name: f"oauth-token-{name}" for name in accounts}
    settings_bytes = {}
    for name, folder in world_accounts.items():
        folder.mkdir()
        version = fleet.binary.version
        config = {
            "numStartups": 5, "theme": "dark", "autoUpdates": False, "hasSeenTasksHint": True, "tipsHistory": {},
            "lastReleaseNotesSeen": version, "lastOnboardingVersion": version, "hasSeenAutoDefaultNudge": True,
            "hasCompletedOnboarding": True,
            "projects": {str(d): {"allowedTools": [], "hasCompletedProjectOnboarding": True, "hasTrustDialogAccepted": True} for d in dirs},
        }  # fmt: skip
        (folder / ".claude.json").write_text(json.dumps(config, indent=2))
        # Claude Code 2.1.332 adds this env entry itself at the first start (then the file changed
        # since install and uninstall rewrites it instead of restoring the bytes): given here.
        settings = {
            "permissions": {"defaultMode": "default"},
            "statusLine": {"type": "command", "command": USER_STATUS_LINE},
            "env": {"DISABLE_AUTOUPDATER": "1"},
        }
        raw = (json.dumps(settings, indent=2) + "\n").encode()
        (folder / "settings.json").write_bytes(raw)
        settings_bytes[name] = raw
        login = {
            "claudeAiOauth": {
                "accessToken": tokens[name], "refreshToken": f"refresh-{name}",
                "expiresAt": int((time.time() + 30 * 86400) * 1000), "scopes": ["user:inference", "user:profile"],
                "subscriptionType": "max",
            }
        }  # fmt: skip
        (folder / ".credentials.json").write_text(json.dumps(login))
        (folder / ".credentials.json").chmod(0o600)
    env = {"HOME": str(home), "ANTHROPIC_BASE_URL": api.base_url, "TERM": "tmux-256color", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", **OFFLINE_ENV}
    lines = [
        "#!/bin/bash",
        "# the test's claude_command: the scripted API, the account nbs-tui chose, the real Claude Code",
        'account=${CLAUDE_CONFIG_DIR:-}',
        "for v in $(compgen -e); do",
        "  case $v in " + "|".join(p + "*" for p in _SCRUB_PREFIXES) + ") unset \"$v\";; esac",
        "done",
        '[ -n "$account" ] && export CLAUDE_CONFIG_DIR="$account"',
        *(f"export {k}={shlex.quote(v)}" for k, v in env.items()),
        f'exec {shlex.quote(str(home / "bin" / "claude"))} "$@"',
    ]
    wrapper = root / "claude-here"
    wrapper.write_text("\n".join(lines) + "\n")
    wrapper.chmod(0o755)
    state = root / "state"
    config_path = root / "config.toml"
    text = [
        f"claude_command = {json.dumps(str(wrapper))}",
        f"claude_home = {json.dumps(str(home / '.claude'))}",
        f"hook_spool = {json.dumps(str(state / 'nbs-tui' / 'hooks.jsonl'))}",
        extra_config,
    ]
    for name, folder in world_accounts.items():
        text += [f"[accounts.{name}]", f"config_dir = {json.dumps(str(folder))}", (caps or {}).get(name, "")]
    if budget:
        text += ["[budget]", budget]
    config_path.write_text("\n".join(text) + "\n")
    return AccountsWorld(root, home, api, wrapper, config_path, state, world_accounts, tokens, dirs, settings_bytes)
