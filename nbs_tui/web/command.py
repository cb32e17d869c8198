"""``nbs-tui web``: its options, its checks (every refusal before anything listens), its start."""

from __future__ import annotations

import argparse
import ssl
import sys
from pathlib import Path
from typing import Any

from nbs_tui.config import Settings
from nbs_tui.runtime.service_starter import sidecar_flags
from nbs_tui.server_options import add_server_options
from nbs_tui.web.access import DEFAULT_BIND, AccessError, check_exposure, load_token, parse_bind


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    web = commands.add_parser(
        "web",
        help="serve the dashboard to a browser, behind a token (each tab is a dashboard with your full rights)",
        description=(
            "Serve the dashboard to a browser. Prints the URL to open (it carries the token, swapped for a cookie "
            "on the first visit, lasting web_session_ttl hours; /logout ends it). A push's one-time link opens one "
            "agent's answer card and nothing else. The browser view can type into every agent: keep it on loopback and reach it "
            "through 'ssh -L', or serve TLS (--cert/--key), or put a TLS proxy in front (--behind-proxy)."
        ),
    )
    web.add_argument("--bind", default=DEFAULT_BIND, metavar="HOST:PORT", help=f"where to listen (default {DEFAULT_BIND}; port 0 picks one)")
    web.add_argument("--cert", type=Path, metavar="FILE", help="TLS certificate chain (PEM); with --key")
    web.add_argument("--key", type=Path, metavar="FILE", help="TLS private key (PEM); with --cert")
    web.add_argument(
        "--token-file", type=Path, metavar="FILE",
        help="read the token from FILE (mode 0600) instead of making a new one at each start (config: web_token_file)",
    )  # fmt: skip
    web.add_argument(
        "--behind-proxy", action="store_true",
        help="a TLS proxy stands in front: allow a non-loopback plain-HTTP bind, mark the cookie Secure, "
        "trust the proxy's own (last) X-Forwarded-For/-Proto/-Host entry",
    )  # fmt: skip
    web.add_argument(
        "--public-url", metavar="URL",
        help="the base URL the browser opens, when not the bind's (a proxy); its host is answered besides the bind's",
    )  # fmt: skip
    add_server_options(web, inherit=True)  # given before the subcommand (nbs-tui -L x web), kept


def dashboard_argv(args: argparse.Namespace, settings: Settings) -> list[str]:
    """One tab's dashboard: this server's choice of tmux servers, hosts and sidecar settings."""
    words = [sys.executable, "-m", "nbs_tui"]
    if getattr(args, "socket_name", None):
        words += ["-L", args.socket_name]
    elif getattr(args, "socket_path", None):
        words += ["-S", args.socket_path]
    for host in getattr(args, "hosts", None) or ():
        words += ["--host", host]
    for session in getattr(args, "sessions", None) or ():
        words += ["--session", session]
    return words + sidecar_flags(settings)


def _tls(cert: Path | None, key: Path | None) -> ssl.SSLContext | None:
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise AccessError("--cert and --key go together (the certificate chain and its private key, PEM)")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as error:
        raise AccessError(f"cannot use --cert {cert} --key {key}: {error}") from None
    return context


def web_command(args: argparse.Namespace, settings: Settings) -> int:
    """Check everything, then serve until stopped. An `AccessError` is a usage refusal."""
    from nbs_tui.housekeeping import logs
    from nbs_tui.web.server import WebSettings, WebView

    bind = parse_bind(args.bind)
    tls = _tls(args.cert, args.key)
    check_exposure(bind, tls=tls is not None, behind_proxy=args.behind_proxy)
    token_file = args.token_file or (Path(settings.web_token_file).expanduser() if settings.web_token_file else None)
    token = load_token(token_file)
    logs.install()
    view = WebView(
        WebSettings(
            bind=bind, dashboard_argv=dashboard_argv(args, settings), token=token, tls=tls,
            behind_proxy=args.behind_proxy, public_url=args.public_url,
            session_ttl=settings.web_session_ttl * 3600, card_ttl=settings.web_link_ttl * 60,
        )
    )

    def announce(url: str) -> None:
        print(url, flush=True)
        print(
            "nbs-tui web: open the URL above (its token becomes a cookie on the first visit; /logout ends it). "
            "Whoever opens it can type into every agent. Ctrl+C stops.", file=sys.stderr, flush=True,
        )  # fmt: skip

    return view.run(announce)
