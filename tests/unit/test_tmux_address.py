"""`default_server`: with no -L/-S, the server a plain ``tmux`` would use in this environment."""

from __future__ import annotations

import os
from pathlib import Path

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.tmux.address import default_server, socket_path_of


def test_outside_tmux_it_is_the_default_server(tmp_path: Path) -> None:
    assert default_server({}) == ServerAddress()
    assert default_server({"TMUX": ""}) == ServerAddress()
    assert default_server({"TMUX": ",123,0"}) == ServerAddress()  # tmux ignores it too


def test_inside_tmux_it_is_the_pane_s_server_named_as_briefly_as_tmux_allows(tmp_path: Path) -> None:
    env = {"TMUX_TMPDIR": str(tmp_path)}
    folder = tmp_path / f"tmux-{os.getuid()}"
    assert default_server({**env, "TMUX": f"{folder}/default,42,0"}) == ServerAddress()
    assert default_server({**env, "TMUX": f"{folder}/work,42,3"}) == ServerAddress(socket_name="work")
    elsewhere = tmp_path / "private" / "sock"
    assert default_server({**env, "TMUX": f"{elsewhere},42,0"}) == ServerAddress(socket_path=str(elsewhere))
    # the same -L folder reached through a symlink (tmux resolves $TMUX_TMPDIR)
    (tmp_path / "link").symlink_to(tmp_path)
    linked = {"TMUX_TMPDIR": str(tmp_path / "link"), "TMUX": f"{folder}/work,42,3"}
    assert default_server(linked) == ServerAddress(socket_name="work")
    # and the rule resolves back to the socket it came from
    assert socket_path_of(default_server({**env, "TMUX": f"{folder}/work,1,0"}), env) == folder / "work"


def test_without_tmux_tmpdir_the_folder_is_under_tmp() -> None:
    uid = os.getuid()
    assert default_server({"TMUX": f"/tmp/tmux-{uid}/agents,9,0"}) == ServerAddress(socket_name="agents")
    assert default_server({"TMUX": f"/var/tmp/tmux-{uid}/agents,9,0"}) == ServerAddress(
        socket_path=f"/var/tmp/tmux-{uid}/agents"
    )
