"""The web server: textual-serve's `Server` with a guard in front and one dashboard per tab.

textual-serve (aiohttp) serves a page whose websocket starts one app process per connection
with a fixed shell command. Here:

* a middleware (`WebView._guard`) lets a request in only with the session cookie, or with
  ``?token=`` (then it answers with the cookie and a redirect to the clean URL, so the token
  leaves the address bar and the history); anything else is 401/403 before any handler runs,
  so no app starts and no pane is reached. Failures are logged and slowed (`FailureThrottle`);
* a websocket from another site's page is refused (its Origin is not this host);
* ``GET /open/<credential>`` redeems a push notification's one-time link (`LinkRedeemer`): once,
  unexpired, it sets the cookie and opens the page with a ticket naming the agent; the tab's
  websocket (``/ws/card/<ticket>``) then starts the dashboard with ``--open-card TARGET``.
  The command is built per connection from argv words (`shlex.join`, the target checked
  first), never by pasting text into a shell line.

textual-serve's own `serve()` (it prints a banner, sets up Rich logging and knows no TLS) is
not used: `WebView.run` binds, publishes the endpoint file for push senders, prints the URL and
waits for SIGINT/SIGTERM. What it relies on in textual-serve 1.1: the routes `Server._make_app`
makes (made again in `WebView.web_application`, under a name of ours), the template ``app_index.html`` and its context, and `AppService(command, ...)`'s
``start``/``stop``/``_process``; `tests/web/test_access.py` fails when they move.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
import shlex
import signal
import ssl
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from nbs_tui.core.fleet.card_target import CardTargetError, parse_card_target
from nbs_tui.core.web_links import LinkRedeemer, new_link_key
from nbs_tui.files.web_endpoint import WebEndpoint, endpoint_path, remove_endpoint, write_endpoint
from nbs_tui.housekeeping.logs import state_dir
from nbs_tui.web.access import Bind, FailureThrottle, new_secret, same_secret

log = logging.getLogger(__name__)

COOKIE = "nbs_tui_session"
CARD_TICKET_TTL = 120.0
"""Seconds a redeemed link's ticket waits for its tab's websocket (the page loads in between)."""
APP_STOP_WAIT = 5.0
"""Seconds a tab's dashboard gets to quit when the server stops, before it is killed."""

_REMOTE_STYLESHEET = re.compile(r"<link\s[^>]*href=\"https?://[^>]*>", re.S)

MAX_TARGET = 600
"""Characters of a card target at most (a host name, a server key, a pane id)."""


def card_target(text: str) -> str | None:
    """The link's target as the dashboard's ``--open-card`` takes it (`nbs_tui.core.fleet.card_target`),
    or None when it names no pane (then nothing opens)."""
    if len(text) > MAX_TARGET or not text.isprintable():
        return None
    try:
        return str(parse_card_target(text))
    except CardTargetError:
        return None


@dataclass(frozen=True, slots=True)
class WebSettings:
    bind: Bind
    dashboard_argv: Sequence[str]
    """The command of one tab's dashboard, as words."""
    token: str
    tls: ssl.SSLContext | None = None
    behind_proxy: bool = False
    """A TLS proxy stands in front: the cookie is Secure, the client's address is X-Forwarded-For's."""
    public_url: str | None = None
    """The base URL the operator opens, when it is not this bind's (a proxy, a tunnel)."""
    endpoint_file: Path | None = None
    """Where push senders find this view (default: the state folder's web-endpoint.json)."""


