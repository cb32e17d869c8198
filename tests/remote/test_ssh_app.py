"""The dashboard on one host reached through ssh (``--host``): the list shows that host's panes,
the mirror follows them, and text sent from the send bar (typed and pasted) arrives byte-exact."""

from __future__ import annotations

import shlex
from pathlib import Path

from textual.widgets import TextArea

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import HostSpec
from tests.app.helpers import wait_for
from tests.app.test_actions import SIZE, TRICKY, records, select
from tests.remote.conftest import SshLab
from tests.remote.helpers import new_session

CAT = "stty -echo; touch {out}.ready; cat > {out}; touch {out}.done; exec sleep 600"


async def test_dashboard_on_a_remote_host_lists_mirrors_and_types(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    out = tmp_path / "out.txt"
    pane = new_session(a, "far", "sh -c " + shlex.quote(CAT.format(out=shlex.quote(str(out)))))
    settings = Settings(
        hosts=(HostSpec("hosta", "hosta", ssh_lab.ssh_options),),
        action_log=tmp_path / "state" / "actions.log",
        hook_spool=tmp_path / "state" / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
    )
    app = create_app(settings, control_plane=False)
    async with app.run_test(size=SIZE) as pilot:
        await select(app, pilot, pane)
        assert app.runtime.fleet is not None and getattr(app.runtime.fleet, "runner").remote  # noqa: B009
        await wait_for(pilot, lambda: Path(f"{out}.ready").exists(), what="cat ready")
        await pilot.press("i")
        area = app.dashboard.send_bar.query_one(TextArea)
        area.load_text(TRICKY)  # several lines: pasted (load-buffer over ssh)
        await pilot.press("enter")
        area.load_text("one line")
        await pilot.press("enter")  # typed (send-keys in-band)
        await wait_for(pilot, lambda: len(records(app)) == 2, what="two sends logged")
        a.tmux("send-keys", "-t", pane, "C-d")
        a.tmux("send-keys", "-t", pane, "C-d")
        await wait_for(pilot, lambda: Path(f"{out}.done").exists(), what="cat finished")
        assert out.read_bytes() == (TRICKY + "one line").encode()
