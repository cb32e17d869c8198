"""What `nbs_tui.widgets.textual_internals` relies on in Textual, checked on the installed release.

Each test names one private part of Textual the dashboard uses and checks the behaviour relied
on, not just that the name exists: run against a new Textual (docs/textual.md says how), a
failure here names what changed. The last tests keep the rest of the code honest: no other
module reaches into Textual's private names, and no class of ours takes a private name that
its Textual base uses for itself.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import importlib
import inspect
import io
import pkgutil
import re
from pathlib import Path
from typing import Any, ClassVar

import grimp
import pytest
import textual
from rich.console import Console
from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.driver import Driver
from textual.geometry import Region
from textual.reactive import Reactive
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Footer, Static

import nbs_tui
from nbs_tui.widgets.textual_internals import (
    FooterKey,
    LookReadOncePerPaint,
    direct_paint_supported,
    footer_bindings_ready,
    forget_rendered_lines,
    in_batch_update,
    output_look,
    report_exception,
    synchronized_output,
    terminal_driver,
    update_pending,
    visible_widgets,
)
from tests.app.textual_probes import full_repaint, notifications_kept, regions_to_repaint, wheel_up
from tests.conftest import REPO_ROOT

INTERNALS = REPO_ROOT / "nbs_tui" / "widgets" / "textual_internals.py"
PROBES = REPO_ROOT / "tests" / "app" / "textual_probes.py"


class Rows(Widget):
    """Ten rows of text; counts the rows Textual asks it to render."""

    DEFAULT_CSS = "Rows { height: 10; width: 20; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rendered: list[int] = []

    def render_line(self, y: int) -> Strip:
        self.rendered.append(y)
        return Strip([Segment(f"row {y}".ljust(20))])


class OnceRows(LookReadOncePerPaint):
    DEFAULT_CSS = "OnceRows { height: 10; width: 20; color: red; background: blue; }"

    def render_line(self, y: int) -> Strip:
        return Strip([Segment(f"row {y}".ljust(20))]).apply_style(self.rich_style)


class PlainRows(Widget):
    DEFAULT_CSS = "PlainRows { height: 10; width: 20; color: red; background: blue; }"

    def render_line(self, y: int) -> Strip:
        return Strip([Segment(f"row {y}".ljust(20))]).apply_style(self.rich_style)


class Overlay(Static):
    DEFAULT_CSS = "Overlay { layer: above; width: 10; height: 3; }"


class Probe(App[None]):
    CSS = "Screen { layers: below above; }"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("x", "nothing", "Do nothing")]

    def compose(self) -> ComposeResult:
        yield Rows(id="rows")
        yield Overlay("over", id="overlay")
        yield Footer()

    def action_nothing(self) -> None:
        pass


async def test_the_terminal_driver_is_the_running_driver() -> None:
    app = Probe()
    assert terminal_driver(app) is None, "no driver before the app runs"
    async with app.run_test() as pilot:
        await pilot.pause()
        driver = terminal_driver(app)
        assert isinstance(driver, Driver)
        assert callable(driver.write) and callable(driver.flush)


async def test_an_exception_reported_from_a_loop_callback_ends_the_app_with_it() -> None:
    app = Probe()
    with pytest.raises(RuntimeError, match="broke outside a handler"):
        async with app.run_test() as pilot:
            await pilot.pause()
            asyncio.get_running_loop().call_soon(report_exception, app, RuntimeError("broke outside a handler"))
            await pilot.pause(1)
    assert app.return_code == 1


async def test_a_batch_update_is_seen_while_it_is_open() -> None:
    app = Probe()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert not in_batch_update(app)
        with app.batch_update():
            assert in_batch_update(app)
            with app.batch_update():
                assert in_batch_update(app)
            assert in_batch_update(app)
        assert not in_batch_update(app)


async def test_synchronized_output_is_off_until_a_terminal_says_it_has_it() -> None:
    app = Probe()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert type(app._sync_available) is bool
        assert synchronized_output(app) is False  # the headless driver answers nothing


async def test_the_compositor_map_is_front_first_and_kept_until_the_arrangement_changes() -> None:
    app = Probe()
    async with app.run_test(size=(40, 20)) as pilot:
        await pilot.pause()
        rows, overlay = app.query_one(Rows), app.query_one(Overlay)
        visible = visible_widgets(app.screen)
        assert rows in visible and overlay in visible
        region, clip = visible[rows]
        assert isinstance(region, Region) and isinstance(clip, Region)
        assert region == rows.region
        order = list(visible)
        assert order.index(overlay) < order.index(rows), "the overlay is drawn over the rows: it comes first"
        assert visible_widgets(app.screen) is visible, "the same map while nothing moved"
        await app.mount(Static("more"))
        await pilot.pause()
        assert visible_widgets(app.screen) is not visible, "a new map once the arrangement changed"


async def test_a_pending_layout_or_repaint_is_seen_until_the_screen_updates() -> None:
    app = Probe()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert not update_pending(app.screen)
        app.screen.refresh(layout=True)
        assert update_pending(app.screen)
        await pilot.pause()
        assert not update_pending(app.screen)
        app.screen.refresh()
        assert update_pending(app.screen)
        await pilot.pause()
        assert not update_pending(app.screen)


async def test_forgotten_lines_are_rendered_afresh_and_only_they() -> None:
    app = Probe()
    async with app.run_test(size=(40, 20)) as pilot:
        await pilot.pause()
        rows = app.query_one(Rows)
        whole = Region(0, 0, rows.size.width, rows.size.height)
        rows.render_lines(whole)
        rows.rendered.clear()
        rows.render_lines(whole)
        assert rows.rendered == [], "Textual keeps rendered lines until told otherwise"
        forget_rendered_lines(rows, Region(0, 3, rows.size.width, 2))
        rows.render_lines(whole)
        assert sorted(rows.rendered) == [3, 4]


async def test_the_output_look_changes_with_the_theme_and_reads_on_this_release() -> None:
    app = Probe()
    async with app.run_test() as pilot:
        await pilot.pause()
        filters, ansi_theme, native = output_look(app)
        assert isinstance(filters, tuple) and ansi_theme is app.ansi_theme
        assert native is None or isinstance(native, bool)
        if hasattr(App, "native_ansi_color"):  # Textual 8.2 on
            assert native is app.native_ansi_color
        before = output_look(app)
        app.theme = "textual-light" if app.current_theme.dark else "textual-dark"
        await pilot.pause()
        assert output_look(app) != before, "a theme of the other kind has another ANSI theme"


async def test_the_direct_painter_finds_what_it_reads() -> None:
    app = Probe()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert direct_paint_supported(app, app.query_one(Rows))


async def test_the_footer_shows_footer_keys_once_its_bindings_are_ready() -> None:
    assert not footer_bindings_ready(Footer()), "not ready before any screen said so"
    assert issubclass(FooterKey, Widget)
    assert isinstance(FooterKey.compact, Reactive), "nbs_tui.widgets.footer sets it on each key"
    app = Probe()
    async with app.run_test() as pilot:
        await pilot.pause()
        footer = app.query_one(Footer)
        assert footer_bindings_ready(footer)
        keys = list(footer.query(FooterKey))
        assert any("Do nothing" in str(key.description) for key in keys)


async def test_textual_reads_the_look_through_the_widget_once_per_paint_with_the_mixin(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("rich_style", "background_colors"):
        assert isinstance(inspect.getattr_static(DOMNode, name), property), f"DOMNode.{name} is no longer a property"

    class WithBoth(App[None]):
        def compose(self) -> ComposeResult:
            yield OnceRows()
            yield PlainRows()

    app = WithBoth()
    async with app.run_test(size=(40, 30)) as pilot:
        await pilot.pause()
        once, plain = app.query_one(OnceRows), app.query_one(PlainRows)
        assert once.size == plain.size == (20, 10)
        walks: dict[str, dict[str, int]] = {"once": {}, "plain": {}}
        for name in ("rich_style", "background_colors"):
            walk = inspect.getattr_static(DOMNode, name)

            def counted(node: DOMNode, walk: property = walk, name: str = name) -> object:
                for label, widget in (("once", once), ("plain", plain)):
                    if node is widget:
                        walks[label][name] = walks[label].get(name, 0) + 1
                return walk.fget(node)  # type: ignore[misc]

            monkeypatch.setattr(DOMNode, name, property(counted))
        plain_strips: list[Strip] = []
        once_strips: list[Strip] = []
        with once.look_read_once():  # as the direct painter renders the rows it has not seen: one by one
            for y in range(10):
                for widget, strips in ((plain, plain_strips), (once, once_strips)):
                    forget_rendered_lines(widget, Region(0, y, 20, 1))  # rendered afresh, as after a change
                    strips.extend(widget.render_lines(Region(0, y, 20, 1)))
        monkeypatch.undo()
        assert [list(s) for s in once_strips] == [list(s) for s in plain_strips], "the same rows either way"
        assert walks["once"] == {"rich_style": 1, "background_colors": 1}
        # Textual asks the widget for its background once per `render_lines` (our rows ask for the
        # style): if it stopped asking through the widget, the mixin would save nothing
        assert walks["plain"] == {"rich_style": 10, "background_colors": 10}, walks["plain"]


# -- what the tests look inside with (tests/app/textual_probes.py) -------------------------------


async def test_the_wheel_reaches_the_widget_under_it() -> None:
    class Wheel(Rows):
        turned = 0

        def on_mouse_scroll_up(self) -> None:
            Wheel.turned += 1

    class WithWheel(App[None]):
        def compose(self) -> ComposeResult:
            yield Wheel()

    app = WithWheel()
    async with app.run_test() as pilot:
        await pilot.pause()
        await wheel_up(pilot, app.query_one(Wheel), (2, 2))
        await pilot.pause()
        assert Wheel.turned == 1


async def test_a_refreshed_region_waits_to_be_repainted() -> None:
    app = Probe()
    async with app.run_test(size=(40, 20)) as pilot:
        await pilot.pause()
        rows = app.query_one(Rows)
        rows.refresh(Region(0, 4, 20, 1))
        assert [(r.y, r.height) for r in regions_to_repaint(rows)] == [(4, 1)]
        await pilot.pause()
        assert not regions_to_repaint(rows)


async def test_a_full_repaint_holds_the_screen() -> None:
    app = Probe()
    async with app.run_test(size=(40, 20)) as pilot:
        await pilot.pause()
        update = full_repaint(app.screen)
        assert update is not None
        out = io.StringIO()
        Console(file=out, force_terminal=True, width=40).print(update, end="")
        assert "row 7" in out.getvalue() and "over" in out.getvalue()


async def test_the_notifications_kept_count_each_notify() -> None:
    app = Probe()
    async with app.run_test(size=(40, 20)) as pilot:  # toasts not shown: still kept
        assert notifications_kept(app) == 0
        app.notify("one")
        app.notify("two")
        await pilot.pause()
        assert notifications_kept(app) == 2


# -- the rest of the code keeps out of Textual's private parts -----------------------------------


def _textual_private_names() -> set[str]:
    """Private attribute and method names Textual's own source defines (``self._x = ``, ``def _x``)."""
    names: set[str] = set()
    for path in Path(textual.__file__).parent.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        names.update(re.findall(r"\bdef (_[a-z]\w*)", text))
        names.update(re.findall(r"self\.(_[a-z]\w*)\s*(?::[^=\n]*)?=(?!=)", text))
    return names