class WebView(Server):
    """One browser view: the guard, the routes, the tabs' dashboards."""

    def __init__(self, settings: WebSettings) -> None:
        self.settings = settings
        super().__init__(shlex.join(settings.dashboard_argv), host=settings.bind.host, port=settings.bind.port, title="nbs-tui")
        self.session = new_secret()
        """The cookie's value: a visitor who showed the token (or a valid link) gets it."""
        self.link_key = new_link_key()
        self.redeemer = LinkRedeemer(self.link_key)
        self.throttle = FailureThrottle()
        self._card_tickets: dict[str, tuple[str, float]] = {}
        """ticket -> (card target, monotonic expiry): a redeemed link waiting for its tab."""
        self._tabs: set[AppService] = set()
        """The running tabs' app services (each a dashboard process), until stopped and reaped."""
        self._stopping: dict[AppService, asyncio.Future[None]] = {}
        self._secure = settings.tls is not None or settings.behind_proxy

    # -- the app -------------------------------------------------------------------------------

    async def web_application(self) -> web.Application:
        """The aiohttp application: the guard in front of every route (textual-serve's own
        `Server._make_app` is not used: `run` serves this one, and a name of ours never shadows
        one of textual-serve's)."""
        app = web.Application(middlewares=[self._guard])
        aiohttp_jinja2.setup(app, loader=jinja2.FunctionLoader(self._template))
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws", self.handle_websocket, name="websocket"),
            web.get("/ws/card/{ticket}", self.handle_websocket, name="card-websocket"),
            web.get("/open/{credential}", self.handle_open, name="open"),
            web.static("/static", self.statics_path, name="static"),
        ])  # fmt: skip
        app.on_shutdown.append(self.on_shutdown)
        return app

    def _template(self, name: str) -> str | None:
        """textual-serve's page without its web font: the page loads nothing from another site
        (that request would tell a third party where and when the operator looks)."""
        try:
            text = (Path(self.templates_path) / name).read_text(encoding="utf-8")
        except OSError:
            return None
        return _REMOTE_STYLESHEET.sub("", text)

    # -- the guard -----------------------------------------------------------------------------

    def _client(self, request: web.Request) -> str:
        if self.settings.behind_proxy:
            forwarded = request.headers.get("X-Forwarded-For", "")
            if forwarded.strip():
                return forwarded.split(",")[-1].strip()  # the proxy's own addition: the one to trust
        return request.remote or "?"

    async def _refuse(self, request: web.Request, status: int, why: str) -> web.Response:
        client = self._client(request)
        count, delay = self.throttle.failed(client)
        log.warning(
            "web: refused %s %s from %s: %s (failure %d from there; answered after %.2f s)",
            request.method, request.path, client, why, count, delay,
        )  # fmt: skip
        if delay:
            await asyncio.sleep(delay)
        text = "nbs-tui: open the URL that 'nbs-tui web' printed (it carries the token)\n"
        if status == 401:
            return web.Response(status=401, text=text, headers={"WWW-Authenticate": 'Cookie realm="nbs-tui"'})
        return web.Response(status=status, text=f"nbs-tui: {why}\n")

    def _with_cookie(self, response: web.StreamResponse) -> web.StreamResponse:
        response.set_cookie(COOKIE, self.session, path="/", httponly=True, samesite="Strict", secure=self._secure)
        return response

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.match_info.route.name == "open":
            return await handler(request)  # the link's credential is its own proof (handle_open)
        token = request.query.get("token")
        if token is not None:
            if not same_secret(token, self.settings.token):
                return await self._refuse(request, 403, "wrong token")
            self.throttle.succeeded(self._client(request))
            log.info("web: a browser at %s showed the token; it now has the session cookie", self._client(request))
            query = {k: v for k, v in request.query.items() if k != "token"}
            clean = request.path + (f"?{urlencode(query)}" if query else "")
            return self._with_cookie(_see_other(clean))
        cookie = request.cookies.get(COOKIE)
        if cookie is None:
            return await self._refuse(request, 401, "no token and no session cookie")
        if not same_secret(cookie, self.session):
            return await self._refuse(request, 403, "a session cookie of another run (open the printed URL again)")
        if request.path.startswith("/ws") and not self._same_origin(request):
            return await self._refuse(request, 403, f"websocket from another site ({request.headers.get('Origin')})")
        return await handler(request)

    def _same_origin(self, request: web.Request) -> bool:
        """A browser names the page that opens a websocket in Origin: it must be one of ours."""
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser (the cookie was still needed)
        hosts = {request.host}
        if self.settings.behind_proxy and request.headers.get("X-Forwarded-Host"):
            hosts.add(request.headers["X-Forwarded-Host"].split(",")[0].strip())
        if self.settings.public_url:
            hosts.add(urlsplit(self.settings.public_url).netloc)
        return urlsplit(origin).netloc in hosts

    # -- the routes ----------------------------------------------------------------------------

    async def handle_open(self, request: web.Request) -> web.StreamResponse:
        """A one-time link: valid once and unexpired, it opens that agent's card in a new tab."""
        claimed = self.redeemer.redeem(request.match_info["credential"], now=time.time())
        if claimed is None:
            return await self._refuse(request, 403, "this link is not valid (used before, expired, or not ours)")
        target = card_target(claimed)
        if target is None:
            return await self._refuse(request, 403, f"this link names no agent ({claimed!r})")
        self._forget_old_tickets()
        ticket = secrets.token_urlsafe(16)
        self._card_tickets[ticket] = (target, time.monotonic() + CARD_TICKET_TTL)
        log.info("web: a one-time link for %s was redeemed by %s", target, self._client(request))
        return self._with_cookie(_see_other(f"/?{urlencode({'card': ticket})}"))

    def _forget_old_tickets(self) -> None:
        now = time.monotonic()
        for old in [t for t, (_, until) in self._card_tickets.items() if until <= now]:
            del self._card_tickets[old]

    def _base_url(self, request: web.Request) -> str:
        """This page's own scheme and host, as the browser reached it (a proxy's, a tunnel's)."""
        if self.settings.public_url:
            return self.settings.public_url.rstrip("/")
        scheme = "https" if self.settings.tls is not None else "http"
        if self.settings.behind_proxy:
            scheme = request.headers.get("X-Forwarded-Proto", "https").split(",")[0].strip() or "https"
        return f"{scheme}://{request.host}"

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        base = self._base_url(request)
        ticket = request.query.get("card", "")
        if ticket in self._card_tickets:
            path = str(request.app.router["card-websocket"].url_for(ticket=ticket))
        else:
            path = str(request.app.router["websocket"].url_for())
        scheme, _, rest = f"{base}{path}".partition(":")
        context = {
            "font_size": 16,
            "app_websocket_url": ("wss:" if scheme == "https" else "ws:") + rest,
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": "nbs-tui"},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.headers["Cache-Control"] = "no-store"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"  # no other site frames the view to steer clicks
        origin = urlsplit(base)
        socket_origin = f"{'wss' if origin.scheme == 'https' else 'ws'}://{origin.netloc}"
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
            f"img-src 'self' data:; connect-src 'self' {socket_origin}; frame-ancestors 'none'; "
            "base-uri 'none'; form-action 'none'"
        )  # the page's own inline script and styles (textual-serve's template), nothing from elsewhere
        return response

    def tab_command(self, card_target: str | None) -> str:
        """The shell command of one tab's dashboard (textual-serve runs it through a shell).

        ``exec``: the shell becomes the dashboard, so the process textual-serve holds (and kills
        when it will not quit) is the dashboard itself, not a shell that would leave it orphaned."""
        words = list(self.settings.dashboard_argv)
        if card_target is not None:
            words += ["--open-card", card_target]
        return "exec " + shlex.join(words)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One tab: its own dashboard process, fed the browser's keys and sizes (textual-serve's
        handler, with the command chosen per connection and the process tracked for the stop)."""
        target: str | None = None
        ticket = request.match_info.get("ticket")
        if ticket is not None:
            self._forget_old_tickets()
            target = self._card_tickets.pop(ticket, (None, 0.0))[0]
        websocket = web.WebSocketResponse(heartbeat=15)
        width = _int(request.query.get("width"), 80)
        height = _int(request.query.get("height"), 24)
        command = self.tab_command(target)
        tab: AppService | None = None

        async def close() -> None:
            await websocket.close()

        try:
            await websocket.prepare(request)
            log.info("web: tab from %s: starting %s (%dx%d)", self._client(request), command, width, height)
            tab = AppService(
                command, write_bytes=websocket.send_bytes, write_str=websocket.send_str, close=close,
                download_manager=self.download_manager,
            )  # fmt: skip
            self._tabs.add(tab)
            await tab.start(width, height)
            await self._relay(websocket, tab)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception:
            log.exception("web: a tab failed")
        finally:
            if tab is not None:
                await self._stop_tab(tab)
        return websocket

    async def _relay(self, websocket: web.WebSocketResponse, tab: AppService) -> None:
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                kind, data = message.json()
            except (ValueError, TypeError):
                continue
            if kind == "stdin" and isinstance(data, str):
                await tab.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                await tab.set_terminal_size(_int(data.get("width"), 80), _int(data.get("height"), 24))
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await tab.blur()
            elif kind == "focus":
                await tab.focus()

    def _stop_tab(self, tab: AppService) -> Awaitable[None]:
        """Stop a tab's dashboard once, however many ask (its websocket's end, the server's stop);
        each asker waits for the same stop, and a cancelled asker does not cut it short."""
        task = self._stopping.get(tab)
        if task is None:
            task = self._stopping[tab] = asyncio.ensure_future(self._stop_tab_now(tab))
        return asyncio.shield(task)

    async def _stop_tab_now(self, tab: AppService) -> None:
        try:
            try:
                await asyncio.wait_for(tab.stop(), APP_STOP_WAIT)
            except Exception as error:  # a stuck or broken tab must not keep the server from stopping
                log.warning("web: a tab's dashboard did not quit (%s): killing it", error or "timeout")
            process = tab._process  # textual-serve keeps it private; the one place we reach in
            if process is not None:
                if process.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
                await process.wait()  # reaped here, while the loop runs
        finally:
            self._tabs.discard(tab)
            self._stopping.pop(tab, None)

    async def on_shutdown(self, app: web.Application) -> None:
        await asyncio.gather(*(self._stop_tab(tab) for tab in list(self._tabs)), return_exceptions=True)

    # -- running -------------------------------------------------------------------------------

    def public_base(self, port: int) -> str:
        if self.settings.public_url:
            return self.settings.public_url.rstrip("/") + "/"
        scheme = "https" if self.settings.tls is not None else "http"
        host = self.settings.bind.host
        if host in ("0.0.0.0", "::", ""):
            import socket

            host = socket.getfqdn()
        return f"{scheme}://{Bind(host, port).url_host()}:{port}/"

    def run(self, announce: Callable[[str], None]) -> int:
        """Serve until SIGINT/SIGTERM; ``announce`` gets the URL to open (with the token)."""
        return asyncio.run(self._serve(announce))

    async def _serve(self, announce: Callable[[str], None]) -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(signum, stop.set)
        runner = web.AppRunner(await self.web_application(), handle_signals=False, access_log=None)
        await runner.setup()
        endpoint_file = self.settings.endpoint_file or endpoint_path(state_dir())
        published = False
        try:
            site = web.TCPSite(runner, self.settings.bind.host, self.settings.bind.port, ssl_context=self.settings.tls)
            try:
                await site.start()
            except OSError as error:
                print(f"nbs-tui: cannot listen on {self.settings.bind.host}:{self.settings.bind.port}: {error.strerror}",
                      file=sys.stderr)  # fmt: skip
                return 1
            port = int(runner.addresses[0][1])
            base = self.public_base(port)
            try:
                write_endpoint(endpoint_file, WebEndpoint(base, os.getpid(), self.link_key))
                published = True
            except OSError as error:
                log.warning("web: push links will not work: cannot write %s: %s", endpoint_file, error)
            log.info("web: serving %s on %s", self.command, base)
            announce(f"{base}?{urlencode({'token': self.settings.token})}")
            await stop.wait()
            log.info("web: stopping")
        finally:
            if published:
                remove_endpoint(endpoint_file, os.getpid())
            await runner.cleanup()
        return 0


def _see_other(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location, "Cache-Control": "no-store"})


def _int(value: object, default: int) -> int:
    try:
        return max(1, min(1000, int(str(value))))
    except ValueError:
        return default
