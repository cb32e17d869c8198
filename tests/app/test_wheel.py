"""The built wheel carries the styles: install it into a fresh venv and start the app headless."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import libtmux
import pytest

from tests.conftest import REPO_ROOT

PROBE = textwrap.dedent(
    """
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
)


@pytest.mark.slow
def test_wheel_ships_the_styles_and_starts(tmp_path: Path, server: libtmux.Server) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(REPO_ROOT)],
        check=True, capture_output=True, text=True,
    )
    wheel = next(dist.glob("nbs_tui-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        assert "nbs_tui/styles/app.tcss" in archive.namelist()

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True
    )
    assert install.returncode == 0, install.stderr[-2000:]

    help_text = subprocess.run([str(venv / "bin" / "nbs-tui"), "--help"], capture_output=True, text=True, check=True)
    assert "nbs-tui demo" in help_text.stdout

    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    result = subprocess.run(
        [str(python), "-I", str(probe), server.socket_name or "nbs-none"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    assert str(venv) in lines["module"], "the probe must import the installed copy, not the checkout"
    assert lines["css"].endswith("nbs_tui/styles/app.tcss") and str(venv) in lines["css"]
    assert lines["min-width"].startswith("60"), lines["min-width"]
    assert lines["empty"] == "True", "no server: the empty state shows"
