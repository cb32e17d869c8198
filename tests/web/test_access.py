"""Who gets into the browser view, at the HTTP level (aiohttp's test client, in process), and
the command's refusals (real processes): the token and its session cookie (rotation, lifetime,
logout, ``__Host-``), the Host allow-list and the proxy's last hop, websockets as real
upgrades, the slowdown of repeated failures, one-time links (a preview leaves them unused; a
redeemed one opens its card and nothing else), the token file, a bind beyond loopback.

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
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import libtmux
import pytest
from aiohttp import ClientWebSocketResponse, DummyCookieJar, WSMsgType, WSServerHandshakeError, web
from aiohttp.test_utils import TestClient, TestServer

from nbs_tui.core.fleet.web_links import issue_link
from nbs_tui.web.access import (
    MAX_ADDRESSES,
    AccessError,
    Bind,
    FailureThrottle,
    Grants,
    address_name,
    allowed_host,
    check_exposure,
    host_name,
    last_hop,
    load_token,
    parse_bind,
)
from nbs_tui.web.server import CARD_COOKIE_PREFIX, SESSION_COOKIE, WebSettings, WebView
from tests.web.webproc import REPO

TOKEN = "t" * 43
TARGET = "local/L-work/%12"
Client = TestClient[web.Request, web.Application]
BROWSER = {
    "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Sec-Fetch-Site": "none",
    "User-Agent": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0 Mobile Safari/537.36",
}  # fmt: skip
"""What a phone's browser sends when its person taps a link."""


def recorder(out: Path, *, stay: bool = False) -> list[str]:
    """A 'dashboard' that writes its arguments to ``out`` and ends (``stay``: then waits a minute,
    a tab that stays open until closed from outside)."""
    script = "import pathlib, sys, time; pathlib.Path(sys.argv[1]).write_text(chr(10).join(sys.argv[2:]))"
    return [sys.executable, "-c", script + ("; time.sleep(60)" if stay else ""), str(out)]


@asynccontextmanager
async def serving(tmp_path: Path, *, stay: bool = False, **settings: Any) -> AsyncIterator[tuple[WebView, Client]]:
    """A `WebView` behind aiohttp's test client; no cookie jar (every cookie a test sends, it names)."""
    web_view = WebView(
        WebSettings(
            bind=Bind("127.0.0.1", 0), dashboard_argv=recorder(tmp_path / "started", stay=stay), token=TOKEN,
            **settings,
        )
    )  # fmt: skip
    client: Client = TestClient(TestServer(await web_view.web_application()), cookie_jar=DummyCookieJar())
    await client.start_server()
    try:
        yield web_view, client
    finally:
        await client.close()


@pytest.fixture
async def view(tmp_path: Path) -> AsyncIterator[tuple[WebView, Client]]:
    async with serving(tmp_path) as served:
        yield served


async def eventually(condition: Callable[[], object], what: str, timeout: float = 20.0) -> None:
    """Wait on this loop (the server runs on it too) until ``condition``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def closed_by_the_server(socket: ClientWebSocketResponse, timeout: float = 20.0) -> None:
    """Read ``socket`` until the server closes it (a client sees the close only as it reads)."""
    async with asyncio.timeout(timeout):
        while (await socket.receive()).type not in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED):
            pass


async def session_cookie(client: Client, *, cookie: str = "") -> str:
    """Show the token (with ``cookie``, as a browser that had one would): the new session's cookie value."""
    answer = await client.get(f"/?token={TOKEN}", allow_redirects=False, headers={"Cookie": cookie} if cookie else {})
    assert answer.status == 303, answer
    return answer.cookies[SESSION_COOKIE].value


def with_session(value: str, **more: str) -> dict[str, str]:
    return {"Cookie": f"{SESSION_COOKIE}={value}", **more}


async def refused_upgrade(client: Client, path: str, headers: dict[str, str]) -> int:
    """A real websocket upgrade that must be refused: its HTTP status."""
    with pytest.raises(WSServerHandshakeError) as refused:
        socket = await client.ws_connect(path, headers=headers)
        await socket.close()
    return refused.value.status


