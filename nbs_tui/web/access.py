"""Who may reach the browser view: the token, the grants it and the links give, the Host rule,
the bind rule, and the slowdown of failures.

The browser view has the operator's full rights (it types into every agent), so everything that
reaches it proves it knows the token: a random one made at each start (printed once, in the URL
to open), or the content of a file only its owner can read. A browser swaps the token for a
session `Grant` (its secret is the cookie's value, random per visit, so a token file's long-lived
token never sits in a cookie jar); showing the token again rotates it, ``/logout`` ends it, and
it lapses after ``web_session_ttl`` hours. A push's one-time link gives a narrower grant: the
one agent's answer card, nothing else (`nbs_tui.web.server`).

Only requests naming this view's own host are answered (`allowed_host`): a page of another
name that DNS points here (rebinding) is refused. Behind a proxy, only the proxy's own, last
``X-Forwarded-*`` entry is believed (`last_hop`): the ones before it are the client's word.

Plain HTTP is allowed only on a loopback address: anything else needs TLS here (``--cert/--key``)
or an operator's explicit word that a TLS proxy stands in front (``--behind-proxy``).

No aiohttp here: the rules are plain functions and small classes, tested without a server.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TOKEN_BYTES = 32
MIN_TOKEN_LENGTH = 16
"""A token file's token must be at least this long (a short one could be guessed)."""

DEFAULT_PORT = 8421
DEFAULT_BIND = f"127.0.0.1:{DEFAULT_PORT}"


class AccessError(Exception):
    """The browser view must not start as asked; the message says why and what to do."""


def new_secret() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def same_secret(given: str | None, expected: str) -> bool:
    """Constant-time comparison (a wrong guess takes as long however much of it was right)."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def load_token(path: Path | None) -> str:
    """The token: the file's content (stripped), or a fresh random one when no file is named.

    The file must be a regular file of this user that nobody else can read or write (mode 0600
    or stricter): anyone who reads it can type into every agent."""
    if path is None:
        return new_secret()
    try:  # not through a symlink (it could point anywhere); O_NONBLOCK: a FIFO must not hang the start
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if path.is_symlink():
            raise AccessError(f"token file {path} is a symbolic link: name the file itself") from None
        raise AccessError(f"token file {path}: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise AccessError(f"token file {path} is not a regular file")
        if info.st_uid != os.getuid():
            raise AccessError(f"token file {path} belongs to another user (uid {info.st_uid}): use a file of your own")
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            raise AccessError(
                f"token file {path} is mode {mode:04o}: others on this machine could read the token and type into "
                f"every agent; make it private with 'chmod 600 {path}'"
            )
        with os.fdopen(fd, "rb", closefd=False) as handle:
            token = handle.read(4096).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)
    if len(token) < MIN_TOKEN_LENGTH or any(ch.isspace() or not ch.isprintable() for ch in token):
        raise AccessError(
            f"token file {path}: the token must be one word of at least {MIN_TOKEN_LENGTH} printable characters "
            "(make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


# -- what a browser holds ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Grant:
    """A credential this process handed out: a cookie's value, and what it opens until when."""

    secret: str = field(repr=False)
    """The cookie's value (random; only its hash is looked up)."""
    handle: str
    """A public name for it (a card page's URL, its cookie's name): never enough to use it."""
    card: str | None
    """None: the whole dashboard (a session, from the token). Else the one card target it opens."""
    expires: float
    """On the store's clock."""


class Grants:
    """The grants alive in this process: issued, found by their secret, revoked, lapsed."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._by_digest: dict[bytes, Grant] = {}
        """sha256(secret) -> grant: a lookup by a hash a guesser cannot steer, not by the secret."""

    def issue(self, card: str | None, ttl: float) -> Grant:
        if ttl <= 0:
            raise ValueError(f"a grant's lifetime must be positive, not {ttl}")
        self._forget_lapsed()
        grant = Grant(new_secret(), secrets.token_urlsafe(12), card, self._clock() + ttl)
        self._by_digest[_digest(grant.secret)] = grant
        return grant

    def find(self, secret: str | None) -> Grant | None:
        """The live grant whose cookie value is ``secret``, else None (unknown, revoked, lapsed)."""
        if not secret:
            return None
        grant = self._by_digest.get(_digest(secret))
        if grant is None or not same_secret(secret, grant.secret):
            return None
        if grant.expires <= self._clock():
            self.revoke(grant)
            return None
        return grant

    def remaining(self, grant: Grant) -> float:
        """Seconds ``grant`` has left (0 once lapsed)."""
        return max(0.0, grant.expires - self._clock())

    def revoke(self, grant: Grant) -> None:
        self._by_digest.pop(_digest(grant.secret), None)

    def _forget_lapsed(self) -> None:
        now = self._clock()
        for digest in [d for d, grant in self._by_digest.items() if grant.expires <= now]:
            del self._by_digest[digest]


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


# -- which requests are for us ------------------------------------------------------------------


def host_name(host: str) -> str:
    """A Host header's name without its port, lower case, no trailing dot (``[::1]:80`` -> ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def address_name(address: str) -> str:
    """A socket's local address as a Host header names it: an IPv4 client of a dual-stack ``::``
    bind arrives on ``::ffff:192.0.2.5`` but asked for ``192.0.2.5``."""
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return host_name(address)
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return str(mapped or ip)


