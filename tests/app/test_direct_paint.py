"""When the mirror may be written straight to the terminal: only where nothing is drawn over it.

`unobstructed_region` reads Textual's own map of what is drawn where (front first); here it is
asked about the real dashboard on a real tmux server, with a toast laid over the mirror and
without. (The painting itself is checked on a real terminal in test_mirror_terminal.py.)
"""

from __future__ import annotations

import libtmux

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.widgets.direct_paint import unobstructed_region
from nbs_tui.widgets.textual_internals import visible_widgets
from tests.app.helpers import wait_for, widget_text

SIZE = (160, 48)


async def test_the_mirror_is_unobstructed_until_a_toast_covers_it(session: libtmux.Session) -> None:
    pane = session.active_window.active_pane
    assert pane is not None
    pane.send_keys("echo MIRROR-SHOWN", enter=True)
    app = create_app(Settings(server=ServerAddress(socket_name=session.server.socket_name)))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        rows = app.dashboard.mirror.rows
        await wait_for(pilot, lambda: "MIRROR-SHOWN" in widget_text(rows), what="the pane in the mirror")
        visible = visible_widgets(app.screen)
        assert unobstructed_region(visible, rows) == rows.region
        assert unobstructed_region(visible, app.dashboard.mirror) is None, "the mirror's own rows are drawn over its frame"

        app.notify("a toast over the mirror's corner", timeout=60)
        await wait_for(
            pilot,
            lambda: any(type(w).__name__ == "Toast" for w in visible_widgets(app.screen)),
            what="the toast shown",
        )
        toast = next(w for w in visible_widgets(app.screen) if type(w).__name__ == "Toast")
        assert toast.region.overlaps(rows.region), "the toast should be laid over the mirror for this test"
        assert unobstructed_region(visible_widgets(app.screen), rows) is None