async def redeem(client: Client, link: str, **headers: str) -> tuple[str, dict[str, str]]:
    """Send a link's form, as its page does: (the card page's path, the Cookie header it gives)."""
    answer = await client.post(f"/open/{link}", allow_redirects=False, headers=headers)
    assert answer.status == 303, await answer.text()
    location = answer.headers["Location"]
    ((name, morsel),) = answer.cookies.items()
    return location, {"Cookie": f"{name}={morsel.value}"}


# -- the session ---------------------------------------------------------------------------------


async def test_the_token_becomes_a_strict_http_only_cookie_with_a_lifetime(tmp_path: Path) -> None:
    async with serving(tmp_path, session_ttl=7200.0) as (_, client):
        answer = await client.get(f"/?token={TOKEN}&fontsize=14", allow_redirects=False)
        assert answer.status == 303
        assert answer.headers["Location"] == "/?fontsize=14"  # the token leaves the address bar
        set_cookie = answer.headers["Set-Cookie"]
        value = answer.cookies[SESSION_COOKIE].value
        assert set_cookie.startswith(f"{SESSION_COOKIE}={value};") and TOKEN not in set_cookie
        flags = {part.strip().lower() for part in set_cookie.split(";")}
        assert {"httponly", "samesite=strict", "path=/"} <= flags and "secure" not in flags
        assert "max-age=7200" in flags  # web_session_ttl
        page = await client.get("/", headers=with_session(value))
        assert page.status == 200 and "/ws" in await page.text()
        assert page.headers["X-Frame-Options"] == "DENY" and page.headers["Referrer-Policy"] == "no-referrer"
        assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
        assert "https://" not in await page.text()  # textual-serve's web font left out: nothing from another site


async def test_under_tls_the_cookie_is_host_prefixed_and_secure(tmp_path: Path) -> None:
    async with serving(tmp_path, behind_proxy=True) as (_, client):  # a TLS proxy in front: the browser sees https
        answer = await client.get(f"/?token={TOKEN}", allow_redirects=False)
        set_cookie = answer.headers["Set-Cookie"]
        assert set_cookie.startswith(f"__Host-{SESSION_COOKIE}=")
        flags = {part.strip().lower() for part in set_cookie.split(";")}
        assert {"secure", "path=/", "httponly"} <= flags and not any(f.startswith("domain") for f in flags)
        value = answer.cookies[f"__Host-{SESSION_COOKIE}"].value
        assert (await client.get("/", headers={"Cookie": f"__Host-{SESSION_COOKIE}={value}"})).status == 200
        assert (await client.get("/", headers=with_session(value))).status == 401  # the unprefixed name is not it


async def test_showing_the_token_again_rotates_the_session(view: tuple[WebView, Client]) -> None:
    _, client = view
    first = await session_cookie(client)
    second = await session_cookie(client, cookie=f"{SESSION_COOKIE}={first}")
    assert second != first
    assert (await client.get("/", headers=with_session(first))).status == 403  # the old cookie opens nothing now
    assert (await client.get("/", headers=with_session(second))).status == 200
    other_browser = await session_cookie(client)  # another browser's session is its own
    assert (await client.get("/", headers=with_session(second))).status == 200
    assert (await client.get("/", headers=with_session(other_browser))).status == 200


async def test_logout_ends_the_session_and_closes_its_tabs(tmp_path: Path) -> None:
    async with serving(tmp_path, stay=True) as (web_view, client):
        value = await session_cookie(client)
        kept = await session_cookie(client)
        socket = await client.ws_connect("/ws", headers=with_session(value))
        kept_socket = await client.ws_connect("/ws", headers=with_session(kept))
        await eventually(lambda: len(web_view._tabs) == 2, "both tabs started")
        answer = await client.post("/logout", headers=with_session(value))
        assert answer.status == 200 and "logged out" in await answer.text()
        set_cookie = answer.headers["Set-Cookie"].lower()
        assert set_cookie.startswith(f"{SESSION_COOKIE}=\"\";") and "max-age=0" in set_cookie
        await closed_by_the_server(socket)  # the logged-out session's tab
        assert (await client.get("/", headers=with_session(value))).status == 403
        assert (await client.get("/logout", headers=with_session(value))).status == 403
        await eventually(lambda: len(web_view._tabs) == 1, "the logged-out tab stopped, the other kept")
        assert (await client.get("/", headers=with_session(kept))).status == 200
        await kept_socket.close()
        await eventually(lambda: not web_view._tabs, "the tabs stopped")


