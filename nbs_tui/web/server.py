"""The web server: textual-serve's `Server` with a guard in front and one dashboard per tab.

textual-serve (aiohttp) serves a page whose websocket starts one app process per connection
with a fixed shell command. Here a middleware (`WebView._guard`) stands before every route:

* a request must name this view's own host (`allowed_host`: the address it arrived on,
  ``localhost``, the bind's name, ``--public-url``'s host), else 421: a page that DNS
  rebinding points here is not answered;
* the full dashboard (``/``, its websocket ``/ws``, the page's ``/static``) needs a session
  (a `Grant` with no card): ``?token=`` gives one (a cookie, and a redirect to the clean URL, so
  the token leaves the address bar and the history); each showing of the token gives a new one
  and ends the one whose cookie came along; ``/logout`` ends it and closes its tabs; it lapses
  after ``web_session_ttl`` hours;
* a push's one-time link (``GET /open/<credential>``) is a page that redeems nothing: its own
  form POSTs the credential back (its script sends it at once when a browser navigated there),
  and only that redeems it (`LinkRedeemer`), so a link preview's GET leaves it unused.
  Redeeming gives a card grant: a cookie for ``/card/<handle>/`` alone, whose websocket starts
  the dashboard as ``--open-card TARGET --card-only`` (that agent's card and nothing else; a
  review's link, ``review:TARGET``, as ``--open-review TARGET --card-only``: its review alone). It
  ends when that tab ends (the card closed) or after ``web_link_ttl`` minutes, whichever first;
* anything else is 401/403 before any handler runs, so no app starts and no pane is reached.
  Failures are logged and slowed (`FailureThrottle`); a websocket from another origin (another
  site, or this host on another port) is refused.

The command is built per connection from argv words (`shlex.join`, the target checked first),
never by pasting text into a shell line.

textual-serve's own `serve()` (it prints a banner, sets up Rich logging and knows no TLS) is
not used: `WebView.run` binds, publishes the endpoint file for push senders, prints the URL and
waits for SIGINT/SIGTERM. What it relies on in textual-serve 1.1: the routes `Server._make_app`
makes (made again in `WebView.web_application`, under a name of ours), the template
``app_index.html`` and its context, and `AppService(command, ...)`'s ``start``/``stop``/
``_process``; `tests/web/test_access.py` fails when they move.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import os
import re
import secrets
import shlex
import signal
import socket
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

from nbs_tui.core.fleet.card_target import REVIEW_PREFIX, CardTargetError, split_link_target
from nbs_tui.core.fleet.web_links import DEFAULT_LINK_TTL, LinkRedeemer, new_link_key
from nbs_tui.files.web_endpoint import WebEndpoint, endpoint_path, remove_endpoint, write_endpoint
from nbs_tui.housekeeping.logs import state_dir
from nbs_tui.web.access import (
    Bind,
    FailureThrottle,
    Grant,
    Grants,
    address_name,
    allowed_host,
    host_name,
    last_hop,
    same_secret,
)

log = logging.getLogger(__name__)

SESSION_COOKIE = "nbs_tui_session"
"""The session's cookie (``__Host-`` before it under TLS or behind a proxy)."""
CARD_COOKIE_PREFIX = "nbs_tui_card_"
"""A card grant's cookie: this and the grant's handle (one cookie per card opened)."""
DEFAULT_SESSION_TTL = 12 * 3600.0
"""Seconds a session lasts (``web_session_ttl`` in hours overrides it)."""
GRANT = web.RequestKey("grant", Grant)
"""What the guard let the request in with (the handlers read it)."""
WILDCARDS = frozenset({"", "0.0.0.0", "::"})
NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
"""Every page: kept in no cache, names no referrer, framed by no other site (to steer clicks)."""
APP_STOP_WAIT = 5.0
"""Seconds a tab's dashboard gets to quit when the server stops, before it is killed."""

_REMOTE_STYLESHEET = re.compile(r"<link\s[^>]*href=\"https?://[^>]*>", re.S)

MAX_TARGET = 600
"""Characters of a card target at most (a host name, a server key, a pane id)."""


