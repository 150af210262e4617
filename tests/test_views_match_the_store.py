"""Every frame the studio shows is what the store holds, for every sample tree, local and attached.

A sample tree is run to its end through the session (approvals granted), then every checkpoint
of the run is viewed in turn and compared with the store read directly, apart from the session:
tick, root status and branch, what its tick returned, every node's status and loop counter (a swarm
agent's too), every state value (an agent's namespaces too), and no event later than the viewed tick. Then the live
frame is compared with the last checkpoint (the host's: its agents may run on after it).
A debugger showing a value from another tick or run is worse than none: this walks all of them.
"""

from __future__ import annotations

import pytest
from py_trees.common import Status
from tui_fixtures import BOTH, ROOT, session_on, until

from runtime.debug.names import StateNames
from runtime.debug.past import changed_keys, checkpoint_summary
from runtime.memory.checkpoint import open_store
from runtime.node.composites import LoopUntilSuccess, Sequence, loop_counter
from studio.loader import load_tree
from studio.session import RunState
from studio.timeline import RUN_END

TREES = ["react_calculator", "text_pipeline", "plan_execute", "actor_evaluator", "budget_abort",
         "flaky_tools", "parallel_tools", "skill_subagent", "approval_guard", "swarm_chat", "mcp_tools"]


async def run_to_the_end(session) -> None:
    """Continue until the run ends, granting every approval it asks for."""
    for _ in range(20):
        stop = await session.continue_()
        if stop.kind != "suspended":
            return
        for request in session.pending_approvals():
            session.approve(request.id)
        await until(lambda: not session.pending_approvals())
        await until(lambda: not session.busy)  # attached, the approved run goes on by itself: to its next stop
    raise AssertionError("the run kept asking for approvals")


async def viewed(session, checkpoint_id: int) -> None:
    session.select_checkpoint(checkpoint_id)
    await until(lambda: session.viewing is not None and session.viewing.id == checkpoint_id)


def host(state: dict) -> dict:
    """The tree's own namespaces, without a swarm agent's (which runs on after its host's last checkpoint)."""
    return {ns: values for ns, values in state.items() if not ns.startswith("@")}


def record(returns) -> list[tuple[str, str]] | None:
    """A tick's record, (path, status) in the order they returned (None: none)."""
    return None if returns is None else [(path, status.value) for path, status in returns]


def expected_counter(node, shown: str | None, status: Status, resume: dict) -> str | None:
    """The counter the checkpoint's resume data gives; a node compiled during the run (not in a
    fresh tree) is a loop when its data says so, with the limit it shows."""
    data = (resume.get("data") if isinstance(resume, dict) else None) or {}
    if node is None:
        if "iteration_count" not in data:
            return None
        assert shown is not None, "a loop in the checkpoint shows no counter"
        node = LoopUntilSuccess("loop", Sequence("body", memory=True), max_iterations=int(shown.split("/")[1]))
    return loop_counter(node, status, data.get("iteration_count", 0))


def lineage_events(store, info) -> set[tuple[str, int]]:
    """(branch, seq, between ticks) of the events a checkpoint's frame may show, read from the store: on
    each branch of its lineage those up to where the lineage leaves it, and the run's end at the branch's
    last tick; between ticks when published after their tick's checkpoint (async work finishing)."""
    by_id = {i.id: i for i in store.list(info.run_id)}
    limits: dict[str, int] = {}
    current = info
    while current is not None:
        limits.setdefault(current.branch, current.event_position)
        current = by_id.get(current.parent_id) if current.parent_id is not None else None
    saved = {(i.branch, i.tick): i.event_position for i in by_id.values()}
    return {(branch, event.seq, event.seq > saved.get((branch, event.tick), event.seq))
            for branch, event in store.events(info.run_id)
            if branch in limits and (event.seq <= limits[branch] or branch == info.branch
                                     and event.tick == info.tick and event.type in RUN_END)}


def described(store, info, events: set[tuple[str, int, bool]]) -> list[tuple]:
    """Events as `lineage_events` gives them, named: (type, node, tick, in its tick or between ticks)."""
    listed = {(b, e.seq): (e.type, e.node, e.tick) for b, e in store.events(info.run_id)}
    return [(*listed.get(e[:2], e[:2]), "between ticks" if e[2] else "in its tick") for e in sorted(events)]


def expected_summary(store, info, checkpoint, names) -> str:
    """A timeline row's `changed` worked out from the store: the statuses and shown values that differ
    from the parent checkpoint's, and the nodes whose status changed inside the tick only (its record)."""
    if info.parent_id is None:
        return checkpoint_summary(info, len(checkpoint.statuses), [])
    parent = store.get(info.parent_id)
    nodes = sum(parent.statuses.get(path, "INVALID") != status for path, status in checkpoint.statuses.items())
    if checkpoint.returns is not None:  # a status returned but not ended with, the end the parent's
        ended = {path: checkpoint.statuses.get(path, "INVALID") for path, _ in checkpoint.returns}
        within = {path for path, status in checkpoint.returns if status.value != ended[path]}
        nodes += sum(ended[path] == parent.statuses.get(path, "INVALID") for path in within)
    keys = [key for key, _, _ in changed_keys(names.state(parent.state), names.state(checkpoint.state))]
    return checkpoint_summary(info, nodes, keys)