async def test_a_session_lapses_and_its_tab_closes(tmp_path: Path) -> None:
    async with serving(tmp_path, stay=True, session_ttl=1.5) as (web_view, client):
        value = await session_cookie(client)
        socket = await client.ws_connect("/ws", headers=with_session(value))
        await eventually(lambda: (tmp_path / "started").exists(), "the tab started")
        assert (await client.get("/", headers=with_session(value))).status == 200
        await closed_by_the_server(socket, timeout=10)  # the lapsed session's tab
        assert (await client.get("/", headers=with_session(value))).status == 403
        await eventually(lambda: not web_view._tabs, "the tab stopped")


async def test_no_token_wrong_token_and_a_stale_cookie_are_refused(view: tuple[WebView, Client], tmp_path: Path) -> None:
    web_view, client = view
    assert (await client.get("/")).status == 401
    assert (await client.get("/static/js/textual.js")).status == 401
    assert (await client.get("/?token=wrong")).status == 403
    assert (await client.get("/", headers=with_session("old-run"))).status == 403
    assert (await client.get("/logout")).status == 401
    assert (await client.get("/favicon.ico")).status == 404  # asked by every page: no failure counted
    assert web_view.throttle.failed("127.0.0.1")[0] == 6  # the five refusals above, and this one
    assert not (tmp_path / "started").exists()


# -- websockets, as websockets -------------------------------------------------------------------


async def test_websockets_without_the_right_credential_start_no_dashboard(
    view: tuple[WebView, Client], tmp_path: Path
) -> None:
    web_view, client = view
    value = await session_cookie(client)
    own = f"http://{client.host}:{client.port}"
    _, card = await redeem(client, issue_link(web_view.link_key, TARGET, now=time.time()))
    assert await refused_upgrade(client, "/ws", {}) == 401  # no cookie
    assert await refused_upgrade(client, "/ws", with_session("a-cookie-of-another-run")) == 403
    assert await refused_upgrade(client, "/ws", {**card, "Origin": own}) == 403  # a card's grant is not the dashboard
    assert await refused_upgrade(client, "/ws", with_session(value, Origin="https://evil.example")) == 403
    other_port = f"http://{client.host}:{(client.port or 0) + 1}"  # cookies ignore ports: only Origin tells
    assert await refused_upgrade(client, "/ws", with_session(value, Origin=other_port)) == 403
    await asyncio.sleep(0.5)
    assert not (tmp_path / "started").exists() and not web_view._tabs
    # the control: the same upgrade with the session and this view's own Origin starts the dashboard
    socket = await client.ws_connect("/ws?width=90&height=30", headers=with_session(value, Origin=own))
    await eventually(lambda: (tmp_path / "started").exists(), "the dashboard started")
    await socket.close()
    assert (tmp_path / "started").read_text() == ""  # the full dashboard: no --open-card, no --card-only
    await eventually(lambda: not web_view._tabs, "the tab stopped")


# -- the host ------------------------------------------------------------------------------------


