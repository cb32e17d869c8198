"""The demo fleet: an imitation Claude Code agent and a launcher for a private tmux server.

* ``agent``: ``python -m nbs_tui.demo.agent`` draws and behaves like Claude Code in a terminal
  (menus, spinner, input box, /nbs-poll, chat posts, benchmark markers).
* ``launcher``: ``DemoFleet.start(agents=6)`` for ``nbs-tui demo`` and
  ``DemoFleet.start_busy(panes, busy_fraction)`` for the benchmarks.
* ``chatfile``: reads and writes NBS chat files (``.nbs/chat/*.chat``) the NBS way.
"""
