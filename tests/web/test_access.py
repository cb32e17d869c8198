"""Who gets into the browser view, at the HTTP level (aiohttp's test client, in process), and
the command's refusals (real processes): the token and its cookie, the slowdown of repeated
failures, one-time links, the token file's mode, a bind beyond loopback without TLS.

The tabs' dashboard here is a stand-in that writes down its own command line, so a test sees
exactly which app a websocket started (and that none started for a refused request). It also
proves the textual-serve internals `nbs_tui.web.server` uses are where it expects them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import libtmux
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from nbs_tui.core.web_links import issue_link
from nbs_tui.web.access import (
    MAX_ADDRESSES,
    AccessError,
    Bind,
    FailureThrottle,
    check_exposure,
    load_token,
    parse_bind,
)
from nbs_tui.web.server import COOKIE, WebSettings, WebView
from tests.web.webproc import REPO

TOKEN = "t" * 43
Client = TestClient[web.Request, web.Application]


def recorder(out: Path) -> list[str]:
    """A 'dashboard' that writes its arguments to ``out`` and ends."""
    script = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text(chr(10).join(sys.argv[2:]))"
    return [sys.executable, "-c", script, str(out)]


@pytest.fixture
async def view(tmp_path: Path) -> AsyncIterator[tuple[WebView, Client]]:
    web_view = WebView(
        WebSettings(bind=Bind("127.0.0.1", 0), dashboard_argv=recorder(tmp_path / "started"), token=TOKEN)
    )
    client: Client = TestClient(TestServer(await web_view.web_application()))
    await client.start_server()
    try:
        yield web_view, client
    finally:
        await client.close()


async def test_the_token_becomes_a_strict_http_only_cookie(view: tuple[WebView, Client]) -> None:
    web_view, client = view
    answer = await client.get(f"/?token={TOKEN}&fontsize=14", allow_redirects=False)
    assert answer.status == 303
    assert answer.headers["Location"] == "/?fontsize=14"  # the token leaves the address bar
    set_cookie = answer.headers["Set-Cookie"]
    assert f"{COOKIE}={web_view.session};" in set_cookie and TOKEN not in set_cookie
    flags = {part.strip().lower() for part in set_cookie.split(";")}
    assert {"httponly", "samesite=strict", "path=/"} <= flags and "secure" not in flags
    page = await client.get("/", headers={"Cookie": f"{COOKIE}={web_view.session}"})
    assert page.status == 200 and "/ws" in await page.text()
    assert page.headers["X-Frame-Options"] == "DENY" and page.headers["Referrer-Policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert "https://" not in await page.text()  # textual-serve's web font left out: nothing from another site


async def test_no_token_wrong_token_and_a_stale_cookie_are_refused(
    view: tuple[WebView, Client], tmp_path: Path
) -> None:
    web_view, client = view
    assert (await client.get("/")).status == 401
    assert (await client.get("/static/js/textual.js")).status == 401
    assert (await client.get("/ws")).status == 401
    assert (await client.get("/?token=wrong")).status == 403
    assert (await client.get("/ws", headers={"Cookie": f"{COOKIE}=old-run"})).status == 403
    evil = {"Cookie": f"{COOKIE}={web_view.session}", "Origin": "http://evil.example"}
    assert (await client.get("/ws", headers=evil)).status == 403
    assert not (tmp_path / "started").exists()


async def test_repeated_failures_are_slowed_and_logged(
    view: tuple[WebView, Client], caplog: pytest.LogCaptureFixture
) -> None:
    _, client = view
    caplog.set_level(logging.WARNING, logger="nbs_tui.web.server")
    took = []
    for _ in range(6):
        started = time.monotonic()
        assert (await client.get("/?token=guess")).status == 403
        took.append(time.monotonic() - started)
    said = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(said) == 6 and "failure 6 from there; answered after 1.00 s" in said[-1], said
    assert [s.split("answered after ")[1] for s in said] == ["0.00 s)", "0.00 s)", "0.00 s)", "0.25 s)", "0.50 s)", "1.00 s)"]
    assert took[3] >= 0.25 and took[4] >= 0.5 and took[5] >= 1.0  # waited at least that (never less)
    # the right token clears the address's record
    assert (await client.get(f"/?token={TOKEN}", allow_redirects=False)).status == 303
    caplog.clear()
    assert (await client.get("/?token=guess")).status == 403
    assert "failure 1 from there" in caplog.records[-1].getMessage()


def test_failure_throttle_doubles_to_a_cap_and_forgets() -> None:
    now = [0.0]
    throttle = FailureThrottle(clock=lambda: now[0])
    delays = [throttle.failed("a")[1] for _ in range(12)]
    assert delays[:3] == [0.0, 0.0, 0.0] and delays[3:7] == [0.25, 0.5, 1.0, 2.0] and delays[-1] == 8.0
    assert throttle.failed("b") == (1, 0.0)  # per address
    now[0] += 601
    assert throttle.failed("a") == (1, 0.0)
    for number in range(MAX_ADDRESSES + 5):
        throttle.failed(f"10.0.{number // 256}.{number % 256}")
    assert len(throttle._failures) == MAX_ADDRESSES and throttle.failed("a") == (1, 0.0)  # "a" was the oldest


async def test_a_one_time_link_opens_its_card_once(
    view: tuple[WebView, Client], tmp_path: Path
) -> None:
    web_view, client = view
    target = "local/L-work/%12"
    link = issue_link(web_view.link_key, target, now=time.time())
    opened = await client.get(f"/open/{link}", allow_redirects=False)
    assert opened.status == 303 and opened.headers["Location"].startswith("/?card=")
    assert "HttpOnly" in opened.headers["Set-Cookie"] and "SameSite=Strict" in opened.headers["Set-Cookie"]
    cookie = {"Cookie": f"{COOKIE}={web_view.session}"}
    page = await (await client.get(opened.headers["Location"], headers=cookie)).text()
    ticket = opened.headers["Location"].split("=", 1)[1]
    assert f"/ws/card/{ticket}" in page
    assert (await client.get(f"/open/{link}", allow_redirects=False)).status == 403  # used
    expired = issue_link(web_view.link_key, target, now=time.time() - 3600)
    assert (await client.get(f"/open/{expired}", allow_redirects=False)).status == 403
    assert not (tmp_path / "started").exists()
    socket = await client.ws_connect(f"/ws/card/{ticket}?width=100&height=30", headers=cookie)
    try:
        for _ in range(400):  # the app starts on this loop: wait without blocking it
            if (tmp_path / "started").exists():
                break
            await asyncio.sleep(0.05)
    finally:
        await socket.close()
    for _ in range(400):  # the tab's app is stopped and reaped when its websocket ends
        if not web_view._tabs:
            break
        await asyncio.sleep(0.05)
    assert not web_view._tabs
    assert (tmp_path / "started").read_text().splitlines() == ["--open-card", target]


async def test_a_link_naming_no_pane_opens_nothing(
    view: tuple[WebView, Client], tmp_path: Path
) -> None:
    web_view, client = view
    for target in ["local/default/%3; touch /tmp/x", "local/default/$(id)", "local/default", "a b/default/%1"]:
        link = issue_link(web_view.link_key, target, now=time.time())
        assert (await client.get(f"/open/{link}", allow_redirects=False)).status == 403, target
    # a host name may hold shell characters: it reaches the dashboard as one word, never as shell
    odd = "box;touch${IFS}x'$(id)/default/%3"
    assert shlex.split(web_view.tab_command(odd))[-2:] == ["--open-card", odd]
    assert shlex.split(web_view.tab_command(odd))[0] == "exec"
    assert not (tmp_path / "started").exists()


def test_the_token_file_must_be_private(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token-of-the-operator-xyz\n")
    token_file.chmod(0o644)
    with pytest.raises(AccessError, match=r"mode 0644.*chmod 600"):
        load_token(token_file)
    token_file.chmod(0o600)
    assert load_token(token_file) == "s3cret-token-of-the-operator-xyz"
    token_file.write_text("short")
    with pytest.raises(AccessError, match="at least 16"):
        load_token(token_file)
    assert load_token(None) != load_token(None)


def test_binds() -> None:
    assert parse_bind("127.0.0.1:0") == Bind("127.0.0.1", 0)
    assert parse_bind("[::1]:8421") == Bind("::1", 8421)
    assert parse_bind(":9000") == Bind("127.0.0.1", 9000)
    with pytest.raises(AccessError):
        parse_bind("localhost")
    check_exposure(Bind("::1", 1), tls=False, behind_proxy=False)
    check_exposure(Bind("0.0.0.0", 1), tls=True, behind_proxy=False)
    check_exposure(Bind("0.0.0.0", 1), tls=False, behind_proxy=True)
    with pytest.raises(AccessError, match=r"--cert FILE --key FILE.*ssh -L.*--behind-proxy"):
        check_exposure(Bind("0.0.0.0", 1), tls=False, behind_proxy=False)


def run_cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", *args], capture_output=True, text=True, timeout=60, cwd=REPO, env=env,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip


def test_plain_http_beyond_loopback_is_refused(server: libtmux.Server, session: libtmux.Session, tmp_path: Path) -> None:
    socket_name = str(server.socket_name)
    done = run_cli("-L", socket_name, "web", "--bind", "0.0.0.0:0", tmp_path=tmp_path)
    assert done.returncode == 4, done
    assert "refusing to serve plain HTTP on 0.0.0.0" in done.stderr and "ssh -L" in done.stderr
    assert done.stdout == ""
    token_file = tmp_path / "token"
    token_file.write_text("a-token-that-anyone-could-read\n")
    token_file.chmod(0o640)
    done = run_cli("-L", socket_name, "web", "--token-file", str(token_file), tmp_path=tmp_path)
    assert done.returncode == 4 and "chmod 600" in done.stderr and done.stdout == "", done
    config = tmp_path / "config.toml"
    config.write_text(f'web_token_file = "{token_file}"\n')  # the same file named in the settings
    done = run_cli("-L", socket_name, "--config", str(config), "web", tmp_path=tmp_path)
    assert done.returncode == 4 and f"token file {token_file} is mode 0640" in done.stderr, done
