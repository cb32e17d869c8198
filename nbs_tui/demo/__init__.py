"""The demo fleet: an imitation Claude Code agent and a launcher for a private tmux server.

* ``agent``: ``python -m nbs_tui.demo.agent`` draws and behaves like Claude Code in a terminal
  (menus, spinner, input box, /nbs-poll, chat posts, benchmark markers); it reads and
  writes NBS chats through ``nbs_tui.files.chat_io``, as the dashboard does. ``agent.py`` holds
  the entry point and the turn engine (keys, turns, autonomy, the clock); the rest is one
  module per concern:

  - ``agent_state``: the options and the state every layer shares (``AgentState``);
  - ``agent_screen``: the transcript and drawing a frame (``AgentScreen``);
  - ``turns``: the turn scripts (``TurnScripts``), with ``steps`` (``Work``, ``Menu``, ``Mode``)
    and ``tasks`` (the made-up work they talk about);
  - ``demo_terminal``: text widths, wrapping, painting rows, the tty (``Terminal``);
  - ``palette``: Claude Code's colours, glyphs, verbs and timings;
  - ``side_files``: the status file, transcript and hook records Claude Code also writes.
* ``launcher``: ``DemoFleet.start(agents=6)`` for ``nbs-tui demo`` and
  ``DemoFleet.start_busy(panes, busy_fraction)`` for the benchmarks.
"""
