"""Shell completion as a user gets it: the generated script loaded into a real bash and a real zsh.

Bash is asked directly (``complete -p`` and the completion function filling ``COMPREPLY`` for
given words, as bash does on Tab). Zsh's completion system only runs inside its line editor, so
zsh runs in a pane of a private tmux server and the test presses Tab there and reads the screen.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.cli import build_parser
from nbs_tui.completion import completion_script, describe
from tests.conftest import cannot_run


def script(shell: str, tmp_path: Path) -> Path:
    """The script exactly as ``nbs-tui completion SHELL`` prints it, saved to a file."""
    result = subprocess.run(
        [sys.executable, "-m", "nbs_tui", "completion", shell], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout == completion_script(shell, build_parser())
    path = tmp_path / f"nbs-tui.{shell}"
    path.write_text(result.stdout, encoding="utf-8")
    return path


BASH_ASK = r"""
source "$1"
complete -p nbs-tui
shift
ask() {
    COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=()
    _nbs_tui
    local IFS='|'; echo "${COMPREPLY[*]}"
}
"""


def bash_complete(path: Path, *lines: tuple[str, ...]) -> list[str]:
    """What bash offers for the last word of each line (words as bash splits them)."""
    body = BASH_ASK + "".join(
        "ask " + " ".join("'" + w.replace("'", "'\\''") + "'" for w in words) + "\n" for words in lines
    )
    result = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", body, "bash", str(path)],
        capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0] == "complete -F _nbs_tui nbs-tui"
    assert result.stderr == ""
    return out[1:]


def test_bash_completes_subcommands_options_choices_and_files(tmp_path: Path) -> None:
    path = script("bash", tmp_path)
    (tmp_path / "my settings.toml").write_text("", encoding="utf-8")
    (tmp_path / "projects").mkdir()
    answers = bash_complete(
        path,
        ("nbs-tui", "de"),
        ("nbs-tui", "dem"),
        ("nbs-tui", ""),
        ("nbs-tui", "hooks", ""),
        ("nbs-tui", "-L", "work", "--config", "x.toml", "hooks", "--user", ""),
        ("nbs-tui", "--plan-policy", ""),
        ("nbs-tui", "--plan-policy", "=", "o"),
        ("nbs-tui", "demo", "--ag"),
        ("nbs-tui", "--pro"),
        ("nbs-tui", "--config", f"{tmp_path}/my"),
        ("nbs-tui", "--project", f"{tmp_path}/"),
        ("nbs-tui", "-L", ""),
        ("nbs-tui", "completion", ""),
        ("nbs-tui", "hooks", "install", ""),
        ("nbs-tui", "new", f"{tmp_path}/"),
        ("nbs-tui", "new", "--permission-mode", "by"),
        ("nbs-tui", "web", "--b"),
        ("nbs-tui", "web", "--cert", f"{tmp_path}/my"),
    )
    assert answers == [
        "demo|detect",
        "demo",
        "demo|detect|hooks|completion|serve-stdio|service|web|new|restore|stop|restart|agents|read|usage|send|wait|answer|diff|queue|mcp",
        "install|uninstall|status",
        "install|uninstall|status",
        "no-prompts|off",
        "off",
        "--agents",
        "--project",
        f"{tmp_path}/my settings.toml",  # one word, space and all
        f"{tmp_path}/projects",  # folders only
        "",  # a socket name: nothing to guess
        "bash|zsh",
        "",  # hooks takes one action
        f"{tmp_path}/projects",  # new's DIR: folders only
        "bypassPermissions",
        "--bind|--behind-proxy",
        f"{tmp_path}/my settings.toml",  # web's --cert: a file
    ]


def test_scripts_follow_the_parser() -> None:
    """A flag added to the parser appears in both scripts without touching the generator."""
    parser = build_parser()
    parser.add_argument("--brand-new", choices=("left", "right"), help="a flag added later")
    bash, zsh = completion_script("bash", parser), completion_script("zsh", parser)
    assert "--brand-new" in bash and "_nbs_reply -W 'left right'" in bash
    assert "'(--brand-new)--brand-new[a flag added later]:left|right:(left right)'" in zsh
    names = [command.name for command in describe(build_parser()).subcommands]
    assert names == [
        "demo", "detect", "hooks", "completion", "serve-stdio", "service", "web", "new", "restore", "stop", "restart",
        "agents", "read", "usage", "send", "wait", "answer", "diff", "queue", "mcp",
    ]  # fmt: skip


@pytest.fixture
def zsh() -> str:
    path = shutil.which("zsh")
    if path is None:
        cannot_run("zsh is not installed (scripts/test installs it)")
    return path


def test_zsh_completes_in_its_line_editor(tmp_path: Path, zsh: str, server: libtmux.Server) -> None:
    path = script("zsh", tmp_path)
    session = server.new_session(
        session_name="zsh", window_command=f"env -i TERM=xterm-256color HOME={tmp_path} {zsh} -f", x=160, y=40
    )
    pane = session.active_window.active_pane
    assert pane is not None

    def screen() -> str:
        return "\n".join(pane.capture_pane())

    def until(text: str) -> None:
        assert retry_until(lambda: text in screen(), seconds=15, raises=False), f"{text!r} not in:\n{screen()}"

    pane.send_keys("PS1='zsh%% '; autoload -Uz compinit && compinit -u -D && source " + str(path), enter=True)
    pane.send_keys("print loaded:$_comps[nbs-tui]", enter=True)
    until("loaded:_nbs_tui")
    pane.send_keys("clear", enter=True)

    pane.send_keys("nbs-tui hooks ", enter=False, literal=True)
    pane.send_keys("Tab", enter=False)
    until("uninstall")
    assert "install" in screen() and "status" in screen()
    pane.send_keys("C-u", enter=False)  # zsh -f binds ^U to kill the whole line

    pane.send_keys("nbs-tui dem", enter=False, literal=True)
    pane.send_keys("Tab", enter=False)
    until("zsh% nbs-tui demo")
    pane.cmd("send-keys", "-l", "--", "--pl")  # lands after the space completion added
    until("zsh% nbs-tui demo --pl")
    pane.send_keys("Tab", enter=False)
    until("zsh% nbs-tui demo --plan-policy")
    pane.send_keys("Tab", enter=False)
    until("no-prompts")
    assert "off" in screen()
