"""The NBS control plane, pure: control commands, the resource registry, inbox readings, chat
files and bus events. `nbs_tui.files` reads and writes them."""