async def assert_every_checkpoint_shows_the_store(session, store, name, nodes, names) -> None:
    """View each checkpoint of the session's run (every branch) and compare the frame with the store."""
    infos = store.list(session.recorded_run or session.run_id)
    assert len(infos) >= 2
    await until(lambda: len(session.checkpoints()) == len(infos))
    rows = {row.id: row.summary for row in session.checkpoints()}
    for info in infos:
        checkpoint = store.get(info.id)
        assert rows[info.id] == expected_summary(store, info, checkpoint, names), f"{name} row {info.id}"
        await viewed(session, info.id)
        where = f"{name} checkpoint {info.id} (tick {info.tick}, {info.branch})"
        frame = session.frame
        assert (frame.tick, frame.root_status, frame.branch) == (info.tick, info.root_status, info.branch), where
        assert record(frame.returns) == record(checkpoint.returns), f"{where}: what its tick returned"
        shown = {view.path: view for view in session.node_views()}
        assert set(shown) <= set(checkpoint.statuses), f"{where}: drawn, not there then"
        missing = set(checkpoint.statuses) - set(shown)  # only a placeholder a compile replaced
        assert all(path.endswith("(not compiled)") for path in missing), f"{where}: {missing}"
        for path, view in shown.items():
            status = Status(checkpoint.statuses[path])
            assert (session.node_status(path), view.status) == (status, status), f"{where}: {path}"
            assert view.counter == expected_counter(nodes.get(path), view.counter, status,
                                                    checkpoint.resume.get(path)), f"{where}: {path}"
        assert session.state_snapshot() == names.state(checkpoint.state), where
        events = {(stamped.branch, stamped.seq, stamped.between) for stamped in session.frame_events()}
        expected = lineage_events(store, info)
        if events != expected:
            raise AssertionError(f"{where}: shown, not so in the store's lineage "
                                 f"{described(store, info, events - expected)}; "
                                 f"in it, not shown so {described(store, info, expected - events)}")

    if session.recorded_run is not None:
        return  # a recording opened from its store has no live frame
    session.select_live()
    last = store.latest(session.run_id, session.branch)
    saved = store.get(last.id)
    assert (session.frame.tick, session.frame.branch) == (last.tick, last.branch)
    for path, status in saved.statuses.items():
        if not path.startswith("@"):
            assert session.node_status(path) == Status(status), f"{name} live: {path}"
    assert host(session.state_snapshot()) == host(names.state(saved.state)), f"{name} live"


@BOTH
@pytest.mark.parametrize("name", TREES)
async def test_every_checkpoint_viewed_shows_what_the_store_holds(kind, name, tmp_path):
    tree = ROOT / "sample_trees" / f"{name}.py"
    reference = load_tree(str(tree)).agent.make_runner()  # the tree's shape and schema, apart from the session
    nodes, names = reference.nodes, StateNames(reference.state_manager.schema)
    async with session_on(kind, tree, tmp_path) as session:
        await run_to_the_end(session)
        assert session.run_state == RunState.FINISHED, session.message
        store = open_store(str(tmp_path / ("runs.db" if kind == "local" else "served.db")))
        try:
            await assert_every_checkpoint_shows_the_store(session, store, name, nodes, names)
        finally:
            store.close()


@BOTH
@pytest.mark.parametrize("name", ["react_calculator", "text_pipeline", "parallel_tools", "flaky_tools"])
async def test_after_replay_fork_and_restart_every_checkpoint_shows_what_the_store_holds(kind, name, tmp_path):
    """Replay from the middle, fork from the start, restart (local): every branch of both runs, viewed
    checkpoint by checkpoint, is what the store holds, events included (none from another branch
    past its fork, none from the other run)."""
    tree = ROOT / "sample_trees" / f"{name}.py"
    reference = load_tree(str(tree)).agent.make_runner()
    nodes, names = reference.nodes, StateNames(reference.state_manager.schema)
    async with session_on(kind, tree, tmp_path) as session:
        await run_to_the_end(session)
        store = open_store(str(tmp_path / ("runs.db" if kind == "local" else "served.db")))
        try:
            main = store.list(session.run_id)
            await session.replay_from(main[len(main) // 2].id)
            await run_to_the_end(session)
            await session.fork_from(main[1].id)
            await run_to_the_end(session)
            assert len(store.branches(session.run_id)) == 3
            await assert_every_checkpoint_shows_the_store(session, store, name, nodes, names)
            if kind == "remote":
                return  # attached, the run belongs to its own process: no restart
            first_run = session.run_id
            await session.restart()
            await until(lambda: session.run_id != first_run)
            await run_to_the_end(session)
            await assert_every_checkpoint_shows_the_store(session, store, name, nodes, names)
        finally:
            store.close()


@pytest.mark.parametrize("name", ["react_calculator", "parallel_tools", "approval_guard", "swarm_chat"])
async def test_a_recorded_run_opened_from_its_store_shows_what_the_store_holds(name, tmp_path):
    """The run opened again from its store (`jianmu-studio replay`): every checkpoint of every branch,
    replayed and forked before, is what the store holds, events and their stamps included."""
    from studio.session import DebugSession

    tree = ROOT / "sample_trees" / f"{name}.py"
    reference = load_tree(str(tree)).agent.make_runner()
    nodes, names = reference.nodes, StateNames(reference.state_manager.schema)
    async with session_on("local", tree, tmp_path) as live:
        await run_to_the_end(live)
        main = live.store.list(live.run_id)
        await live.replay_from(main[len(main) // 2].id)
        await run_to_the_end(live)
        run_id = live.run_id
        live.store.close()
    session = DebugSession.open_recorded(tmp_path / "runs.db", run_id)
    store = open_store(str(tmp_path / "runs.db"))
    try:
        assert len(store.branches(run_id)) == 2
        await assert_every_checkpoint_shows_the_store(session, store, name, nodes, names)
    finally:
        store.close()
        session.store.close()
