"""One-time links into the browser view: a push names an agent, its link opens that agent's card once.

A push notification goes out from the process that decides it (the sidecar service), while the
browser view is served by another (`nbs-tui web`). They share one secret, the web view's link
key (`nbs_tui.files.web_endpoint`), and nothing else: the sender signs a credential naming the
agent and an expiry, the web view checks the signature, the expiry, and that the credential's
nonce was never redeemed before. The redeemer remembers redeemed nonces only until their
expiry: after it the signature check refuses them anyway.

What a link grants, exactly: the browser that redeems it (a POST from the link's own page, so a
chat app's preview fetch, a plain GET, does not use it up: `check` looks without redeeming) may
see and answer that one agent's answer card, in a dashboard started as ``--open-card TARGET
--card-only``: no fleet, no other agent, no other key. It lasts until that card closes, or
``web_link_ttl`` minutes after the redemption, whichever is first. It never opens the full
dashboard (``/``, its websocket), another agent's card, or the same card a second time, and it
is never the web view's token.

Pure: no clock (``now`` is passed), randomness only from `secrets` for the nonce.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass

DEFAULT_LINK_TTL = 600.0
"""How long a link works, in seconds (``web_link_ttl`` in the config overrides it)."""

KEY_BYTES = 32
NONCE_BYTES = 16


def new_link_key() -> bytes:
    """A fresh random key, made by the web view at each start."""
    return secrets.token_bytes(KEY_BYTES)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest()


def issue_link(key: bytes, target: str, *, now: float, ttl: float = DEFAULT_LINK_TTL) -> str:
    """A credential for one opening of ``target``'s card, valid ``ttl`` seconds from ``now``.

    URL-safe (base64url and one dot), so it goes into a path or a query as it is.
    """
    if ttl <= 0:
        raise ValueError(f"a link's lifetime must be positive, not {ttl}")
    payload = json.dumps(
        {"t": target, "e": round(now + ttl, 3), "n": secrets.token_hex(NONCE_BYTES)},
        separators=(",", ":"), sort_keys=True,
    ).encode()  # fmt: skip
    return f"{_b64(payload)}.{_b64(_sign(key, payload))}"


@dataclass(frozen=True, slots=True)
class LinkClaim:
    """What a valid credential names."""

    target: str
    expires: float
    nonce: str


def read_link(key: bytes, credential: str, *, now: float) -> LinkClaim | None:
    """The claim of a well-signed, unexpired credential, else None (never raises on bad input)."""
    head, dot, tail = credential.partition(".")
    if not dot or not head or not tail:
        return None
    try:
        payload, signature = _unb64(head), _unb64(tail)
    except (binascii.Error, ValueError):
        return None
    if not hmac.compare_digest(signature, _sign(key, payload)):
        return None
    try:
        fields = json.loads(payload)
        claim = LinkClaim(str(fields["t"]), float(fields["e"]), str(fields["n"]))
    except (ValueError, KeyError, TypeError):
        return None
    return claim if now < claim.expires else None


class LinkRedeemer:
    """The web view's side: each valid credential opens its card once."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._redeemed: dict[str, float] = {}
        """Nonce -> expiry, of credentials already used (forgotten once expired)."""

    def check(self, credential: str, *, now: float) -> LinkClaim | None:
        """The claim of a credential that would redeem now, without redeeming it (its landing page)."""
        self._forget_expired(now)
        claim = read_link(self._key, credential, now=now)
        return None if claim is None or claim.nonce in self._redeemed else claim

    def redeem(self, credential: str, *, now: float) -> str | None:
        """The target the credential opens, or None: bad, expired or already used."""
        claim = self.check(credential, now=now)
        if claim is None:
            return None
        self._redeemed[claim.nonce] = claim.expires
        return claim.target

    def _forget_expired(self, now: float) -> None:
        for nonce in [n for n, expires in self._redeemed.items() if expires <= now]:
            del self._redeemed[nonce]