async def test_a_forged_host_is_refused_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="nbs_tui.web.server")
    async with serving(tmp_path, public_url="https://nbs.example.org/") as (web_view, client):
        value = await session_cookie(client)
        port = client.port
        for host in ["evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "nbs.example.org.evil"]:
            answer = await client.get("/", headers=with_session(value, Host=host))
            assert answer.status == 421, host
        assert (await client.get(f"/?token={TOKEN}", headers={"Host": "evil.example"}, allow_redirects=False)).status == 421
        link = issue_link(web_view.link_key, TARGET, now=time.time())
        assert (await client.get(f"/open/{link}", headers={"Host": "evil.example"})).status == 421
        assert await refused_upgrade(client, "/ws", with_session(value, Host="evil.example")) == 421
        said = [r.getMessage() for r in caplog.records]
        assert any("a request for another host ('evil.example')" in line for line in said), said
        for host in [f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", "nbs.example.org", "nbs.example.org."]:
            assert (await client.get("/", headers=with_session(value, Host=host))).status == 200, host
        assert not (tmp_path / "started").exists()


async def test_behind_a_proxy_only_its_last_forwarded_hop_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="nbs_tui.web.server")
    async with serving(tmp_path, behind_proxy=True, public_url="https://nbs.example.org/") as (_, client):
        cookie = f"__Host-{SESSION_COOKIE}"
        answer = await client.get(f"/?token={TOKEN}", allow_redirects=False, headers={"X-Forwarded-For": "6.6.6.6, 10.0.0.7"})
        value = answer.cookies[cookie].value
        assert "a browser at 10.0.0.7 showed the token" in caplog.text  # the proxy's entry, not the client's
        session = {"Cookie": f"{cookie}={value}"}
        # the client wrote the first X-Forwarded-Host; the proxy appended the one it was asked for
        spoofed = {**session, "X-Forwarded-Host": "nbs.example.org, evil.example"}
        assert (await client.get("/", headers=spoofed)).status == 421
        proxied = {**session, "X-Forwarded-Host": "evil.example, nbs.example.org", "X-Forwarded-Proto": "http, https"}
        assert (await client.get("/", headers=proxied)).status == 200
        own = {**session, "X-Forwarded-Host": "nbs.example.org"}
        assert await refused_upgrade(client, "/ws", {**own, "Origin": "https://nbs.example.org:8443"}) == 403
        caplog.clear()
        await client.get("/", headers={"X-Forwarded-For": "6.6.6.6, 10.0.0.9"})
        assert "from 10.0.0.9: no token" in caplog.text


def test_host_names_and_last_hops() -> None:
    assert host_name("[::1]:8421") == "::1" and host_name("::1") == "::1" and host_name("Box.Example.:443") == "box.example"
    allowed = frozenset({"localhost", "127.0.0.1"})
    assert allowed_host("localhost:1", allowed) and allowed_host("127.0.0.1", allowed)
    assert not allowed_host(None, allowed) and not allowed_host("", allowed) and not allowed_host("localhost.evil", allowed)
    assert address_name("::ffff:192.0.2.5") == "192.0.2.5" and address_name("::1") == "::1"
    assert address_name("fe80::1%eth0") == "fe80::1" and address_name("127.0.0.1") == "127.0.0.1"
    assert last_hop("a, b ,c ") == "c" and last_hop("a,") is None and last_hop(None) is None


def test_grants_lapse_are_revoked_and_are_found_by_their_secret_alone() -> None:
    now = [0.0]
    grants = Grants(clock=lambda: now[0])
    session, card = grants.issue(None, 10.0), grants.issue(TARGET, 5.0)
    assert grants.find(session.secret) == session and grants.find(card.secret) == card
    assert grants.find(card.handle) is None and grants.find("") is None and grants.find(None) is None
    assert session.secret not in repr(session)  # a log line of a grant never holds its secret
    now[0] = 5.0
    assert grants.find(card.secret) is None and grants.remaining(session) == 5.0
    grants.revoke(session)
    assert grants.find(session.secret) is None
    with pytest.raises(ValueError):
        grants.issue(None, 0)


# -- repeated failures ---------------------------------------------------------------------------


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


# -- one-time links ------------------------------------------------------------------------------


async def test_a_link_preview_does_not_use_the_link_up(view: tuple[WebView, Client], tmp_path: Path) -> None:
    web_view, client = view
    link = issue_link(web_view.link_key, TARGET, now=time.time())
    preview_fetches = [
        {},  # a plain GET: no fetch metadata at all
        {"User-Agent": "TelegramBot (like TwitterBot)"},
        {**BROWSER, "User-Agent": "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)"},
        {**BROWSER, "User-Agent": "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"},
        {"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image", "User-Agent": BROWSER["User-Agent"]},
    ]
    for headers in preview_fetches:
        page = await client.get(f"/open/{link}", headers=headers)
        text = await page.text()
        assert page.status == 200 and '<form method="post">' in text and TARGET in text, headers
        assert "<script" not in text and "Set-Cookie" not in page.headers, headers  # inert: nothing sends the form
    # a person's browser: the same page, and its script sends the form (allowed by the page's own nonce)
    page = await client.get(f"/open/{link}", headers=BROWSER)
    text = await page.text()
    nonce = text.split('<script nonce="', 1)[1].split('"', 1)[0]
    assert "document.forms[0].submit()" in text and f"script-src 'nonce-{nonce}'" in page.headers["Content-Security-Policy"]
    assert "Set-Cookie" not in page.headers and page.headers["Cache-Control"] == "no-store"
    assert page.headers["Referrer-Policy"] == "same-origin"  # no-referrer would make its form's Origin "null"
    location, _ = await redeem(client, link, Origin=f"http://{client.host}:{client.port}")  # still unused: it redeems
    assert location.startswith("/card/")
    assert (await client.get(f"/open/{link}")).status == 403  # now used: even its page is refused
    assert not (tmp_path / "started").exists()


async def test_a_redeemed_link_opens_its_card_and_nothing_else(view: tuple[WebView, Client], tmp_path: Path) -> None:
    web_view, client = view
    link = issue_link(web_view.link_key, TARGET, now=time.time())
    answer = await client.post(f"/open/{link}", allow_redirects=False, headers={"Origin": "https://evil.example"})
    assert answer.status == 403  # another site's page cannot send it
    answer = await client.post(f"/open/{link}", allow_redirects=False)
    assert answer.status == 303 and answer.headers["Location"].startswith("/card/")
    location = answer.headers["Location"]
    handle = location.split("/")[2]
    set_cookie = answer.headers["Set-Cookie"]
    assert set_cookie.startswith(f"{CARD_COOKIE_PREFIX}{handle}=")
    flags = {part.strip().lower() for part in set_cookie.split(";")}
    assert {"httponly", "samesite=strict", "path=/", f"max-age={int(web_view.settings.card_ttl)}"} <= flags
    card = {"Cookie": set_cookie.split(";", 1)[0]}
    page = await client.get(location, headers=card)
    assert page.status == 200 and f"/card/{handle}/ws" in await page.text()
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert (await client.get("/static/js/textual.js", headers=card)).status == 200  # the page's own script
    # nothing else: the dashboard, its websocket, another card, the link again
    assert (await client.get("/", headers=card)).status == 403
    assert await refused_upgrade(client, "/ws", card) == 403
    other = issue_link(web_view.link_key, "local/L-work/%13", now=time.time())
    other_location, other_card = await redeem(client, other)
    assert (await client.get(other_location, headers=card)).status == 403
    assert (await client.get(location, headers=other_card)).status == 403
    assert await refused_upgrade(client, f"{other_location}ws", card) == 403
    assert (await client.get(location)).status == 403  # no cookie
    assert (await client.get(f"/open/{link}")).status == 403
    assert (await client.post(f"/open/{link}", allow_redirects=False)).status == 403
    expired = issue_link(web_view.link_key, TARGET, now=time.time() - 3600)
    assert (await client.get(f"/open/{expired}")).status == 403
    assert not (tmp_path / "started").exists()
    # its websocket starts the card-only dashboard for that target, and the card's end ends the grant
    socket = await client.ws_connect(f"{location}ws?width=50&height=30", headers=card)
    await eventually(lambda: (tmp_path / "started").exists(), "the card's dashboard started")
    await socket.close()
    await eventually(lambda: not web_view._tabs, "the tab stopped and reaped")
    assert (tmp_path / "started").read_text().splitlines() == ["--open-card", TARGET, "--card-only"]
    assert (await client.get(location, headers=card)).status == 403  # the card closed: its link opens nothing more
    assert await refused_upgrade(client, f"{location}ws", card) == 403


async def test_a_review_link_opens_that_agents_review_alone(view: tuple[WebView, Client], tmp_path: Path) -> None:
    """A push after a turn that changed files (issue 38): its link's grant starts the dashboard as
    ``--open-review TARGET --card-only``, once, and opens nothing else (the card's rules)."""
    web_view, client = view
    link = issue_link(web_view.link_key, f"review:{TARGET}", now=time.time())
    page = await client.get(f"/open/{link}")
    assert page.status == 200 and f"the review of <b>{TARGET}</b>" in await page.text()
    location, grant = await redeem(client, link)
    assert (await client.get("/", headers=grant)).status == 403
    assert (await client.post(f"/open/{link}", allow_redirects=False)).status == 403  # once
    socket = await client.ws_connect(f"{location}ws?width=50&height=30", headers=grant)
    await eventually(lambda: (tmp_path / "started").exists(), "the review's dashboard started")
    await socket.close()
    await eventually(lambda: not web_view._tabs, "the tab stopped and reaped")
    assert (tmp_path / "started").read_text().splitlines() == ["--open-review", TARGET, "--card-only"]
    assert (await client.get(location, headers=grant)).status == 403  # the review closed: its grant ended
    for odd in ("review:local/default", "review:local/default/%3; id", "reviews:local/default/%3"):
        assert (await client.get(f"/open/{issue_link(web_view.link_key, odd, now=time.time())}")).status == 403, odd


async def test_a_card_is_open_in_one_tab_and_lapses_with_its_ttl(tmp_path: Path) -> None:
    async with serving(tmp_path, stay=True, card_ttl=1.5) as (web_view, client):
        location, card = await redeem(client, issue_link(web_view.link_key, TARGET, now=time.time()))
        socket = await client.ws_connect(f"{location}ws", headers=card)
        await eventually(lambda: (tmp_path / "started").exists(), "the card's dashboard started")
        assert await refused_upgrade(client, f"{location}ws", card) == 403  # a second tab of the same card
        await closed_by_the_server(socket, timeout=10)  # the lapsed card's tab
        await eventually(lambda: not web_view._tabs, "the tab stopped")
        assert (await client.get(location, headers=card)).status == 403


async def test_a_link_naming_no_pane_opens_nothing(view: tuple[WebView, Client], tmp_path: Path) -> None:
    web_view, client = view
    for target in ["local/default/%3; touch /tmp/x", "local/default/$(id)", "local/default", "a b/default/%1"]:
        link = issue_link(web_view.link_key, target, now=time.time())
        assert (await client.get(f"/open/{link}", headers=BROWSER)).status == 403, target
        assert (await client.post(f"/open/{link}", allow_redirects=False)).status == 403, target
    # a host name may hold shell characters: it reaches the dashboard as one word, never as shell
    odd = "box;touch${IFS}x'$(id)/default/%3"
    assert shlex.split(web_view.tab_command(odd))[-3:] == ["--open-card", odd, "--card-only"]
    assert shlex.split(web_view.tab_command(odd))[0] == "exec"
    assert not (tmp_path / "started").exists()


# -- the token file ------------------------------------------------------------------------------


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


def test_token_file_edge_cases(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_text("s3cret-token-of-the-operator-xyz\n")
    real.chmod(0o600)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(AccessError, match="is a symbolic link"):
        load_token(link)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    started = time.monotonic()
    with pytest.raises(AccessError, match="is not a regular file"):
        load_token(fifo)  # refused at once: no writer is waited for
    assert time.monotonic() - started < 5
    folder = tmp_path / "folder"
    folder.mkdir(mode=0o700)
    with pytest.raises(AccessError, match="is not a regular file"):
        load_token(folder)
    spaced = tmp_path / "spaced"
    spaced.write_text("s3cret-token-of the-operator-xyz\n")
    spaced.chmod(0o600)
    with pytest.raises(AccessError, match="one word"):
        load_token(spaced)
    if os.getuid() == 0:  # root here: a file of another user is one chown away
        foreign = tmp_path / "foreign"
        foreign.write_text("s3cret-token-of-the-operator-xyz\n")
        foreign.chmod(0o600)
        os.chown(foreign, 65534, 65534)
    else:  # not root: a file root owns
        foreign = Path("/etc/passwd")
    with pytest.raises(AccessError, match="belongs to another user"):
        load_token(foreign)


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
