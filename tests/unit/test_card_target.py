"""The answer card's target across processes: ``host/server-key/pane-id``."""

from __future__ import annotations

import re

import pytest

from nbs_tui.core.fleet.card_target import (
    CardTarget,
    CardTargetError,
    format_card_target,
    parse_card_target,
)
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet.model import ServerAddress


def test_format_names_host_server_and_the_pane_on_its_server() -> None:
    assert format_card_target("local", ServerAddress(), "%3") == "local/default/%3"
    assert format_card_target("", ServerAddress("work"), "%12") == "local/L-work/%12"
    assert format_card_target("box", ServerAddress(None, "/tmp/my sock"), "box:%7") == "box/S-_tmp_my_sock/%7"


@pytest.mark.parametrize("text", ["local/default/%3", "box/L-agents/%12", "b.x-1/S-_tmp_sock/%0"])
def test_parse_reads_what_format_writes(text: str) -> None:
    target = parse_card_target(text)
    assert str(target) == text


def test_parse_gives_the_parts() -> None:
    assert parse_card_target(" box/L-a/%4\n") == CardTarget("box", "L-a", "%4")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("%3", "host/server/pane"),
        ("local/%3", "host/server/pane"),
        ("local/default/3", "pane '3'"),
        ("local/default/%3/x", "pane '%3/x'"),
        ("local/de fault/%3", "server 'de fault'"),
        ("/default/%3", "host ''"),
        ("a:b/default/%3", "host 'a:b'"),
        ("local//%3", "server ''"),
    ],
)
def test_parse_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(CardTargetError, match=re.escape(says)) as raised:
        parse_card_target(text)
    assert repr(text) in str(raised.value)


def test_format_refuses_a_pane_that_is_not_a_pane_id() -> None:
    with pytest.raises(CardTargetError):
        format_card_target("local", ServerAddress(), "three")


def test_the_dashboards_pane_id_of_a_target() -> None:
    local, box = HostSpec("local", socket_name="work"), HostSpec("box", destination="me@box")
    hosts = (local, box)
    assert parse_card_target("local/L-work/%3").dashboard_pane_id(hosts) == "%3"
    assert parse_card_target("box/default/%3").dashboard_pane_id(hosts) == "box:%3"
    assert parse_card_target("local/default/%3").dashboard_pane_id(hosts) is None  # another server
    assert parse_card_target("elsewhere/default/%3").dashboard_pane_id(hosts) is None
