"""Following a run live (issue #15 point 4): the studio opened on a recorded run that another
writer is still recording shows each checkpoint and its events as they land, says when the
writer has finished (or died: the run is abandoned, #28.5), and stops listening when it closes.
SQLite polls; PostgreSQL LISTENs."""

from __future__ import annotations

import asyncio
import threading

import psycopg
from tui_fixtures import REACT_CALCULATOR, SIZE, settle, steady_terminal  # noqa: F401
from writer_process import start_writer

from runtime.engine.events import EventType
from runtime.memory.checkpoint.liveness import when
from studio.app import StudioApp
from studio.session import DebugSession
from studio.widgets.events_pane import EventsPane
from studio.widgets.status_line import StatusLine
from studio.widgets.timeline import Timeline

TURNS = 400  # loop turns a condition is given (each one a short pause): generous, never a speed bound


async def until(condition, pause=None) -> None:
    """Wait, a bounded number of loop turns, for `condition()` (what the follower must bring)."""
    for _ in range(TURNS):
        if condition():
            return
        await (pause() if pause is not None else asyncio.sleep(0.05))
    assert condition()


def followers() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("follow ")]


async def writing(store_name: str, ticks: int) -> DebugSession:
    """Another writer (its own store connection) part-way through a run of the ReAct calculator."""
    writer = DebugSession.load(str(REACT_CALCULATOR), db=store_name)
    for _ in range(ticks):
        await writer.step()
    return writer


async def test_a_followed_run_shows_each_checkpoint_as_it_lands_and_its_end(store_name):
    writer = await writing(store_name, 2)
    session = DebugSession.open_recorded(store_name, writer.run_id)
    assert session.frame.tick == 2 and len(session.checkpoints()) == 3
    events = len(session.frame_events())
    store_events, read = session.store.events, []  # what each of the follower's looks read
    session.store.events = lambda *args: read.append(store_events(*args)) or read[-1]
    stop = session.follow()
    try:
        assert session.message == "following: the writer is recording"
        await writer.step()
        await until(lambda: session.frame.tick == 3)
        newest = writer.store.latest(writer.run_id)
        assert session.viewing.id == newest.id  # it showed the newest checkpoint: it moved on with it
        assert session.message == "following: tick 3 just landed"
        assert len(session.frame_events()) > events
        assert [e.seq for e in session.frame_events()] == [e.seq for _, e in writer.store.events(writer.run_id)
                                                          if e.seq <= newest.event_position]

        session.select_checkpoint(session.checkpoints()[1].id)  # the user looks at the past: it stays there
        await writer.step()
        await until(lambda: "tick 4 just landed" in session.message)
        assert session.frame.tick == 1

        session.select_checkpoint(session.store.latest(writer.run_id).id)
        session.edit_state(None, "final_answer", "edited here")  # staged for a fork from the newest
        await writer.step()
        await until(lambda: "tick 5 just landed" in session.message)
        assert session.frame.tick == 4 and len(session.staged) == 1  # the view stays where the edit is

        assert (await writer.continue_()).kind == "finished"
        await until(lambda: "finished" in session.message)
        assert session.message == "writer finished: run completed" and session.frame.tick == 4  # still edited there
        await until(lambda: not followers())  # nothing more can land: following has ended by itself
        assert sum(map(len, read)) == len(store_events(writer.run_id)) - events  # each look read what landed
        session.select_checkpoint(session.store.latest(writer.run_id).id)
        opened = DebugSession.open_recorded(store_name, writer.run_id)  # the whole run in one read
        assert [(e.seq, e.type, e.branch, e.between) for e in session.frame_events()] == \
            [(e.seq, e.type, e.branch, e.between) for e in opened.frame_events()]
        opened.store.close()
    finally:
        stop()
        writer.store.close()
        session.store.close()
    assert not followers()


async def test_a_followed_run_that_waits_for_an_approval_says_so(store_name):
    """A run recorded by a studio session says it is suspended, as a served one does: its follower
    tells, and goes on following once the approval is granted."""
    writer = DebugSession.load(str(REACT_CALCULATOR.parent / "approval_guard.py"), db=store_name)
    await writer.step()
    session = DebugSession.open_recorded(store_name, writer.run_id)
    stop = session.follow()
    try:
        assert (await writer.continue_()).kind == "suspended"
        await until(lambda: "suspended" in session.message)
        assert session.message == f"following: tick {writer.tick}, run suspended"
        assert [e.type for e in session.frame_events()][-1] == "run.suspended"
        writer.approve(writer.pending_approvals()[0].id)
        assert (await writer.continue_()).kind == "finished"
        await until(lambda: "finished" in session.message)
        assert session.message == "writer finished: run completed"
    finally:
        stop()
        writer.store.close()
        session.store.close()


def status(app) -> str:
    return str(app.main.query_one(StatusLine).render())


