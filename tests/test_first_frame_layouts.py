"""The studio's opening lays the screen out once for its panes' sizes, not again for what a size
changes (the first frame at 100,000 nodes waited behind each further layout, and Textual's Footer
rebuilt its keys after the first frame, a layout of its own): the keys line has its keys from the
first compose, the status line its height from the screen's width, and the state pane redraws at a
new size without a layout (its extent is its widest line's, not its size). Nor is anything styled
twice before the first frame (a key, the focus)."""

from __future__ import annotations

from textual.geometry import Region
from textual.screen import Screen
from textual.widgets._footer import FooterKey
from tui_fixtures import SIZE, pipeline_session, settle, steady_terminal  # noqa: F401

from studio.app import StudioApp
from studio.widgets.footer import KeysFooter
from studio.widgets.state_pane import StatePane
from studio.widgets.status_line import StatusLine


async def test_the_keys_line_is_never_rebuilt_and_the_status_line_takes_one_height(monkeypatch):
    rebuilt, heights = [], []
    recompose, fit = KeysFooter.recompose, StatusLine._fit
    monkeypatch.setattr(KeysFooter, "recompose", lambda self: (rebuilt.append(1), recompose(self))[1])

    def noted_fit(self):
        fit(self)
        heights.append(self.styles.height.value)
    monkeypatch.setattr(StatusLine, "_fit", noted_fit)
    app = StudioApp(pipeline_session())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        footer = app.main.query_one(KeysFooter)
        assert "Step" in " ".join(str(key.description) for key in footer.children)
        assert rebuilt == [] and heights and set(heights) == {1}


async def test_the_state_pane_redraws_at_a_new_size_without_a_layout(monkeypatch):
    app = StudioApp(pipeline_session())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("n")
        await settle(app, pilot)
        pane = app.main.query_one(StatePane)
        width = pane.size.width
        laid_out, invalidate = [], StatePane._invalidate  # (Textual's Tree: caches cleared, a layout asked)
        monkeypatch.setattr(StatePane, "_invalidate", lambda self: (laid_out.append(1), invalidate(self))[1])
        await pilot.resize_terminal(SIZE[0] + 20, SIZE[1])
        await settle(app, pilot)
        assert pane.size.width != width and laid_out == []
        lines = [strip.text for strip in pane.render_lines(Region(0, 0, *pane.size))]
        assert any("text" in line for line in lines)
        assert {len(line) for line in lines} == {pane.size.width}, lines  # drawn at the new width



async def test_the_opening_styles_each_key_once(monkeypatch):
    """A FooterKey starts compact and its binding to the footer unmade it: each key was styled twice
    before the first frame (the palette's key, not bound, stays compact)."""
    compacted = []
    add_class = FooterKey.add_class
    monkeypatch.setattr(FooterKey, "add_class", lambda self, *names, **kw: (
        compacted.extend(names if "-command-palette" not in self.classes else ()), add_class(self, *names, **kw))[1])
    app = StudioApp(pipeline_session())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert compacted == []


async def test_the_opening_focuses_the_tree_first(monkeypatch):
    """The search box (the first focusable widget) took the focus before the tree: the panes restyled
    for each."""
    focused = []
    set_focus = Screen.set_focus
    monkeypatch.setattr(Screen, "set_focus", lambda self, widget, *a, **kw: (
        focused.append(widget.id if widget else None), set_focus(self, widget, *a, **kw))[1])
    app = StudioApp(pipeline_session())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.focused is app.main.query_one("#tree-view") and focused[0] == "tree-view", focused
