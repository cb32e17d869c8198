"""``pipx install .`` and ``uv tool install .``, as the README tells a user, each into a private
home and bin folder; then the installed command starts and works without the test extras, and
the installed app finds its styles and starts (headless, on a tmux socket with no server).

pipx and uv come from the test extras (``pip install -e '.[test]'``, which scripts/test runs).
Each install builds the wheel from this checkout, so the test also catches a file left out of
the wheel or a module that needs a test-only package (libtmux) at run time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

BIN = Path(sys.executable).parent
SCREEN = REPO_ROOT / "tests" / "corpus" / "claude" / "2.1.332" / "permission_bash.txt"

# Imports every module of the installed package with only its runtime dependencies present.
IMPORT_ALL = """
import importlib, importlib.util, pkgutil, sys
import nbs_tui
names = [m.name for m in pkgutil.walk_packages(nbs_tui.__path__, "nbs_tui.") if not m.name.endswith("__main__")]
for name in names:
    importlib.import_module(name)
print(len(names), importlib.util.find_spec("libtmux") is None, nbs_tui.__file__)
"""

# Starts the installed app headless against a socket with no tmux server behind it.
APP_PROBE = """
import asyncio, sys, time
import nbs_tui.app as app_module
from nbs_tui.app import create_app, css_path
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress

print("module", app_module.__file__)
print("css", css_path())

async def main() -> None:
    settings = Settings(server=ServerAddress(socket_name=sys.argv[1]))
    app = create_app(settings, control_plane=False, claude=False)
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 15  # a bounded wait for the no-server view
        while not app.query_one("#empty").display and time.monotonic() < deadline:
            await pilot.pause(0.05)
        print("min-width", app.query_one("#side").styles.min_width)
        print("empty", app.query_one("#empty").display)

asyncio.run(main())
"""


def run(argv: list[str | Path], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run in the temporary home unless told otherwise: from the checkout, ``python -c`` would
    import the checkout's package instead of the installed one."""
    result = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=120, env=env, cwd=cwd or env["HOME"]
    )
    assert result.returncode == 0, f"{argv}: {result.stderr[-3000:]}"
    return result


def check_installed(command: Path, tool_python: Path, env: dict[str, str]) -> None:
    from nbs_tui import __version__

    assert run([command, "--version"], env).stdout.strip() == f"nbs-tui {__version__}"

    detected = json.loads(run([command, "detect", SCREEN], env).stdout)
    here = json.loads(run([sys.executable, "-m", "nbs_tui", "detect", SCREEN], env).stdout)
    assert detected == here
    assert detected["state"] == "permission"
    assert "complete -F _nbs_tui nbs-tui" in run([command, "completion", "bash"], env).stdout

    count, no_libtmux, where = run([tool_python, "-c", IMPORT_ALL], env).stdout.split()
    assert int(count) > 20
    assert no_libtmux == "True"  # a test dependency only
    installed = Path(where).parent
    assert not installed.is_relative_to(REPO_ROOT)  # a copy, not this checkout
    # Built from this checkout as it is now, not from a stale cached build.
    assert (installed / "cli.py").read_bytes() == (REPO_ROOT / "nbs_tui" / "cli.py").read_bytes()
    assert (installed / "styles" / "app.tcss").is_file()

    probe = Path(env["HOME"]) / "probe.py"
    probe.write_text(APP_PROBE)
    no_server = f"nbs-none-{os.getpid()}-{Path(env['HOME']).name}"
    started = run([tool_python, "-I", probe, no_server], env)
    lines = dict(line.split(" ", 1) for line in started.stdout.splitlines() if " " in line)
    assert lines["module"].startswith(str(installed)), "the probe must import the installed copy"
    assert lines["css"] == str(installed / "styles" / "app.tcss")
    assert lines["min-width"].startswith("60"), lines["min-width"]
    assert lines["empty"] == "True", "no server: the empty state shows"


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIPX_", "UV_", "VIRTUAL_ENV"))}
    env.update(extra, HOME=str(tmp_path), PATH=f"{tmp_path / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    return env


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_pipx_install(tmp_path: Path) -> None:
    env = clean_env(
        tmp_path,
        PIPX_HOME=str(tmp_path / "pipx"),
        PIPX_BIN_DIR=str(tmp_path / "bin"),
        PIPX_MAN_DIR=str(tmp_path / "man"),
    )
    run([BIN / "pipx", "install", "--python", sys.executable, "."], env, cwd=REPO_ROOT)
    check_installed(tmp_path / "bin" / "nbs-tui", tmp_path / "pipx" / "venvs" / "nbs-tui" / "bin" / "python", env)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_uv_tool_install(tmp_path: Path) -> None:
    env = clean_env(tmp_path, UV_TOOL_DIR=str(tmp_path / "uv-tools"), UV_TOOL_BIN_DIR=str(tmp_path / "bin"))
    # --refresh-package: uv caches a local project's build by its pyproject.toml alone.
    run([BIN / "uv", "tool", "install", "--python", sys.executable, "--refresh-package", "nbs-tui", "."], env, cwd=REPO_ROOT)
    check_installed(tmp_path / "bin" / "nbs-tui", tmp_path / "uv-tools" / "nbs-tui" / "bin" / "python", env)