def _reaches_textual() -> set[Path]:
    """The `nbs_tui` files that import Textual, themselves or through other modules: the others
    (the core, the ports, the sidecar and the runtime, kept apart from the UI by the import
    contracts) never hold a Textual object, so a private name there is their own (the sidecar's
    runner is joined from several modules, each using methods the others define)."""
    graph = grimp.build_graph("nbs_tui", include_external_packages=True, cache_dir=None)
    reaching: set[Path] = set()
    for module in graph.modules:
        if module.startswith("nbs_tui") and graph.chain_exists(importer=module, imported="textual", as_packages=True):
            base = REPO_ROOT.joinpath(*module.split("."))
            reaching.update(f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file())
    return reaching


def _our_python_files() -> list[Path]:
    ui = _reaches_textual()
    assert REPO_ROOT / "nbs_tui" / "app.py" in ui, "the import graph was not read"
    files = [f for f in sorted((REPO_ROOT / "nbs_tui").rglob("*.py")) if f in ui]
    files += sorted((REPO_ROOT / "tests").rglob("*.py"))
    files += sorted((REPO_ROOT / "bench").glob("*.py"))
    return [f for f in files if f not in (INTERNALS, PROBES, Path(__file__).resolve())]


def _names_we_define(trees: dict[Path, ast.Module]) -> set[str]:
    """Private names our own code defines (methods, attributes it assigns, functions, classes)."""
    ours: set[str] = set()
    for path, tree in trees.items():
        ours |= _names_defined_in(path, tree)
    return ours


