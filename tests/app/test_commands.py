"""The one command table: every entry is reachable, named once, and bound to something real."""

from __future__ import annotations

import re

from nbs_tui.app import NbsApp
from nbs_tui.dashboard.key_table import COMMANDS, bindings, scope_bindings
from nbs_tui.dashboard.main_screen import DashboardScreen
from nbs_tui.dashboard.operator_actions import OperatorActions
from nbs_tui.widgets.answer_card import AnswerScreen
from nbs_tui.widgets.queue_view import QueueView
from nbs_tui.widgets.review_screen import ReviewScreen
from nbs_tui.widgets.scrollback import Scrollback

SCOPES: dict[str, type] = {
    "": DashboardScreen,
    "scrollback": Scrollback,
    "answer": AnswerScreen,
    "review": ReviewScreen,
    "queue": QueueView,
}
"""Who binds each scope's commands."""


def test_ids_are_unique_and_every_bound_action_exists() -> None:
    ids = [command.id for command in COMMANDS]
    assert len(ids) == len(set(ids))
    for command in COMMANDS:
        if not command.bound:
            assert command.action == "" and not command.in_palette, command.id
            continue
        namespace, _, action = command.action.rpartition(".")
        name = re.match(r"\w+", action)
        owner = NbsApp if namespace == "app" else SCOPES[command.scope]
        assert name is not None and callable(getattr(owner, f"action_{name.group(0)}", None)), command.id
        part = re.fullmatch(r"operator\('(\w+)'\)", action)  # the dashboard's operator actions, by name
        assert part is None or callable(getattr(OperatorActions, part.group(1), None)), command.id


def test_no_key_is_bound_twice_in_one_scope() -> None:
    for scope in SCOPES:
        found = bindings() if not scope else scope_bindings(scope)
        keys = [key for binding in found for key in binding.key.split(",")]
        assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)


def test_the_app_and_each_scope_bind_the_table_in_order() -> None:
    assert [b.id for b in DashboardScreen.BINDINGS if not isinstance(b, tuple)] == [
        c.id for c in COMMANDS if c.bound and not c.scope
    ]
    assert [b.id for b in Scrollback.BINDINGS if not isinstance(b, tuple)] == [
        c.id for c in COMMANDS if c.scope == "scrollback"
    ]
    assert [b.id for b in AnswerScreen.BINDINGS if not isinstance(b, tuple)] == [
        c.id for c in COMMANDS if c.scope == "answer"
    ]
    assert [b.id for b in ReviewScreen.BINDINGS if not isinstance(b, tuple)] == [
        c.id for c in COMMANDS if c.scope == "review"
    ]


def test_palette_names_are_distinct() -> None:
    names = [command.palette or command.label for command in COMMANDS if command.in_palette]
    assert len(names) == len(set(names))