def card_target(text: str) -> str | None:
    """The link's target as the dashboard's ``--open-card`` takes it (`nbs_tui.core.fleet.card_target`),
    ``review:`` before it for a review's link, or None when it names no pane (then nothing opens)."""
    if len(text) > MAX_TARGET or not text.isprintable():
        return None
    try:
        review, target = split_link_target(text)
    except CardTargetError:
        return None
    return f"{REVIEW_PREFIX if review else ''}{target}"


@dataclass(frozen=True, slots=True)
class WebSettings:
    bind: Bind
    dashboard_argv: Sequence[str]
    """The command of one tab's dashboard, as words."""
    token: str
    tls: ssl.SSLContext | None = None
    behind_proxy: bool = False
    """A TLS proxy stands in front: the cookie is Secure, and the proxy's own (last)
    X-Forwarded-For/-Proto/-Host entries are believed."""
    public_url: str | None = None
    """The base URL the operator opens, when it is not this bind's (a proxy, a tunnel)."""
    endpoint_file: Path | None = None
    """Where push senders find this view (default: the state folder's web-endpoint.json)."""
    session_ttl: float = DEFAULT_SESSION_TTL
    """Seconds a session (the token's cookie) lasts (``web_session_ttl`` hours)."""
    card_ttl: float = DEFAULT_LINK_TTL
    """Seconds a redeemed link's card grant lasts at most (``web_link_ttl`` minutes)."""


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class WebView(Server):
    """One browser view: the guard, the routes, the tabs' dashboards."""

    def __init__(self, settings: WebSettings) -> None:
        self.settings = settings
        super().__init__(shlex.join(settings.dashboard_argv), host=settings.bind.host, port=settings.bind.port, title="nbs-tui")
        self.grants = Grants()
        """The sessions and card grants alive (each a cookie's value and what it opens)."""
        self.link_key = new_link_key()
        self.redeemer = LinkRedeemer(self.link_key)
        self.throttle = FailureThrottle()
        self._tabs: set[AppService] = set()
        """The running tabs' app services (each a dashboard process), until stopped and reaped."""
        self._sockets: dict[str, set[web.WebSocketResponse]] = {}
        """grant handle -> the websockets of its open tabs (closed when the grant ends)."""
        self._stopping: dict[AppService, asyncio.Future[None]] = {}
        self._secure = settings.tls is not None or settings.behind_proxy
        prefix = "__Host-" if self._secure else ""  # Secure, Path=/, no Domain: no subdomain can set or shadow it
        self.session_cookie = prefix + SESSION_COOKIE
        self.card_cookie_prefix = prefix + CARD_COOKIE_PREFIX
        self._own_names = frozenset(self._names())

    def _names(self) -> set[str]:
        """This view's own host names, besides the address a request arrived on."""
        names = {"localhost"}
        if self.settings.bind.host not in WILDCARDS:
            names.add(host_name(self.settings.bind.host))
        else:
            names.add(host_name(socket.getfqdn()))  # what the printed URL names
        if self.settings.public_url:
            names.add(host_name(urlsplit(self.settings.public_url).netloc))
        return names

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
            web.route("*", "/logout", self.handle_logout, name="logout"),
            web.get("/open/{credential}", self.handle_link_page, name="open"),
            web.post("/open/{credential}", self.handle_redeem, name="redeem"),
            web.get("/card/{handle}/", self.handle_card_page, name="card"),
            web.get("/card/{handle}/ws", self.handle_websocket, name="card-websocket"),
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

    def _forwarded(self, request: web.Request, header: str) -> str | None:
        """Behind the proxy, its own (last) entry of an ``X-Forwarded-*`` header; else None."""
        return last_hop(request.headers.get(header)) if self.settings.behind_proxy else None

    def _client(self, request: web.Request) -> str:
        return self._forwarded(request, "X-Forwarded-For") or request.remote or "?"

    def _host(self, request: web.Request) -> str:
        """The host the browser asked for (the proxy's word for it, behind one)."""
        return self._forwarded(request, "X-Forwarded-Host") or request.headers.get("Host") or ""

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

    def _give_cookie(self, response: web.StreamResponse, name: str, grant: Grant) -> web.StreamResponse:
        response.set_cookie(
            name, grant.secret, path="/", httponly=True, samesite="Strict", secure=self._secure,
            max_age=max(1, round(self.grants.remaining(grant))),
        )  # fmt: skip
        return response

    def _address_of(self, request: web.Request) -> str | None:
        """The local address the request arrived on (the bound one, for a wildcard bind)."""
        transport = request.transport
        sockname = transport.get_extra_info("sockname") if transport is not None else None
        return str(sockname[0]) if isinstance(sockname, tuple) and sockname else None

    def _our_host(self, request: web.Request) -> bool:
        names = self._own_names
        address = self._address_of(request)
        if address is not None:
            names = names | {address_name(address)}
        hosts = [request.headers.get("Host")]
        if self.settings.behind_proxy and "X-Forwarded-Host" in request.headers:
            hosts.append(self._forwarded(request, "X-Forwarded-Host"))
        return all(allowed_host(host, names) for host in hosts)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not self._our_host(request):
            return await self._refuse(request, 421, f"a request for another host ({self._host(request)!r})")
        if request.path == "/favicon.ico":
            return web.Response(status=404)  # every page's browser asks: not a failure to count
        route = request.match_info.route.name
        if route in ("open", "redeem"):
            return await handler(request)  # the link's credential is its own proof (handle_redeem)
        token = request.query.get("token")
        if token is not None:
            return await self._token_shown(request, token)
        if route in ("card", "card-websocket"):
            return await self._card_guard(request, handler)
        session = self.grants.find(request.cookies.get(self.session_cookie))
        if session is None or session.card is not None:
            if route == "static" and self._any_card(request):
                return await handler(request)  # a card's page loads the same scripts
            return await self._no_session(request)
        if route == "websocket" and not self._same_origin(request):
            return await self._refuse(request, 403, f"websocket from another origin ({request.headers.get('Origin')})")
        request[GRANT] = session
        return await handler(request)

    async def _token_shown(self, request: web.Request, token: str) -> web.StreamResponse:
        """The token: a new session for this browser (its old one, if it sent it, ends)."""
        if not same_secret(token, self.settings.token):
            return await self._refuse(request, 403, "wrong token")
        client = self._client(request)
        self.throttle.succeeded(client)
        old = self.grants.find(request.cookies.get(self.session_cookie))
        if old is not None and old.card is None:
            self.grants.revoke(old)  # rotated: a cookie copied before this visit opens nothing now
        session = self.grants.issue(None, self.settings.session_ttl)
        log.info("web: a browser at %s showed the token; it has a new session cookie", client)
        query = {k: v for k, v in request.query.items() if k != "token"}
        clean = request.path + (f"?{urlencode(query)}" if query else "")
        return self._give_cookie(_see_other(clean), self.session_cookie, session)

    async def _no_session(self, request: web.Request) -> web.Response:
        if self._any_card(request):
            return await self._refuse(request, 403, "a card's link opens that card and nothing else")
        if request.cookies.get(self.session_cookie) is None:
            return await self._refuse(request, 401, "no token and no session cookie")
        return await self._refuse(request, 403, "a session cookie that ended (another run, logged out, lapsed or replaced)")

    def _any_card(self, request: web.Request) -> bool:
        return any(
            name.startswith(self.card_cookie_prefix) and (grant := self.grants.find(value)) is not None
            and grant.card is not None and self.card_cookie_prefix + grant.handle == name
            for name, value in request.cookies.items()
        )  # fmt: skip

    async def _card_guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """A card page or its websocket: only with that card's own cookie."""
        handle = request.match_info["handle"]
        grant = self.grants.find(request.cookies.get(self.card_cookie_prefix + handle))
        if grant is None or grant.card is None or grant.handle != handle:
            return await self._refuse(request, 403, "this card was not opened by a link in this browser, or it closed")
        if request.match_info.route.name == "card-websocket":
            if not self._same_origin(request):
                return await self._refuse(request, 403, f"websocket from another origin ({request.headers.get('Origin')})")
            if self._sockets.get(handle):
                return await self._refuse(request, 403, "this card is open in another tab already")
        request[GRANT] = grant
        return await handler(request)

    def _same_origin(self, request: web.Request) -> bool:
        """A browser names the page that opens a websocket (or sends a form) in Origin: it must
        be this view's own, port included (cookies ignore ports: only this check tells a page of
        another port on this host)."""
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser (a credential was still needed)
        hosts = {request.host.lower(), self._host(request).lower()}
        if self.settings.public_url:
            hosts.add(urlsplit(self.settings.public_url).netloc.lower())
        return urlsplit(origin).netloc.lower() in hosts

    # -- one-time links ------------------------------------------------------------------------

    async def handle_link_page(self, request: web.Request) -> web.StreamResponse:
        """A link's page: nothing is redeemed by this GET (a chat app's preview fetches it too).
        Its form POSTs the credential back; its script sends the form at once when a browser
        navigated here (`_navigated`), so a person's tap opens the card with no second tap."""
        claim = self.redeemer.check(request.match_info["credential"], now=time.time())
        if claim is None:
            return await self._refuse(request, 403, "this link is not valid (used before, expired, or not ours)")
        if card_target(claim.target) is None:
            return await self._refuse(request, 403, f"this link names no agent ({claim.target!r})")
        nonce = secrets.token_urlsafe(16)
        script = f'<script nonce="{nonce}">document.forms[0].submit();</script>' if _navigated(request) else ""
        what = "the review" if claim.target.startswith(REVIEW_PREFIX) else "the answer card"
        shown = claim.target.removeprefix(REVIEW_PREFIX)
        body = LINK_PAGE.format(what=what, target=html.escape(shown), script=script)
        response = web.Response(text=body, content_type="text/html")
        response.headers.update(NO_STORE)
        # same-origin, not no-referrer: under no-referrer the form's POST says "Origin: null", and
        # the link (in this page's URL) still reaches no other site
        response.headers["Referrer-Policy"] = "same-origin"
        response.headers["Content-Security-Policy"] = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; form-action 'self'; "
            "frame-ancestors 'none'; base-uri 'none'"
        )  # fmt: skip
        return response

    async def handle_redeem(self, request: web.Request) -> web.StreamResponse:
        """The link's page sent its form: redeem the link (once), give the card grant, open the card."""
        if not self._same_origin(request):
            return await self._refuse(request, 403, f"a link sent from another origin ({request.headers.get('Origin')})")
        claimed = self.redeemer.redeem(request.match_info["credential"], now=time.time())
        if claimed is None:
            return await self._refuse(request, 403, "this link is not valid (used before, expired, or not ours)")
        target = card_target(claimed)
        if target is None:
            return await self._refuse(request, 403, f"this link names no agent ({claimed!r})")
        grant = self.grants.issue(target, self.settings.card_ttl)
        log.info(
            "web: a one-time link for %s was redeemed by %s: that card alone, for %.0f s at most",
            target, self._client(request), self.settings.card_ttl,
        )  # fmt: skip
        location = str(request.app.router["card"].url_for(handle=grant.handle))
        return self._give_cookie(_see_other(location), self.card_cookie_prefix + grant.handle, grant)

    # -- the pages -----------------------------------------------------------------------------

    def _base_url(self, request: web.Request) -> str:
        """This page's own scheme and host, as the browser reached it (a proxy's, a tunnel's)."""
        if self.settings.public_url:
            return self.settings.public_url.rstrip("/")
        scheme = "https" if self.settings.tls is not None else "http"
        if self.settings.behind_proxy:
            scheme = self._forwarded(request, "X-Forwarded-Proto") or "https"
        return f"{scheme}://{self._host(request)}"

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        return self._page(request, str(request.app.router["websocket"].url_for()))

    async def handle_card_page(self, request: web.Request) -> web.StreamResponse:
        return self._page(request, str(request.app.router["card-websocket"].url_for(handle=request.match_info["handle"])))

    def _page(self, request: web.Request, socket_path: str) -> web.StreamResponse:
        """textual-serve's page, its websocket at ``socket_path``."""
        base = self._base_url(request)
        scheme, _, rest = f"{base}{socket_path}".partition(":")
        context = {
            "font_size": 16,
            "app_websocket_url": ("wss:" if scheme == "https" else "ws:") + rest,
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": "nbs-tui"},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.headers.update(NO_STORE)
        origin = urlsplit(base)
        socket_origin = f"{'wss' if origin.scheme == 'https' else 'ws'}://{origin.netloc}"
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
            f"img-src 'self' data:; connect-src 'self' {socket_origin}; frame-ancestors 'none'; "
            "base-uri 'none'; form-action 'none'"
        )  # the page's own inline script and styles (textual-serve's template), nothing from elsewhere
        return response

    async def handle_logout(self, request: web.Request) -> web.StreamResponse:
        """End this browser's session: its cookie opens nothing more, and its open tabs close."""
        grant: Grant = request[GRANT]
        self.grants.revoke(grant)
        await self._close_tabs_of(grant)
        log.info("web: the browser at %s logged out", self._client(request))
        response = web.Response(text="nbs-tui: logged out. Open the URL that 'nbs-tui web' printed to come back.\n")
        response.headers.update(NO_STORE)
        response.del_cookie(self.session_cookie, path="/", secure=self._secure, httponly=True, samesite="Strict")
        return response

    async def _close_tabs_of(self, grant: Grant) -> None:
        for websocket in list(self._sockets.get(grant.handle, ())):
            await websocket.close()

    def tab_command(self, card_target: str | None) -> str:
        """The shell command of one tab's dashboard (textual-serve runs it through a shell): the
        full dashboard, or for a card grant the card-only one (that agent's card, nothing else).

        ``exec``: the shell becomes the dashboard, so the process textual-serve holds (and kills
        when it will not quit) is the dashboard itself, not a shell that would leave it orphaned."""
        words = list(self.settings.dashboard_argv)
        if card_target is not None and card_target.startswith(REVIEW_PREFIX):
            words += ["--open-review", card_target.removeprefix(REVIEW_PREFIX), "--card-only"]
        elif card_target is not None:
            words += ["--open-card", card_target, "--card-only"]
        return "exec " + shlex.join(words)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One tab: its own dashboard process, fed the browser's keys and sizes (textual-serve's
        handler, with the command chosen per connection and the process tracked for the stop).
        The tab lasts as long as its grant: it closes when the grant lapses or is ended, and a
        card grant ends with its tab (the card closed)."""
        grant: Grant = request[GRANT]
        websocket = web.WebSocketResponse(heartbeat=15)
        sockets = self._sockets.setdefault(grant.handle, set())
        sockets.add(websocket)  # before any wait: a second tab of the same card is refused meanwhile
        width = _int(request.query.get("width"), 80)
        height = _int(request.query.get("height"), 24)
        command = self.tab_command(grant.card)
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
            try:
                await asyncio.wait_for(self._relay(websocket, tab), self.grants.remaining(grant))
            except TimeoutError:
                log.info("web: a tab's %s lapsed: its tab closes", "card link" if grant.card else "session")
                await websocket.close()
        except asyncio.CancelledError:
            await websocket.close()
        except Exception:
            log.exception("web: a tab failed")
        finally:
            sockets.discard(websocket)
            if not sockets:
                self._sockets.pop(grant.handle, None)
            if grant.card is not None:
                self.grants.revoke(grant)  # the card closed: its link's grant ends with it
                log.info("web: the card of %s closed: its link opens nothing more", grant.card)
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
        if host in WILDCARDS:
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


LINK_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>nbs-tui: an agent</title>
<style>body {{ background: #0c181f; color: #eee; font: 18px sans-serif; margin: 2em; }}
button {{ font-size: 1.2em; padding: 0.6em 1.4em; }}</style></head>
<body><form method="post"><p>nbs-tui: {what} of <b>{target}</b>.</p>
<p>This link opens it once, in this browser.</p><button type="submit">Open it</button></form>
{script}</body></html>
"""

_NOT_A_PERSON = re.compile(
    r"bot|crawl|spider|preview|headless|facebookexternalhit|slack|telegram|whatsapp|discord|skype|mastodon|"
    r"matrix|synapse|embedly|iframely|curl|wget|python|go-http|okhttp|java/|node-fetch|undici|axios|libwww",
    re.I,
)


def _navigated(request: web.Request) -> bool:
    """Did a person's browser navigate to this page (its script may send the form itself)?
    A browser says so in its fetch metadata; preview fetchers send none, or name themselves."""
    headers = request.headers
    return (
        headers.get("Sec-Fetch-Mode") == "navigate" and headers.get("Sec-Fetch-Dest") == "document"
        and not _NOT_A_PERSON.search(headers.get("User-Agent", ""))
    )  # fmt: skip