_DEFINED: dict[Path, frozenset[str]] = {}
"""`_names_defined_in` per file: most files are near many others (read once, not once each)."""


def _names_defined_in(path: Path, tree: ast.Module) -> frozenset[str]:
    if path not in _DEFINED:
        ours: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name.startswith("_"):
                ours.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr.startswith("_"):
                ours.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id.startswith("_"):
                ours.add(node.target.id)
            elif isinstance(node, ast.Assign):
                ours.update(t.id for t in node.targets if isinstance(t, ast.Name) and t.id.startswith("_"))
        _DEFINED[path] = frozenset(ours)
    return _DEFINED[path]


def _nbs_modules_imported(tree: ast.Module) -> set[Path]:
    """The files of the `nbs_tui` modules a file imports (``from nbs_tui.x import y`` counts
    ``nbs_tui/x.py`` and, when it is a module, ``nbs_tui/x/y.py``)."""
    files: set[Path] = set()
    for node in ast.walk(tree):
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nbs_tui"):
            modules = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names if alias.name.startswith("nbs_tui")]
        for module in modules:
            base = REPO_ROOT.joinpath(*module.split("."))
            files.update(f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file())
    return files


def test_no_module_but_the_internals_reaches_into_textual_private_names() -> None:
    """Outside `textual_internals` (and the tests' `textual_probes`, and this test), no ``obj._x`` where Textual defines ``_x``
    (unless the file, or an `nbs_tui` module it imports, defines ``_x`` itself), no
    ``getattr``/``hasattr``/``setattr`` of such a name (``monkeypatch.setattr`` included), no
    import from a private Textual module."""
    trees = {path: ast.parse(path.read_text(encoding="utf-8"), str(path)) for path in _our_python_files()}
    every = {path: ast.parse(path.read_text(encoding="utf-8"), str(path)) for path in (REPO_ROOT / "nbs_tui").rglob("*.py")}
    textual_names = _textual_private_names()
    found: list[str] = []
    for path, tree in trees.items():
        where = path.relative_to(REPO_ROOT)
        near = {path: tree, **{f: every[f] for f in _nbs_modules_imported(tree) if f in every}}
        suspects = textual_names - _names_we_define(near)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in suspects:
                found.append(f"{where}:{node.lineno}: .{node.attr}")
            elif isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Name) and node.func.id in _REFLECTION)
                or (isinstance(node.func, ast.Attribute) and node.func.attr in _REFLECTION)
            ):
                named = [a.value for a in node.args if isinstance(a, ast.Constant) and a.value in suspects]
                found.extend(f"{where}:{node.lineno}: {ast.unparse(node.func)}(..., {name!r})" for name in named)
            elif (
                isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("textual")
                and any(part.startswith("_") for part in node.module.split("."))
            ):
                found.append(f"{where}:{node.lineno}: from {node.module} import ...")
    assert found == [], "use nbs_tui.widgets.textual_internals instead:\n" + "\n".join(found)


