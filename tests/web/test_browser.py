"""The browser view end to end: a real `nbs-tui web`, a real Chromium, the real Claude Code CLI.

One server and one page serve the whole story (CI time): the printed URL opens the fleet; a
request without the token, with a wrong one, and one-time links that are forged or expired are
refused with nothing typed into the agent (its screen and its API's requests unchanged); then the
agent's permission prompt is answered from the browser with the answer card's keys (``A``, ``y``)
and the agent goes on. A push's one-time link opens that agent's card in a browser without the
cookie, once (the card itself: `tests/app/test_phone_answer_tmux.py`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import libtmux
import pytest
from playwright.sync_api import Browser, BrowserContext, Page

from nbs_tui.core.fleet.web_links import issue_link
from nbs_tui.files.web_endpoint import endpoint_path, read_endpoint
from tests.app.test_actions import screen_text
from tests.realclaude.harness import Bash, ClaudeFleet, Text
from tests.web.webproc import (
    ScreenText,
    WebProcess,
    alive,
    children,
    wait_until,
    web_config,
    web_env,
)

pytestmark = [pytest.mark.realclaude, pytest.mark.slow]


def status_of(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with urlopen(Request(url, headers=headers or {}), timeout=30) as answer:
            return int(answer.status)
    except HTTPError as error:
        return error.code


def menu(screen: str) -> list[str]:
    """The permission prompt's rows, from its question on (what a stray key would change;
    the rows above it may still be redrawn by Claude Code meanwhile)."""
    lines = screen.splitlines()
    start = next(i for i, line in enumerate(lines) if "Do you want to proceed?" in line)
    return [line.rstrip() for line in lines[start:]]


PHONE_UA = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"
)
"""A phone's browser (headless Chromium names itself HeadlessChrome, which the link's page takes
for a preview fetcher: it would then wait for a tap on its button)."""


def open_link(browser: Browser, link: str) -> tuple[BrowserContext, Page, ScreenText]:
    """A push's one-time link, tapped in a browser with no cookie (a phone): its page sends its
    form by itself, and the browser lands on the card's own page."""
    phone = browser.new_context(viewport={"width": 900, "height": 700}, user_agent=PHONE_UA)
    linked = phone.new_page()
    card = ScreenText(linked)
    linked.goto(link)
    linked.wait_for_url("**/card/*/", timeout=30_000)
    return phone, linked, card


@contextmanager
def the_card_alone(browser: Browser, base: str, link: str, *shown: str) -> Iterator[tuple[BrowserContext, Page, ScreenText]]:
    """The link opens that agent's answer card (showing ``shown`` too), and nothing else: the
    dashboard and its websocket are 403 to that browser. After the ``with`` block the same link
    again is 403 (used)."""
    phone, linked, card = open_link(browser, link)
    try:
        assert linked.url.startswith(base + "card/")
        card.wait_for("Esc cancel the prompt")  # the answer card's own footer
        for text in shown:
            card.wait_for(text)
        assert phone.request.get(base).status == 403  # the request API shares the page's cookies
        assert phone.request.get(base + "ws").status == 403
        yield phone, linked, card
        again = linked.goto(link)
        assert again is not None and again.status == 403  # used
    finally:
        phone.close()


