"""The studio draws what a tree, a store or a model supplied; it never sends it to the terminal to obey.
A node name or a state value holding ESC, NUL or a C1 control is drawn as a visible picture (`␛`, `␀`)."""

from __future__ import annotations

from py_trees.behaviours import Success
from py_trees.composites import Sequence
from pydantic import BaseModel
from textual.content import Content
from tui_fixtures import SIZE

from runtime import Agent
from studio.app import StudioApp
from studio.loader import LoadedTree
from studio.session import DebugSession

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x00\x9b31m"


class S(BaseModel):
    note: str = "value " + HOSTILE


def test_text_holding_control_characters_is_drawn_as_pictures():
    from rich.text import Text

    assert Text("a\x1b[31mb\x00c\x7fd\x9be\tf\ng").plain == "a␛[31mb␀c␡d\ufffde\tf\ng"
    assert Content("title\x1b]0;x\x07").plain == "title␛]0;x"  # BEL dropped, as the libraries always did


async def test_the_studio_shows_hostile_names_and_values_without_escapes(tmp_path):
    root = Sequence("Root" + HOSTILE, memory=True, children=[Success("Leaf" + HOSTILE)])
    session = DebugSession(LoadedTree(Agent(root, state_schema=S), tmp_path / "hostile.py", "build", {}))
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        drawn = "\n".join("".join(segment.text for segment in strip)
                           for strip in app.screen._compositor.render_full_update().strips)
    assert "\x1b" not in drawn and "\x00" not in drawn and "\x9b" not in drawn
    assert "Root␛]0;owned␇␛[2J␀\ufffd31m  Sequence" in drawn  # the tree pane (its BEL a picture too, as the timeline)
    assert "Root\ufffd]0;owned" in drawn  # the events pane's lines (its own, faster, replacement)
