"""The new-agent form on a dashboard of several hosts: the operator picks the host it starts on."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import Input, Select, Static

from nbs_tui.core.fleet.agent_spec import NewAgent
from nbs_tui.widgets.new_agent_form import NewAgentScreen


class FormHost(App[None]):
    def __init__(self, form: NewAgentScreen) -> None:
        super().__init__()
        self.form = form
        self.result: list[NewAgent | None] = []

    def compose(self) -> ComposeResult:
        yield Static("behind the form")

    def on_mount(self) -> None:
        self.push_screen(self.form, self.result.append)


async def fill_and_start(app: FormHost, pilot: Any) -> None:
    app.form.query_one("#new-folder", Input).value = "/srv/api"
    app.form.query_one("#new-name", Input).value = "api"
    app.form.query_one("#new-name", Input).focus()
    await pilot.press("ctrl+s")
    await pilot.pause()


async def test_the_chosen_host_goes_into_the_spec() -> None:
    app = FormHost(NewAgentScreen([], "local: default", ["local", "hosta", "hostb"], "local"))
    async with app.run_test(size=(120, 50)) as pilot:
        host = app.form.query_one("#new-host", Select)
        assert host.value == "local"  # the place it would start on unasked
        host.value = "hostb"
        await fill_and_start(app, pilot)
    (spec,) = app.result
    assert spec is not None and (spec.directory, spec.name, spec.host) == ("/srv/api", "api", "hostb")


async def test_one_server_has_no_host_choice_and_its_title_says_where() -> None:
    app = FormHost(NewAgentScreen([], "tmux -L work", [], None))
    async with app.run_test(size=(120, 50)) as pilot:
        assert not app.form.query("#new-host")
        assert "tmux -L work" in str(app.form.query_one("#new-title", Static).render())
        await fill_and_start(app, pilot)
    (spec,) = app.result
    assert spec is not None and spec.host is None


async def test_the_chosen_account_goes_into_the_spec_and_auto_is_offered() -> None:
    app = FormHost(NewAgentScreen([], "tmux -L work", [], None, ["work", "home"]))
    async with app.run_test(size=(120, 50)) as pilot:
        account = app.form.query_one("#new-account", Select)
        assert account.is_blank()  # unasked: the pane's own environment (~/.claude)
        account.value = "auto"  # offered (a value not offered raises)
        account.value = "home"
        await fill_and_start(app, pilot)
    (spec,) = app.result
    assert spec is not None and spec.account == "home"


async def test_no_accounts_in_the_config_no_account_choice() -> None:
    app = FormHost(NewAgentScreen([], "tmux -L work", [], None))
    async with app.run_test(size=(120, 50)) as pilot:
        assert not app.form.query("#new-account")
        await fill_and_start(app, pilot)
    (spec,) = app.result
    assert spec is not None and spec.account is None
