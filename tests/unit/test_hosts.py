"""Choosing hosts: the ``[[hosts]]`` table and ``--host`` (pure rules, and through the config)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nbs_tui.config import ConfigError, load_settings
from nbs_tui.core.fleet.host_spec import HostsError, HostSpec, choose_hosts, parse_hosts
from nbs_tui.core.fleet.model import ServerAddress

GPU = {"name": "gpu", "ssh": "me@gpu.example", "ssh_options": ["-p", "2222"], "tmux_socket_name": "agents"}


def test_entries_parse_with_every_key() -> None:
    (gpu, box, here) = parse_hosts(
        [
            GPU,
            {"ssh": "box", "ssh_options": "-J jump -o ConnectTimeout=3", "tmux_socket_path": "/tmp/s",
             "tmux": "/opt/bin/tmux", "nbs_tui": "~/.local/bin/nbs-tui"},
            {"name": "local"},
        ]
    )  # fmt: skip
    assert gpu == HostSpec("gpu", "me@gpu.example", ("-p", "2222"), socket_name="agents")
    assert gpu.server == ServerAddress(socket_name="agents") and not gpu.is_local
    assert box.name == "box" and box.ssh_options == ("-J", "jump", "-o", "ConnectTimeout=3")
    assert (box.socket_path, box.tmux, box.nbs_tui) == ("/tmp/s", "/opt/bin/tmux", "~/.local/bin/nbs-tui")
    assert here.is_local and here.destination == ""


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"name": "x"}, "array of tables"),
        ([{"ssh": "a", "port": 22}], "entry 1: unknown key 'port'"),
        ([{}], "entry 1: give it a name, an ssh destination, or both"),
        ([{"name": "gpu"}], "'gpu': ssh must be a non-empty string"),
        ([{"name": "two words", "ssh": "a"}], "may not contain spaces"),
        ([{"name": "local", "ssh": "a"}], "'local' is this machine"),
        ([{"ssh": "a", "ssh_options": [1]}], "ssh_options must be a list of strings"),
        ([{"ssh": "a", "tmux_socket_name": "x", "tmux_socket_path": "/y"}], "not both"),
        ([{"ssh": "a"}, {"name": "a", "ssh": "b"}], "the name 'a' is used twice"),
    ],
)
def test_bad_entries_say_which_and_why(entries: Any, message: str) -> None:
    with pytest.raises(HostsError, match=message):
        parse_hosts(entries)


def test_choice_flags_then_table_then_this_machine() -> None:
    defined = parse_hosts([GPU, {"ssh": "box"}])
    server = ServerAddress(socket_name="work")
    assert [h.name for h in choose_hosts(defined, [], server)] == ["gpu", "box"]
    assert choose_hosts((), [], server) == (HostSpec("local", socket_name="work"),)
    gpu, local, other = choose_hosts(defined, ["gpu", "local", "me@other:22"], server)
    assert gpu.socket_name == "agents"  # its own socket wins over -L
    assert local == HostSpec("local", socket_name="work")
    assert other == HostSpec("me@other_22", "me@other:22", socket_name="work")  # any destination
    with pytest.raises(HostsError, match="'gpu' is chosen twice"):
        choose_hosts(defined, ["gpu", "gpu"], server)


def test_the_server_tmux_names_is_this_machines_only() -> None:
    """Inside a tmux pane with no -L/-S, $TMUX's socket is a path on this machine: another host
    watched with it gets its own default server, and this machine keeps $TMUX's."""
    here = ServerAddress(socket_path="/tmp/tmux-0/work")
    box, local = choose_hosts((), ["me@box", "local"], here, server_is_local=True)
    assert box == HostSpec("me@box", "me@box")
    assert local == HostSpec("local", socket_path="/tmp/tmux-0/work")
    chosen, _ = choose_hosts((), ["me@box", "local"], here)  # -S given: every host uses it
    assert chosen.socket_path == "/tmp/tmux-0/work"


def test_the_config_file_holds_hosts_and_flags_choose(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('poll_interval = 10\n\n[[hosts]]\nname = "gpu"\nssh = "me@gpu"\n\n[[hosts]]\nname = "local"\n')
    settings = load_settings(path, environ={})
    assert [h.name for h in settings.watched_hosts()] == ["gpu", "local"]
    assert load_settings(path, environ={}, host_choice=("local",)).watched_hosts() == (HostSpec("local"),)
    path.write_text('[[hosts]]\nname = "gpu"\n')
    with pytest.raises(ConfigError, match=r"config\.toml: \[\[hosts\]\] 'gpu': ssh must be"):
        load_settings(path, environ={})
    with pytest.raises(ConfigError, match="--host"):
        load_settings(None, environ={}, host_choice=("a b",))


def test_pane_ids_of_other_hosts_are_qualified_and_split_back() -> None:
    from nbs_tui.core.fleet.host_spec import LOCAL, qualify_pane_id, split_pane_id

    far = HostSpec("hosta", "user@box")
    assert qualify_pane_id(far, "%3") == "hosta:%3"
    assert qualify_pane_id(HostSpec(LOCAL), "%3") == "%3"  # hooks and status files name local panes so
    assert split_pane_id("hosta:%3") == ("hosta", "%3")
    assert split_pane_id("%3") == (LOCAL, "%3")
