"""A node renamed between `Agent()` and its runner (a tree file's `build()` naming it after making its agent):
its run names it as it is named then, in its path (what the studio shows, what the store records), and a name
no path can hold is refused as `Agent()` refuses it, in one line naming the node, when the tree file loads."""

from __future__ import annotations

import pytest
from py_trees.behaviours import Success
from py_trees.composites import Sequence

from runtime import Agent, ReActState
from runtime.memory.checkpoint import open_store
from runtime.treefile import TreeLoadError, load_tree

TREE = '''
from py_trees.behaviours import Success
from py_trees.composites import Sequence
from runtime import Agent, ReActState


def build():
    first = Success("Old")
    agent = Agent(Sequence("Root", memory=True, children=[first, Success("Other")]), state_schema=ReActState)
    first.name = {name!r}
    return agent
'''


def renamed(name: str) -> Agent:
    first = Success("Old")
    agent = Agent(Sequence("Root", memory=True, children=[first, Success("Other")]), state_schema=ReActState)
    first.name = name
    return agent


@pytest.mark.parametrize(("name", "paths"), [("New", ["Root", "Root/New", "Root/Other"]),
                                             ("Other", ["Root", "Root/Other", "Root/Other#2"])])
async def test_a_node_renamed_after_agent_is_named_so_in_its_run_and_its_records(tmp_path, name, paths):
    agent = renamed(name)
    store = open_store(tmp_path / "runs.db")
    try:
        agent.runner = agent.make_runner(checkpointer=store)
        assert list(agent.runner.nodes) == paths
        await agent.run()
        [run] = store.runs()
        assert list(store.get(store.latest(run.run_id).id).statuses) == paths
        assert {event.node for _, event in store.events(run.run_id) if event.node} <= set(paths)
    finally:
        store.close()


def test_a_name_no_path_can_hold_given_after_agent_is_the_tree_files_fault_in_one_line(tmp_path):
    tree = tmp_path / "renamed.py"
    tree.write_text(TREE.format(name="New/Name"))
    with pytest.raises(TreeLoadError) as raised:
        load_tree(str(tree))
    assert str(raised.value) == (f"{tree}: build(): node 'New/Name' under 'Root': a name may not hold '/' (it separates "
                                 "the names of a path); rename it")
    tree.write_text(TREE.format(name="New"))
    assert list(load_tree(str(tree)).agent.make_runner().nodes) == ["Root", "Root/New", "Root/Other"]
