"""Pane behaviour that needs no run: streamed text, bursts of events, a 10,000-node tree."""

from __future__ import annotations

import time

from textual.app import App, ComposeResult
from textual.widgets.tree import TreeNode
from tui_fixtures import ROOT, SIZE, settle, steady_terminal  # noqa: F401

from runtime.engine.events import RuntimeEvent
from studio.app import StudioApp
from studio.session import DebugSession
from studio.widgets.events_pane import EventsPane
from studio.widgets.tree_pane import TreePane


class EventsApp(App):
    def compose(self) -> ComposeResult:
        yield EventsPane()


def event(seq: int, type_: str, node: str | None = None, **payload) -> RuntimeEvent:
    return RuntimeEvent(seq=seq, type=type_, time=0.0, tick=1, node=node, run_id="r", payload=payload)


async def test_text_deltas_extend_one_line_as_they_arrive():
    app = EventsApp()
    async with app.run_test() as pilot:
        pane = app.query_one(EventsPane)
        pane.add([event(1, "model.call.started", "A/llm"), event(2, "text.delta", "A/llm", delta="Hel")])
        pane.add([event(3, "text.delta", "A/llm", delta="lo, ")])  # a later batch continues the line
        pane.add([event(4, "text.delta", "A/llm", delta="world\nbye"), event(5, "model.call.completed", "A/llm")])
        await pilot.pause()
        assert len(pane.lines) == 3
        assert pane.lines[1].endswith("Hello, world ⏎ bye")
        assert "model.call.completed" in pane.lines[2]


async def test_a_burst_of_events_is_one_write():
    app = EventsApp()
    async with app.run_test() as pilot:
        pane = app.query_one(EventsPane)
        burst = [event(i, "log", "A", message=f"line {i}") for i in range(20_000)]
        started = time.perf_counter()
        pane.add(burst)
        await pilot.pause()
        assert time.perf_counter() - started < 2.0
        assert pane.line_count == 20_000


async def test_a_large_tree_relabels_only_what_is_on_screen(monkeypatch):
    relabelled: list[str] = []
    original = TreeNode.set_label

    def counting(node, label):
        relabelled.append(node.data)
        original(node, label)

    session = DebugSession.load(str(ROOT / "sample_trees" / "large_tree.py"))
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        monkeypatch.setattr(TreeNode, "set_label", counting)
        await pilot.press("n")
        await settle(app, pilot)
        assert len(session.last_report.changed) > 500
        assert 0 < len(relabelled) <= SIZE[1]  # one screenful at most, not every changed node
        pane = app.main.query_one(TreePane)
        deep = list(session.last_report.changed)[-1]  # last in tree order: far off screen
        relabelled.clear()
        assert pane.jump(deep)
        await pilot.pause()
        assert deep in relabelled  # relabelled when it scrolled into view
