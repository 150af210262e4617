"""Opening the studio makes no garbage collections until its first frame, then collects once."""

from __future__ import annotations

import argparse
import gc

from tui_fixtures import SIZE, TEXT_PIPELINE, settle, until  # noqa: F401

from studio import cli, startup
from studio.app import StudioApp
from studio.session import DebugSession


def test_open_loads_the_tree_and_starts_the_app_with_the_collector_off(monkeypatch, tmp_path):
    seen = {}

    def run(app):
        seen["collecting"] = gc.isenabled()
        seen["nodes"] = len(app.session.runner.nodes)

    monkeypatch.setattr(StudioApp, "run", run)
    monkeypatch.chdir(tmp_path)
    assert cli.open_studio(argparse.Namespace(tree=str(TEXT_PIPELINE), db=str(tmp_path / "runs.db"))) == 0
    assert seen == {"collecting": False, "nodes": seen["nodes"]} and seen["nodes"] > 1
    assert gc.isenabled(), "an app that never drew a frame leaves the collector off"


async def test_the_first_frame_turns_the_collector_on_again_with_one_full_collection(tmp_path):
    session = DebugSession.load(str(TEXT_PIPELINE), db=tmp_path / "runs.db")
    full = gc.get_stats()[2]["collections"]
    with startup.paused():
        assert not gc.isenabled()
        app = StudioApp(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await until(gc.isenabled)
            assert gc.get_stats()[2]["collections"] > full, "what the start left is collected once"


def test_an_application_that_turned_the_collector_off_keeps_it_off():
    gc.disable()
    try:
        with startup.paused():
            startup.resume(10)
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