def test_answer_a_permission_prompt_from_the_browser(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path, browser: Browser
) -> None:
    agent = claude_fleet.start(
        [Bash("touch answered-from-browser", description="Create a marker file"), Text("Created it from afar.")],
        name="webagent",
    )
    agent.submit("create the marker file")
    agent.wait_for("Do you want to proceed?", timeout=45)
    env = web_env(tmp_path)
    with WebProcess(["-L", str(server.socket_name), "--no-poll", "--config", str(web_config(tmp_path)), "web",
                     "--bind", "127.0.0.1:0"], env=env) as web:  # fmt: skip
        assert web.url.startswith("http://127.0.0.1:") and "?token=" in web.url
        # refused: no token, a wrong token, a forged link, an expired link (nothing starts)
        before_menu, before_requests = menu(agent.screen()), len(agent.api.requests)
        assert status_of(web.base) == 401
        assert status_of(web.base + "ws") == 401
        assert status_of(web.base + "?token=not-the-token") == 403
        assert status_of(web.base, {"Cookie": "nbs_tui_session=forged"}) == 403
        endpoint = read_endpoint(endpoint_path(tmp_path / "state" / "nbs-tui"))
        assert endpoint is not None and endpoint.url == web.base
        target = f"local/L-{server.socket_name}/{agent.pane_id}"
        expired = issue_link(endpoint.link_key, target, now=time.time() - 3600)
        forged = issue_link(b"k" * 32, target, now=time.time())
        assert status_of(web.base + "open/" + expired) == 403
        assert status_of(web.base + "open/" + forged) == 403
        assert status_of(web.base + "open/garbage") == 403

        page = browser.new_page(viewport={"width": 1400, "height": 800})
        screen = ScreenText(page)
        answer = page.goto(web.base + "?token=not-the-token")
        assert answer is not None and answer.status == 403
        assert menu(agent.screen()) == before_menu and len(agent.api.requests) == before_requests
        assert "tab from" not in (tmp_path / "state" / "nbs-tui" / "nbs-tui.log").read_text()

        # the printed URL: the token becomes a cookie and leaves the address bar
        page.goto(web.url)
        assert page.url == web.base
        cookie = next(c for c in page.context.cookies() if c["name"] == "nbs_tui_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and not cookie["secure"]
        screen.wait_for("claude-webagent")
        screen.wait_for("permission")
        assert "tab from" in (tmp_path / "state" / "nbs-tui" / "nbs-tui.log").read_text()  # the check above could fail

        # a push's one-time link, as the sender makes it from the endpoint file: in a browser
        # without the cookie it opens this agent's answer card, once, and nothing else
        link = web.base + "open/" + issue_link(endpoint.link_key, target, now=time.time())
        with the_card_alone(browser, web.base, link, "claude-webagent"):
            pass
        assert menu(agent.screen()) == before_menu and len(agent.api.requests) == before_requests

        page.locator("#terminal").click()
        screen.clear()
        page.keyboard.type("A")
        screen.wait_for("Esc cancel the prompt")  # the answer card's own footer (the mirror shows the prompt too)
        page.keyboard.type("y")
        wait_until(lambda: (agent.workdir / "answered-from-browser").exists(), timeout=45, what="the tool ran")
        agent.wait_for("Created it from afar.", timeout=45)
        page.close()
    actions = [json.loads(line) for line in (tmp_path / "actions.log").read_text().splitlines() if line.startswith("{")]
    assert any(a.get("action") == "answer" for a in actions), actions


def test_https_with_a_self_signed_certificate(
    server: libtmux.Server, session: libtmux.Session, tmp_path: Path, browser: Browser
) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    with WebProcess(["-L", str(server.socket_name), "--config", str(web_config(tmp_path)), "web", "--bind",
                     "127.0.0.1:0", "--cert", str(cert), "--key", str(key)], env=web_env(tmp_path)) as web:  # fmt: skip
        assert web.url.startswith("https://127.0.0.1:")
        context = browser.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 700})
        try:
            page = context.new_page()
            screen = ScreenText(page)
            page.goto(web.url)
            assert page.url == web.base
            cookie = next(c for c in context.cookies() if c["name"] == "__Host-nbs_tui_session")
            assert cookie["secure"] and cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
            screen.wait_for(str(session.name))  # the fleet arrived over wss
            # stopped with a tab open: the tab's dashboard goes with it, the endpoint file too
            tabs = children(web.proc.pid)
            assert tabs and (tmp_path / "state" / "nbs-tui" / "web-endpoint.json").exists()
            assert web.stop() == 0, web.stderr
            wait_until(lambda: not any(alive(pid) for pid in tabs), timeout=20, what="the tab's dashboard gone")
            assert not (tmp_path / "state" / "nbs-tui" / "web-endpoint.json").exists()
        finally:
            context.close()


