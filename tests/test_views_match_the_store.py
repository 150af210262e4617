"""Every frame the studio shows is what the store holds, for every sample tree, local and attached.

A sample tree is run to its end through the session (approvals granted), then every checkpoint
of the run is viewed in turn and compared with the store read directly, apart from the session:
tick, root status and branch, every node's status and loop counter, every state value, and no
event later than the viewed tick. Then the live frame is compared with the last checkpoint.
A debugger showing a value from another tick or run is worse than none: this walks all of them.
"""

from __future__ import annotations

import pytest
from py_trees.common import Status
from tui_fixtures import BOTH, ROOT, session_on, until

from runtime.debug.names import StateNames
from runtime.memory.checkpoint import open_store
from runtime.node.composites import LoopUntilSuccess, Sequence, loop_counter
from studio.loader import load_tree
from studio.session import RunState

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
    raise AssertionError("the run kept asking for approvals")


async def viewed(session, checkpoint_id: int) -> None:
    session.select_checkpoint(checkpoint_id)
    await until(lambda: session.viewing is not None and session.viewing.id == checkpoint_id)


def host(state: dict) -> dict:
    """The tree's own namespaces (the past of a swarm agent is not recorded)."""
    return {ns: values for ns, values in state.items() if not ns.startswith("@")}


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
            infos = store.list(session.run_id)
            assert len(infos) >= 2
            for info in infos:
                checkpoint = store.get(info.id)
                await viewed(session, info.id)
                where = f"{name} checkpoint {info.id} (tick {info.tick})"
                frame = session.frame
                assert (frame.tick, frame.root_status, frame.branch) == (info.tick, info.root_status,
                                                                          info.branch), where
                shown = {view.path: view for view in session.node_views() if not view.path.startswith("@")}
                assert set(shown) <= set(checkpoint.statuses), f"{where}: drawn, not there then"
                missing = set(checkpoint.statuses) - set(shown)  # only a placeholder a compile replaced
                assert all(path.endswith("(not compiled)") for path in missing), f"{where}: {missing}"
                for path, view in shown.items():
                    status = Status(checkpoint.statuses[path])
                    assert (session.node_status(path), view.status) == (status, status), f"{where}: {path}"
                    assert view.counter == expected_counter(nodes.get(path), view.counter, status,
                                                            checkpoint.resume.get(path)), f"{where}: {path}"
                assert host(session.state_snapshot()) == names.state(checkpoint.state), where
                assert all(stamped.event.tick <= info.tick for stamped in session.frame_events()), where

            session.select_live()
            last = store.get(infos[-1].id)
            assert session.frame.tick == infos[-1].tick
            for path, status in last.statuses.items():
                assert session.node_status(path) == Status(status), f"{name} live: {path}"
            assert host(session.state_snapshot()) == names.state(last.state), f"{name} live"
        finally:
            store.close()
