"""What the studio shows is one frame (issue #10 points 4-6): a past checkpoint shows only what
the store held then; markers are the differences of consecutive checkpoints; events carry
run, branch and tick, and never go backwards."""

from __future__ import annotations

from pathlib import Path

from py_trees.common import Status

from studio import frames
from studio.event_log import StampedEvent
from studio.node_views import NodeView
from studio.session import DebugSession
from studio.timeline import RunTimeline
from studio.widgets.events_pane import EventFilter

ROOT = Path(__file__).resolve().parents[1]
CALCULATOR = str(ROOT / "sample_trees/react_calculator.py")
PIPELINE = str(ROOT / "sample_trees/text_pipeline.py")
SKILL = str(ROOT / "sample_trees/skill_subagent.py")


async def finished(target: str, tmp_path: Path) -> DebugSession:
    session = DebugSession.load(target, db=tmp_path / "runs.db")
    assert (await session.continue_()).kind == "finished"
    return session


async def test_a_past_frame_holds_nothing_later_than_its_tick(tmp_path):
    session = await finished(CALCULATOR, tmp_path)
    live_answer = session.state_snapshot()[""]["final_answer"]
    for row in session.checkpoints():
        session.select_checkpoint(row.id)
        frame = session.frame
        stored = session.store.get(row.id)
        assert (frame.tick, frame.root_status) == (row.tick, Status(row.status))
        assert {view.path for view in session.node_views()} <= set(stored.statuses)
        for view in session.node_views():
            assert view.status == Status(stored.statuses[view.path])
            detail = session.node_detail(view.path)
            assert all(tick <= row.tick for tick, _, _ in detail.history), (row.tick, view.path, detail.history)
        events = session.frame_events()
        assert events and all(event.tick <= row.tick for event in events)
        assert [e.seq for e in events] == sorted({e.seq for e in events})
        answer = session.node_detail("Calculator/Calculator.loop/Calculator.llm")
        shown = {port.port: port.value for port in answer.ports if port.direction == "out"}
        assert shown["final_answer"] == stored.state[""].get("final_answer")
        if row.tick < 5:
            assert session.state_snapshot()[""]["final_answer"] != live_answer
    assert session.frame.tokens > 0 and session.frame.tokens == session.tokens  # the last checkpoint's


async def test_markers_are_the_differences_of_consecutive_checkpoints(tmp_path):
    session = await finished(CALCULATOR, tmp_path)
    rows = session.checkpoints()
    shown = {}
    for row in rows:
        session.select_checkpoint(row.id)
        shown[row.id] = session.state_snapshot()
    for row in rows:
        session.select_checkpoint(row.id)
        marks = session.marks()
        if row.parent_id is None:
            assert marks == {}
            continue
        old, new = shown[row.parent_id], shown[row.id]
        expected = {key: (old[""].get(key), value) for key, value in new[""].items() if old[""].get(key) != value}
        assert {key: (mark.old, mark.new) for key, mark in marks.items()} == expected, f"tick {row.tick}"
        parent_tick = next(r.tick for r in rows if r.id == row.parent_id)
        assert all(mark.between in (None, parent_tick) for mark in marks.values())  # landed after the parent
    names = {key for row in rows for key in shown[row.id][""]}
    assert "llm.usage" in names and "usage" not in names  # one name per value
    for row in rows:
        listed = row.summary.partition("; ")[2].replace(" …", "")
        assert {key for key in listed.split(", ") if key} <= names, row.summary


async def test_writes_between_ticks_are_marked_as_such(tmp_path):
    session = DebugSession.load(PIPELINE, db=tmp_path / "runs.db")
    await session.step()
    await session.step()
    await work_done(session)
    marks = session.marks()
    assert marks["all.words"].between == 2 and marks["all.words"].new == 11  # counted after tick 2's checkpoint
    assert marks["normalized_text"].between == 1  # tick 2's checkpoint first holds it; it landed after tick 1's
    head_value = session.state_snapshot()[""]["normalized_text"]
    assert marks["normalized_text"].new == head_value and marks["normalized_text"].old == ""
    await session.step()  # tick 3's checkpoint is the first to hold the count: it still says when it landed
    session.select_checkpoint(session.checkpoints()[-1].id)
    past = session.marks()
    assert past["all.words"].between == 2 and past["all.words"].new == 11
    assert {key for key, mark in past.items() if mark.between is not None} == {"all.words", "unique.words"}