@pytest.mark.service_auto
def test_two_tabs_are_viewers_of_one_service(
    server: libtmux.Server, session: libtmux.Session, tmp_path: Path, browser: Browser
) -> None:
    """With ``service = "auto"`` (the default), the tabs start the server's sidecar service as a
    terminal dashboard does, and both show it holding the lease: never a second sidecar."""
    env = web_env(tmp_path, {"NBS_SERVICE": "auto"})
    cli = [sys.executable, "-m", "nbs_tui", "-L", str(server.socket_name), "service"]
    try:
        with WebProcess(["-L", str(server.socket_name), "--no-poll", "--config", str(web_config(tmp_path)), "web",
                         "--bind", "127.0.0.1:0"], env=env) as web:  # fmt: skip
            context = browser.new_context(viewport={"width": 1400, "height": 800})
            try:
                pages = [context.new_page() for _ in range(2)]
                screens = [ScreenText(page) for page in pages]
                for page in pages:
                    page.goto(web.url)
                pid_file = tmp_path / "state" / "nbs-tui" / f"service-L-{server.socket_name}.pid"
                wait_until(pid_file.exists, timeout=60, what="the service's pid file")
                service = int(pid_file.read_text().split()[0])
                for screen in screens:
                    screen.wait_for(f"pid {service}", timeout=60)  # the status bar's "sidecar: HOST pid N"
                assert len(children(web.proc.pid)) == 2 and service not in children(web.proc.pid)  # one dashboard a tab
                status = subprocess.run([*cli, "status"], env=env, capture_output=True, text=True, timeout=60, check=False)
                assert "held by" in status.stdout and f"pid {service}" in status.stdout, status.stdout
            finally:
                context.close()
    finally:
        subprocess.run([*cli, "stop"], env=env, capture_output=True, timeout=60, check=False)


def test_a_pushed_link_opens_that_card_alone_and_answers_it(
    server: libtmux.Server, session: libtmux.Session, tmp_path: Path, browser: Browser
) -> None:
    """The whole chain: the dashboard of an open tab (it holds the lease: no service here) pushes
    the agent's needs-input to a local receiver standing in for ntfy; the link in that push, in a
    browser with no cookie, opens that agent's card and answers it; the dashboard, its websocket
    and another agent's card are 403 there, and the link is 403 the second time. A forged Host
    is refused (421), the printed URL's token or not."""
    from tests.app.test_actions import demo_agent
    from tests.push_receiver import PushReceiver

    pane = demo_agent(session, tmp_path, "idle", "worker")
    with PushReceiver() as receiver:
        config = web_config(tmp_path)
        config.write_text(config.read_text() + f'notify_urls = ["{receiver.url}"]\n')
        env = web_env(tmp_path, {"NBS_POLL_DISABLE": "1"})
        with WebProcess(["-L", str(server.socket_name), "--config", str(config), "web", "--bind", "127.0.0.1:0"],
                        env=env) as web:  # fmt: skip
            assert status_of(web.url, {"Host": "evil.example"}) == 421  # a forged Host: even with the token
            assert status_of(web.url, {"Host": f"rebound.example:{web.base.rsplit(':', 1)[1].strip('/')}"}) == 421
            page = browser.new_page(viewport={"width": 1400, "height": 800})
            shown = ScreenText(page)
            page.goto(web.url)
            shown.wait_for("worker")  # the tab's dashboard watches the agent
            shown.wait_for("idle")  # and has read it idle: what follows is a change, worth a push
            server.cmd("send-keys", "-t", pane, "-l", "run the tests")
            server.cmd("send-keys", "-t", pane, "Enter")
            wait_until(lambda: bool(receiver.pushes()), timeout=40, what="the needs-input push")
            (asked,) = receiver.pushes()
            assert "needs input" in asked["title"], asked
            link = asked["message"].splitlines()[-1]
            assert link.startswith(web.base + "open/"), asked
            page.close()
            endpoint = read_endpoint(endpoint_path(tmp_path / "state" / "nbs-tui"))
            assert endpoint is not None
            other_link = web.base + "open/" + issue_link(endpoint.link_key, f"local/L-{server.socket_name}/%999", now=time.time())
            with the_card_alone(browser, web.base, link, "worker") as (phone, linked, card):
                other_phone, other_page, _ = open_link(browser, other_link)
                other_card = other_page.url
                other_phone.close()
                assert phone.request.get(other_card).status == 403  # another agent's card
                assert "Do you want to proceed?" in screen_text(session, pane)
                linked.locator("#terminal").click()
                linked.keyboard.type("1")
                card.wait_for("The card is closed.")  # the card-only dashboard answered, and closes
                wait_until(lambda: "Do you want to proceed?" not in screen_text(session, pane), timeout=30,
                           what="the agent past its menu")  # fmt: skip
    actions = [json.loads(line) for line in (tmp_path / "actions.log").read_text().splitlines() if line.startswith("{")]
    assert [a.get("action") for a in actions if a.get("action") == "answer"] == ["answer"], actions
