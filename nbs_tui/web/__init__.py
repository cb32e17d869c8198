"""The browser view (`nbs-tui web`): the dashboard served to a browser by textual-serve, behind a token.

Owns: the web server (`server`), who may reach it (`access`: the token, the session and card
grants, the Host rule, the bind and TLS rules, the slowdown of repeated failures) and the command
(`command`). Every browser tab gets its own dashboard process (``nbs-tui`` with the server's flags, started by
textual-serve per websocket), so a tab is exactly the terminal dashboard: a viewer of the
server's sidecar service, which it starts when none runs (`nbs_tui.runtime.service_starter`).
A push's one-time link gets a tab of the card-only dashboard
(``--open-card TARGET --card-only``): that agent's card, nothing else. The web server itself
never watches tmux and never types into a pane.

May import: the core (one-time links, `nbs_tui.core.fleet.web_links`), the files port (the endpoint
file, `nbs_tui.files.web_endpoint`), the settings, the logs and `nbs_tui.runtime.service_starter`
(the flags a dashboard hands on); aiohttp and textual_serve. Never textual, the widgets or the
app: the dashboard runs in the tabs' own processes.
"""
