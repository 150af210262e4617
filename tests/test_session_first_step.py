"""A run's first tick (the first of all, after a restart, a fork, a replay) costs what any tick costs,
and shows that run, never the one before (issue #14 point 6: the first step at 100,000 nodes was ~0.8 s).

The checkpoint a run starts from (its input at tick 0, or a fork's first) is saved outside a tick;
the session remembers it as the runner held it, so the first tick's marks and timeline row decode
nothing from the store, and what it remembers must be what the store holds.
"""

from __future__ import annotations

from py_trees.common import Status
from tui_fixtures import TEXT_PIPELINE, settle, steady_terminal, studio_on  # noqa: F401

from runtime.memory.checkpoint import open_store
from studio.session import DebugSession
from studio.timeline import RunTimeline
from studio.widgets.timeline import Timeline
from studio.widgets.tree_pane import TreePane


def reads(session: DebugSession) -> list[int]:
    """The checkpoint ids the session reads back from its store from now on."""
    read_back: list[int] = []
    get = session.store.get
    session.store.get = lambda checkpoint_id, **kw: read_back.append(checkpoint_id) or get(checkpoint_id, **kw)
    return read_back


async def first_tick_reads(session: DebugSession) -> list[int]:
    """Step once and draw what a step draws (marks, timeline rows); the checkpoints read back meanwhile."""
    started = session.runner.checkpoints.head  # the run's start (a fork's first), or None before any run
    read_back = reads(session)
    await session.step()
    session.marks()
    rows = [row.summary for row in session.checkpoints()]
    read_back = list(read_back)  # the reads below are the test's own
    store = RunTimeline(session.store, session.timeline.names)  # the store read apart from the session
    start = started if started is not None else store.infos(session.run_id)[0].id
    assert session.timeline.saved(start) == store.saved(start)
    head = session.runner.checkpoints.head
    assert session.timeline.saved(head) == store.saved(head)
    assert rows == [store.summary(info) for info in store.infos(session.run_id)]
    return read_back


async def test_a_run_s_first_tick_reads_nothing_back_from_the_store(tmp_path):
    session = DebugSession.load(str(TEXT_PIPELINE), db=tmp_path / "runs.db")
    assert await first_tick_reads(session) == []  # the input checkpoint, remembered as the run started
    await session.restart()
    assert await first_tick_reads(session) == []
    source = session.checkpoints()[1].id
    await session.step()
    await session.fork_from(source)
    assert await first_tick_reads(session) == []
    await session.replay_from(source)
    assert await first_tick_reads(session) == []


def shown_statuses(app) -> dict[str, Status]:
    """Each node's status as the tree pane holds it (what a line shows once drawn), built or not."""
    return app.main.query_one(TreePane).statuses()


def head_statuses(session) -> dict[str, Status]:
    """The head checkpoint's statuses, read from the store apart from the session."""
    store = open_store(session.store.location)
    try:
        statuses = store.get(session.runner.checkpoints.head).statuses
    finally:
        store.close()
    return {path: Status(statuses.get(path, Status.INVALID.value)) for path in session.runner.nodes}


async def test_the_tree_shows_the_new_run_after_a_restart_a_fork_and_a_replay(tmp_path):
    """Each line's status is the new run's (its head checkpoint's, in the store), never the old run's,
    right after the restart, fork or replay and after its first step."""
    async with studio_on("local", TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        async def step() -> None:
            await pilot.press("n")
            await settle(app, pilot)
            await pilot.pause(0.3)  # async work finishes between ticks
            await settle(app, pilot)

        async def shows_the_head(what: str) -> None:
            await settle(app, pilot)
            assert shown_statuses(app) == head_statuses(session), what
            await step()
            assert shown_statuses(app) == head_statuses(session), f"{what}, then a step"

        for _ in range(3):
            await step()
        assert any(status != Status.INVALID for status in shown_statuses(app).values())
        await pilot.press("r")
        await shows_the_head("restart")
        for _ in range(2):
            await step()
        source = session.checkpoints()[1].id  # tick 1: other statuses than the head's (tick 3)
        await session.fork_from(source)
        app.main.drain()
        await shows_the_head("fork")
        await session.replay_from(source)
        app.main.drain()
        await shows_the_head("replay")
        assert app.main.query_one(Timeline).row_count == len(session.checkpoints())
