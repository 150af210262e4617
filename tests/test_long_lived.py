"""The studio keeps a tree's objects out of the collector's walks in one collection (its runner's first step
adds none), without keeping a replaced tree alive."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from tui_fixtures import SIZE, settle, until  # noqa: F401

from runtime.engine.long_lived import FREEZE_FROM, freezes
from studio.app import StudioApp
from studio.session import DebugSession, RunState

LARGE_TREE = Path(__file__).resolve().parent.parent / "sample_trees" / "large_tree.py"


async def test_a_large_tree_on_screen_is_frozen_and_a_restart_lets_the_old_one_go():
    session = DebugSession.load(str(LARGE_TREE))
    assert len(session.runner.nodes) >= FREEZE_FROM
    app = StudioApp(session)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await until(lambda: gc.get_freeze_count() > 0)
            assert gc.get_freeze_count() >= len(session.runner.nodes)
            frozen_by_the_studio = freezes()
            await pilot.press("n")
            await until(lambda: session.runner.tick_count == 1)
            assert freezes() == frozen_by_the_studio, "the runner collected again: the studio had frozen its tree"
            old_root = weakref.ref(session.runner.root)
            await pilot.press("r")
            await until(lambda: session.run_state == RunState.READY and session.runner.root is not old_root())
            await settle(app, pilot)
            gc.collect()
            assert old_root() is None, "the tree a restart replaced is still alive"
    finally:
        gc.unfreeze()