def allowed_host(host: str | None, allowed: frozenset[str]) -> bool:
    """Is ``host`` (a Host or X-Forwarded-Host value) one of this view's own names?"""
    return bool(host) and host_name(host or "") in allowed


def last_hop(value: str | None) -> str | None:
    """The last entry of an ``X-Forwarded-*`` list: the one the proxy in front of us added.
    Earlier entries came with the request, from whoever sent it."""
    if value is None:
        return None
    entry = value.rsplit(",", 1)[-1].strip()
    return entry or None


# -- where it listens ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bind:
    host: str
    port: int

    def url_host(self) -> str:
        """The host as a URL writes it (an IPv6 address in brackets)."""
        return f"[{self.host}]" if ":" in self.host else self.host


def parse_bind(text: str) -> Bind:
    """``HOST:PORT``, ``[V6]:PORT`` or ``:PORT`` (loopback); port 0 picks a free one."""
    host, colon, port_text = text.rpartition(":")
    if not colon:
        raise AccessError(f"--bind {text!r}: give HOST:PORT (e.g. {DEFAULT_BIND})")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise AccessError(f"--bind {text!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise AccessError(f"--bind {text!r}: port {port} is out of range")
    return Bind(host or "127.0.0.1", port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def check_exposure(bind: Bind, *, tls: bool, behind_proxy: bool) -> None:
    """Refuse plain HTTP beyond loopback, saying the safe ways to do it."""
    if tls or behind_proxy or is_loopback(bind.host):
        return
    raise AccessError(
        f"refusing to serve plain HTTP on {bind.host}: the browser view types into every agent, and the token and "
        "its cookie would cross the network in clear. Either serve TLS here (--cert FILE --key FILE), or keep the "
        f"default loopback bind and reach it through ssh (ssh -L {DEFAULT_PORT}:127.0.0.1:{bind.port or DEFAULT_PORT} "
        "THIS-HOST, then open the printed URL on your side), or put a TLS proxy in front and say so with --behind-proxy"
    )


# -- repeated failures --------------------------------------------------------------------------

FREE_FAILURES = 3
"""Failures from one address answered at once (a mistyped URL, an old cookie)."""
FIRST_DELAY = 0.25
MAX_DELAY = 8.0
FORGET_AFTER = 600.0
"""An address with no failure for this long starts again from nothing."""
MAX_ADDRESSES = 10_000
"""Addresses remembered at most (the oldest go first): many addresses cannot fill memory."""


class FailureThrottle:
    """Per client address: every failure past the first `FREE_FAILURES` is answered after a delay
    that doubles each time (up to `MAX_DELAY`), so guessing the token costs time, not just tries."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._failures: dict[str, tuple[int, float]] = {}
        """address -> (failures, when the last one was)."""

    def failed(self, address: str) -> tuple[int, float]:
        """Count a failure; (failures so far from ``address``, seconds to wait before answering)."""
        now = self._clock()
        for old in [a for a, (_, last) in self._failures.items() if now - last > FORGET_AFTER]:
            del self._failures[old]
        count = self._failures.pop(address, (0, now))[0] + 1
        self._failures[address] = (count, now)  # re-inserted: the dict stays oldest-first
        while len(self._failures) > MAX_ADDRESSES:
            del self._failures[next(iter(self._failures))]
        over = count - FREE_FAILURES
        return count, 0.0 if over <= 0 else min(MAX_DELAY, FIRST_DELAY * 2 ** (over - 1))

    def succeeded(self, address: str) -> None:
        self._failures.pop(address, None)
