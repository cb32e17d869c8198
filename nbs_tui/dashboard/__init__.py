"""The dashboard's parts: what the app (`nbs_tui.app.NbsApp`) owns and hands its work to.

`nbs_tui.app` builds the Textual app: its widgets, its bindings, and the routing of Textual's
messages and key actions, one line each, to the part whose concern it is. Each module here is
one such concern, so that no file holds more than one:

- `frames`: when the frame runs (the one scheduler of repaints, fed by the bridge);
- `views`: the view up, the selected pane, and what the frame draws;
- `news`: the backends' news applied to the pane state and the widgets that show it;
- `problems_shown`: each backend problem notified, counted and listed;
- `operator_actions`: the dashboard's side of the operator's actions on panes (send, keys,
  broadcasts, pass-through, the sidecar's switches, jump);
- `answering`: the answer card of the needs-you queue;
- `review`: the review screen of an agent's changes (``v``, ``--open-review``), its work done
  off the UI thread;
- `history`: the selected pane's scrollback, read and followed;
- `notifications`: notifications written to the operator's terminal;
- `keys`: the help screen's rows and the command palette's entries;
- `key_table`: every key of the dashboard, in one table;
- `messages`: app-wide messages and the small value types they carry (the widgets post them).

A part is given what it needs (widgets, the state, callables) when the app builds it, or asks
the app through a small protocol (`news.NewsView`); none imports the app (it imports them: no
cycle). They may import the widgets, the core, the operator room, the runtime and the ports'
types. Each runs on the UI thread but `frames.FrameScheduler.changed`, which the fleet's
threads call.
"""
