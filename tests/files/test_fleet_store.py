"""The fleet memory's file (nbs_tui/files/fleet_store.py), with real files in a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbs_tui.core.fleet.fleet_memory import (
    SCHEMA,
    RememberedAgent,
    RememberedPane,
    RememberedWindow,
    ServerInstance,
    memory_from_json,
)
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.files.fleet_store import FleetStore, fleet_path

SERVER = ServerAddress(socket_name="work")
RUN1, RUN2 = ServerInstance(100, 1_700_000_000), ServerInstance(200, 1_700_090_000)


def window(name: str, session_id: str, index: int = 1) -> RememberedWindow:
    agent = RememberedAgent(name, session_id, ("claude", "-n", name))
    return RememberedWindow("work", index, name, "bb62,159x48,0,0,1", (RememberedPane(0, f"/src/{name}", "%1", agent),))


@pytest.fixture
def reports() -> list[str]:
    return []


@pytest.fixture
def store(tmp_path: Path, reports: list[str]) -> FleetStore:
    return FleetStore.for_server("local", SERVER, tmp_path / "state", reports.append)


def test_the_file_is_named_after_the_server_under_xdg_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert fleet_path("local", SERVER) == tmp_path / "nbs-tui" / "fleet-L-work.json"
    assert fleet_path("box", ServerAddress()) == tmp_path / "nbs-tui" / "fleet-H-box-default.json"


def test_written_on_a_change_only(store: FleetStore, reports: list[str]) -> None:
    assert store.remember("local", SERVER, RUN1, [window("api", "s1")]) is True
    stamp = store.path.stat().st_mtime_ns
    assert store.remember("local", SERVER, RUN1, [window("api", "s1")]) is False
    assert store.path.stat().st_mtime_ns == stamp
    assert store.remember("local", SERVER, RUN1, [window("api", "s2")]) is True
    data = json.loads(store.path.read_text())
    assert data["schema"] == SCHEMA
    assert data["windows"][0]["panes"][0]["agent"]["session_id"] == "s2"
    assert reports == []
    assert [p.name for p in store.path.parent.iterdir()] == [store.path.name]  # no temporary file left


def test_a_new_store_reads_what_an_earlier_one_wrote(store: FleetStore, tmp_path: Path) -> None:
    store.remember("local", SERVER, RUN1, [window("api", "s1"), window("web", "s9", 2)])
    again = FleetStore(store.path)
    assert again.memory == store.memory
    assert again.remember("local", SERVER, RUN1, [window("web", "s9", 2), window("api", "s1")]) is False


def test_the_lost_fleet_survives_a_tmux_started_by_hand(store: FleetStore) -> None:
    store.remember("local", SERVER, RUN1, [window("api", "s1")])
    assert store.remember("local", SERVER, RUN2, []) is True
    memory = memory_from_json(json.loads(store.path.read_text()))
    assert memory.instance == RUN2 and memory.windows == ()
    assert [w.name for w in memory.previous] == ["api"]


def test_another_writer_is_read_before_merging(store: FleetStore) -> None:
    store.remember("local", SERVER, RUN1, [window("api", "s1")])
    other = FleetStore(store.path)
    other.remember("local", SERVER, RUN2, [window("web", "s9")])  # the service, after a restart
    assert store.remember("local", SERVER, RUN2, [window("web", "s9")]) is False  # it read that first
    assert store.memory is not None and [w.name for w in store.memory.previous] == ["api"]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"schema": 1, "windows": [', "Expecting value"),
        (b"\xff\xfe not utf-8", "codec can't decode"),
        (b'["a list"]', "not a JSON object"),
        (b'{"schema": 1, "windows": [{"session": "w"}]}', "windows[0].index is missing"),
    ],
)
def test_a_bad_file_is_kept_aside_and_a_new_one_started(store: FleetStore, reports: list[str], content: bytes, why: str) -> None:
    store.path.parent.mkdir(parents=True)
    store.path.write_bytes(content)
    assert store.load() is None
    aside = [p for p in store.path.parent.iterdir() if p.name.startswith("fleet-L-work.json.corrupt-")]
    assert len(aside) == 1 and aside[0].read_bytes() == content
    assert len(reports) == 1 and why in reports[0] and aside[0].name in reports[0]
    assert store.remember("local", SERVER, RUN1, [window("api", "s1")]) is True
    assert store.path.is_file() and aside[0].read_bytes() == content


def test_a_second_bad_file_does_not_overwrite_the_first_kept_aside(store: FleetStore) -> None:
    store.path.parent.mkdir(parents=True)
    for content in (b"first", b"second"):
        store.path.write_bytes(content)
        store.load()
    kept = sorted(p.read_bytes() for p in store.path.parent.iterdir() if ".corrupt-" in p.name)
    assert kept == [b"first", b"second"]


def test_a_newer_file_is_left_exactly_as_it_is(store: FleetStore, reports: list[str]) -> None:
    store.path.parent.mkdir(parents=True)
    content = json.dumps({"schema": SCHEMA + 1, "fleet": "from the future"}).encode()
    store.path.write_bytes(content)
    assert store.remember("local", SERVER, RUN1, [window("api", "s1")]) is False
    assert store.path.read_bytes() == content
    assert "written by a newer nbs-tui" in reports[0] and store.read_only
    assert list(store.path.parent.iterdir()) == [store.path]


def test_an_unreadable_file_is_not_written_over(store: FleetStore, reports: list[str]) -> None:
    store.path.mkdir(parents=True)  # a folder where the file belongs: open() fails for root too
    assert store.remember("local", SERVER, RUN1, [window("api", "s1")]) is False
    assert store.path.is_dir() and "cannot read" in reports[0]


def test_a_failed_write_is_reported_and_not_counted(tmp_path: Path, reports: list[str]) -> None:
    (tmp_path / "state").write_text("a file where the folder belongs")
    store = FleetStore.for_server("local", SERVER, tmp_path / "state", reports.append)
    assert store.remember("local", SERVER, RUN1, [window("api", "s1")]) is False
    assert "cannot write" in reports[0]
    assert store.memory is None