async def test_the_studio_follows_a_run_another_writer_records(store_name):
    writer = await writing(store_name, 1)
    session = DebugSession.open_recorded(store_name, writer.run_id)
    app = StudioApp(session)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            timeline, pane = app.main.query_one(Timeline), app.main.query_one(EventsPane)
            assert timeline.row_count == 2 and "following: the writer is recording" in status(app)
            assert followers()
            lines = pane.line_count
            for tick in (2, 3):
                await writer.step()
                await until(lambda tick=tick: timeline.row_count == tick + 1, pilot.pause)
                await until(lambda tick=tick: f"tick {tick} just landed" in status(app), pilot.pause)
                assert f"│ tick {tick} │" in status(app) and pane.line_count > lines
                lines = pane.line_count
            await writer.continue_()
            await until(lambda: "writer finished: run completed" in status(app), pilot.pause)
            assert timeline.row_count == len(writer.checkpoints()) and "root ✔ SUCCESS" in status(app)
            assert pane.lines[-1].split()[2] == "run.completed"
    finally:
        writer.store.close()
        session.store.close()
    assert not followers()


async def test_following_keeps_the_timeline_cursor_where_the_user_put_it(store_name):
    """Reading an older checkpoint's row while the run grows: the view follows the newest, the
    cursor stays on the row the user moved it to; on the newest row it goes on following."""
    writer = await writing(store_name, 2)
    session = DebugSession.open_recorded(store_name, writer.run_id)
    app = StudioApp(session)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            timeline = app.main.query_one(Timeline)
            timeline.focus()
            assert timeline.cursor_row == timeline.row_count - 1 == 2
            await pilot.press("up")
            await writer.step()
            await until(lambda: "tick 3 just landed" in status(app), pilot.pause)
            assert timeline.row_count == 4 and session.viewing.tick == 3  # the view followed
            assert timeline.cursor_row == 1  # the cursor did not
            await pilot.press("down", "down")
            await writer.step()
            await until(lambda: "tick 4 just landed" in status(app), pilot.pause)
            assert timeline.cursor_row == timeline.row_count - 1 == 4
    finally:
        writer.store.close()
        session.store.close()


async def test_closing_the_studio_stops_following_a_run_that_is_still_written(store_name):
    writer = await writing(store_name, 1)
    session = DebugSession.open_recorded(store_name, writer.run_id)
    app = StudioApp(session)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert followers()
            await writer.step()
            await until(lambda: "tick 2 just landed" in status(app), pilot.pause)
        assert not followers()  # the app has closed: nothing listens or polls any more
        await writer.step()  # and nothing is delivered to a session nobody shows
        assert session.frame.tick == 2
    finally:
        writer.store.close()
        session.store.close()


async def test_an_end_written_without_a_checkpoint_still_lands(store_name):
    """How a run ended comes in its last events, written after its last checkpoint: the view
    stays where it is, and its events and status line say so."""
    writer = await writing(store_name, 1)
    session = DebugSession.open_recorded(store_name, writer.run_id)
    app = StudioApp(session)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await writer.step()
            await until(lambda: "tick 2 just landed" in status(app), pilot.pause)
            writer.bus.publish(EventType.RUN_FAILED, {"status": "ERROR", "error": "the service shut down"})
            await until(lambda: "writer finished: run failed" in status(app), pilot.pause)
            assert "│ tick 2 │" in status(app)
            assert session.frame_events()[-1].type == EventType.RUN_FAILED
            assert app.main.query_one(EventsPane).lines[-1].split()[2] == "run.failed"
    finally:
        writer.store.close()
        session.store.close()


async def test_a_finished_run_is_not_followed(store_name):
    writer = await writing(store_name, 0)
    await writer.continue_()
    session = DebugSession.open_recorded(store_name, writer.run_id)
    try:
        session.follow()
        assert not followers() and "following" not in session.message
    finally:
        writer.store.close()
        session.store.close()


async def test_a_follower_whose_server_connection_is_lost_says_so(postgres_url):
    writer = await writing(postgres_url, 1)
    session = DebugSession.open_recorded(postgres_url, writer.run_id)
    stop = session.follow()
    try:
        await until(lambda: session.store._listener is not None)
        listener = session.store._listener.info.backend_pid
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (listener,))
        await until(lambda: "stopped following" in session.message)
        assert session.message.startswith("stopped following: postgresql://jianmu@")
        assert "lost the connection to the PostgreSQL server" in session.message
        await until(lambda: not followers())
    finally:
        stop()
        writer.store.close()
        session.store.close()


async def test_a_followed_run_whose_writer_dies_is_abandoned_in_the_status_line(store_name):
    """kill -9 of the writer (#28.5): following says the run is abandoned and when its writer was
    last seen, instead of "the writer is recording" for ever."""
    writer, run_id = start_writer(store_name)
    try:
        session = DebugSession.open_recorded(store_name, run_id)
        app = StudioApp(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert "following: the writer is recording" in status(app)
            writer.kill()
            writer.wait()
            await until(lambda: "abandoned" in session.message, pilot.pause)
            (run,) = session.store.runs(run_id)
            assert session.message == f"abandoned, last seen {when(run.writer.seen)}: its writer is gone"
            await until(lambda: session.message in status(app), pilot.pause)
            assert followers()  # still listening: another process may take the run over
        session.store.close()
    finally:
        writer.kill()
        writer.wait()


async def test_a_run_opened_after_its_writer_died_is_abandoned_from_the_start(store_name):
    writer, run_id = start_writer(store_name)
    writer.kill()
    writer.wait()
    session = DebugSession.open_recorded(store_name, run_id)
    stop = session.follow()
    try:
        (run,) = session.store.runs(run_id)
        assert session.message == f"abandoned, last seen {when(run.writer.seen)}: its writer is gone"
    finally:
        stop()
        session.store.close()