async def work_done(session: DebugSession) -> None:
    """Until the async nodes in flight have finished (their writes land between ticks)."""
    import asyncio

    for _ in range(500):
        if not session.waiting_on():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"still waiting on {session.waiting_on()}")


async def test_a_subtree_compiled_later_is_not_drawn_in_the_past(tmp_path):
    session = await finished(SKILL, tmp_path)
    everything = {view.path for view in session.node_views()}
    first = session.checkpoints()[1]
    session.select_checkpoint(first.id)
    then = {view.path for view in session.node_views()}
    assert then < everything
    assert all(set(view.children) <= then for view in session.node_views())


async def test_events_carry_run_branch_and_tick_and_never_go_backwards_after_a_fork(tmp_path):
    session = await finished(CALCULATOR, tmp_path)
    main_events = session.frame_events()
    fork_point = session.checkpoints()[2]
    session.select_checkpoint(fork_point.id)
    session.edit_state(None, "rounds", 5)
    branch = await session.fork_from(fork_point.id)
    assert (await session.continue_()).kind == "finished"
    events = session.frame_events()
    seqs = [event.seq for event in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert {event.branch for event in events} == {"main", branch}
    assert all(event.run_id == session.run_id for event in events)
    before = [event for event in events if event.branch == "main"]
    assert before == [e for e in main_events if e.seq <= session.store.get(fork_point.id).event_position]
    llm = "Calculator/Calculator.loop/Calculator.llm"
    history = session.node_detail(llm).history  # main's up to the fork point, then the fork's own
    assert history == [(e.tick, e.payload["old"], e.payload["new"]) for e in events
                       if e.type == "node.status" and e.node == llm]
    assert any(e.branch == branch for e in events if e.type == "node.status" and e.node == llm)
    assert any(e.tick > fork_point.tick for e in main_events if e.type == "node.status" and e.node == llm)
    assert session.branches() == session.store.branches(session.run_id) == ["main", branch]
    session.store.branches = None  # the frames ask at every change: the timeline's headers answer, not a query
    assert session.branches() == ["main", branch]


def test_branch_and_run_filters():
    from runtime.engine.events import RuntimeEvent

    def stamped(branch: str, run: str) -> StampedEvent:
        return StampedEvent(branch, RuntimeEvent(seq=1, type="tick.started", time=0, tick=1, run_id=run))

    keep = EventFilter.parse("branch:fork-1 run:ab12")
    assert keep.accepts(stamped("fork-1", "ab12cd"), str)
    assert not keep.accepts(stamped("fork-10", "ab12cd"), str)
    assert not keep.accepts(stamped("fork-1", "ff00"), str)
    assert EventFilter.parse("-branch:main").accepts(stamped("replay-1", "x"), str)


async def test_a_live_binding_edit_is_saved_with_the_checkpoints_after_it(tmp_path):
    """The past resolves ports through the bindings the run had then; a fork restores them."""
    llm = "Calculator/Calculator.loop/Calculator.llm"
    session = DebugSession.load(CALCULATOR, db=tmp_path / "runs.db")
    for _ in range(2):
        await session.step()
    session.edit_binding(llm, "out", "final_answer", "task")
    assert (await session.continue_()).kind == "finished"
    assert session.state_snapshot()[""]["task"] == "25 * 4 + 10 = 110"

    def answer_key() -> str:
        return next(p.key for p in session.node_detail(llm).ports if p.port == "final_answer")

    rows = [row for row in session.checkpoints() if row.branch == "main"]
    for row in rows:
        session.select_checkpoint(row.id)
        saved = session.store.get(row.id).bindings.get(llm, {}).get("outputs", {})
        assert answer_key() == ("task" if row.tick > 2 else "final_answer") == saved.get("final_answer",
                                                                                          "final_answer")
    before, after = rows[1], rows[-2]
    await session.fork_from(before.id)
    assert answer_key() == "final_answer" and (await session.continue_()).kind == "finished"
    assert session.state_snapshot()[""]["final_answer"] == "25 * 4 + 10 = 110"
    await session.fork_from(after.id)
    assert answer_key() == "task"


async def test_a_binding_edit_in_the_past_is_staged_and_a_fork_applies_it(tmp_path):
    llm = "Calculator/Calculator.loop/Calculator.llm"
    session = await finished(CALCULATOR, tmp_path)
    start = session.checkpoints()[0]
    session.select_checkpoint(start.id)
    session.edit_binding(llm, "out", "final_answer", "task")
    live = session.runner.nodes[llm]
    assert live.output_bindings.get("final_answer") in (None, "final_answer")  # the live run is untouched
    assert next(p.key for p in session.node_detail(llm).ports if p.port == "final_answer") == "task"
    assert len(session.staged) == 1
    await session.fork_from(start.id)
    assert (await session.continue_()).kind == "finished"
    state = session.state_snapshot()[""]
    assert state["task"] == "25 * 4 + 10 = 110" and state["final_answer"] in (None, "")
    assert session.store.get(session.checkpoints()[-1].id).bindings[llm]["outputs"]["final_answer"] == "task"


async def test_the_head_is_read_from_what_the_runner_saved_and_matches_the_store(tmp_path):
    """The head's marks and timeline rows come from each save as the runner held it (decoding the
    head again costs ~60 ms at 100,000 nodes): they must be what the store holds."""
    for target in (PIPELINE, CALCULATOR):
        session = DebugSession.load(target, db=tmp_path / f"{Path(target).stem}.db")
        read_back: list[int] = []
        get = session.store.get
        session.store.get = lambda checkpoint_id, read_back=read_back, get=get, **kw: (
            read_back.append(checkpoint_id) or get(checkpoint_id, **kw))
        while not session.runner.finished:
            await session.step()
            head = session.runner.checkpoints.head
            rows = [row.summary for row in session.checkpoints()]
            assert head not in read_back
            store = RunTimeline(session.store, session.timeline.names)
            assert store.saved(head) == session.timeline.saved(head)
            assert rows == [store.summary(info) for info in store.infos(session.run_id)]


async def test_each_remembered_save_names_the_statuses_its_tick_left_after_fork_and_restart(tmp_path):
    """A save's statuses are taken as a list and named per path only when read: read late, after
    more ticks, a fork and a restart moved the nodes on, each must still be its own tick's (the store's)."""
    session = DebugSession.load(PIPELINE, db=tmp_path / "pipeline.db")
    saved: list[int] = []

    async def step_twice() -> None:
        for _ in range(2):
            await session.step()
            saved.append(session.runner.checkpoints.head)

    await step_twice()
    await session.fork_from(saved[0])
    await step_twice()
    await session.restart()
    await step_twice()
    store = RunTimeline(session.store, session.timeline.names)
    for checkpoint_id in saved:
        assert session.timeline.saved(checkpoint_id).statuses == store.saved(checkpoint_id).statuses


async def test_a_frames_nodes_are_columns_and_a_view_is_made_only_when_asked_for(tmp_path, monkeypatch):
    """A first frame at 100,000 nodes made a `NodeView` per node (~0.9 s): the columns say what the views
    would, in every frame (the head, each checkpoint), and a row's view is the one `node_view` makes."""
    session = await finished(CALCULATOR, tmp_path)
    session.toggle_node_breakpoint("Calculator/Calculator.loop/Calculator.llm")
    made = []
    monkeypatch.setattr(frames, "NodeView", lambda *args: made.append(args) or NodeView(*args))
    for checkpoint in [None, *(row.id for row in session.checkpoints())]:
        if checkpoint is not None:
            session.select_checkpoint(checkpoint)
        views = session.node_views()
        assert made == []
        one_by_one = [session.node_view(path) for path in views.paths]
        assert [(v.path, v.name, v.class_name, v.status, v.parent, v.namespace, v.counter, v.breakpoint, v.pending)
                for v in one_by_one] == [
            (path, views.names[row], views.classes[row], views.statuses[row], views.parents[row],
             views.namespaces.get(row), views.counters.get(row), path in views.breakpoints, path in views.pending)
            for row, path in enumerate(views.paths)]
        assert list(views) == one_by_one and views[-1] == one_by_one[-1]
        assert any(v.counter for v in one_by_one) and any(v.breakpoint for v in one_by_one)
        made.clear()