_REFLECTION = frozenset({"getattr", "hasattr", "setattr", "delattr"})


def test_the_guard_above_sees_a_private_use() -> None:
    """The scan is not blind: the internals module itself is full of what it forbids."""
    tree = ast.parse(INTERNALS.read_text(encoding="utf-8"))
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert {"_driver", "_handle_exception", "_compositor", "_styles_cache"} <= used & _textual_private_names()


def _our_textual_classes() -> list[type[Any]]:
    classes: list[type[Any]] = []
    for info in pkgutil.walk_packages(nbs_tui.__path__, "nbs_tui."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value) and value.__module__ == module.__name__
                and any(base.__module__.startswith("textual") for base in value.__mro__[1:])
            ):
                classes.append(value)
    return classes


def test_no_class_of_ours_takes_a_private_name_its_textual_base_uses() -> None:
    """A method or attribute of ours named like one of Textual's own private ones would replace
    it silently (App has its own ``_select``? then the dashboard's broke it): a Textual release
    that adds such a name fails here. Names Textual's class machinery sets on every subclass are
    not ours and are left out."""
    clashes: list[str] = []
    for cls in _our_textual_classes():
        theirs: set[str] = set()
        for base in cls.__mro__[1:]:
            if base.__module__.startswith("textual"):
                theirs |= _private_names_of_textual_class(base)
        ours: set[str] = set()
        for klass in cls.__mro__:
            if klass.__module__.startswith("nbs_tui"):
                ours |= _private_names_of_our_class(klass)
        clash = sorted((ours & theirs) - _SET_BY_TEXTUAL)
        if clash:
            clashes.append(f"{cls.__module__}.{cls.__qualname__}: {', '.join(clash)}")
    assert clashes == [], "rename these (they shadow Textual's own):\n" + "\n".join(clashes)


@functools.cache
def _private_names_of_textual_class(base: type[Any]) -> frozenset[str]:
    """What a Textual class defines or assigns as private (cached: many of ours share each base,
    and reading a class's source is the slow part of this test)."""
    names = {name for name in vars(base) if name.startswith("_") and not name.startswith("__")}
    names.update(re.findall(r"self\.(_[a-z]\w*)\s*(?::[^=\n]*)?=(?!=)", inspect.getsource(base)))
    return frozenset(names)


@functools.cache
def _private_names_of_our_class(klass: type[Any]) -> frozenset[str]:
    source = inspect.getsource(klass)
    names = set(re.findall(r"\bdef (_[a-z]\w*)", source))
    names.update(re.findall(r"self\.(_[a-z]\w*)\s*(?::[^=\n]*)?=(?!=)", source))
    names.update(name for name in vars(klass) if name.startswith("_") and not name.startswith("__"))
    return frozenset(names)


_SET_BY_TEXTUAL = frozenset(
    {
        "_computes", "_css_type_name", "_css_type_names", "_decorated_handlers", "_inherit_bindings",
        "_inherit_component_classes", "_inherit_css", "_merged_bindings", "_reactives", "_abc_impl",
    }
)
"""What Textual's metaclass and `DOMNode.__init_subclass__` (and ABCMeta) set on every subclass."""
