"""The demo fleet: an imitation Claude Code agent and a launcher for a private tmux server.

* ``agent``: ``python -m nbs_tui.demo.agent`` draws and behaves like Claude Code in a terminal
  (menus, spinner, input box, /nbs-poll, chat posts, benchmark markers); it reads and
  writes NBS chats through ``nbs_tui.core.chat``, as the dashboard does.
* ``launcher``: ``DemoFleet.start(agents=6)`` for ``nbs-tui demo`` and
  ``DemoFleet.start_busy(panes, busy_fraction)`` for the benchmarks.
"""
