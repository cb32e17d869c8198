"""The dashboard's parts that the app (`nbs_tui.app.NbsApp`) owns and delegates to.

`nbs_tui.app` builds the Textual app: its widgets, its bindings, and the routing of Textual's
messages and key actions. Each module here is one concern it hands work to, so that no file
holds more than one:

- `frames`: when the frame runs (the one scheduler of repaints, fed by the bridge).

They may import the widgets, the core, the controller and the tmux port's types; never the
app (it imports them), and the runtime only for its types.
"""
