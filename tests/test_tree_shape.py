"""A root that is not a tree (a cycle, a child that is no behaviour, a tree deeper than a tick can go)
is refused where it is handed over, in one line naming the node: never a bare RecursionError."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from py_trees.behaviours import Success
from py_trees.composites import Selector, Sequence
from pydantic import BaseModel

from runtime import Agent, ReactiveRunner
from runtime.engine import runner as runner_module
from runtime.engine import shape
from runtime.engine.shape import MAX_DEPTH, TreeShapeError
from runtime.engine.tree import NameHoldsSlash, iter_paths

ROOT = Path(__file__).resolve().parents[1]


class S(BaseModel):
    x: int = 0


def looped() -> Sequence:
    inner = Sequence("Inner", memory=True, children=[Success("ok")])
    outer = Selector("Outer", memory=False, children=[inner])
    inner.children.append(outer)  # what add_child would refuse, done behind its back
    return Sequence("Root", memory=True, children=[outer])


def test_a_cycle_is_refused_naming_the_node_by_agent_and_runner():
    for make in (lambda root: Agent(root, state_schema=S), lambda root: ReactiveRunner(root, S)):
        with pytest.raises(TreeShapeError, match=r"node 'Outer' is its own ancestor \(Root/Outer/Inner/Outer\)"):
            make(looped())
    itself = Sequence("Self", memory=True)
    itself.children.append(itself)
    with pytest.raises(TreeShapeError, match=r"node 'Self' is its own ancestor \(Self/Self\)"):
        Agent(itself, state_schema=S)


def test_a_child_that_is_no_behaviour_and_a_tree_too_deep_are_named():
    root = Sequence("Root", memory=True, children=[Success("ok")])
    root.children.append(None)
    with pytest.raises(TreeShapeError, match="node Root: a child that is a NoneType, not a behaviour"):
        Agent(root, state_schema=S)
    node = Success("leaf")
    for level in range(MAX_DEPTH + 1):
        node = Sequence(f"L{level}", memory=True, children=[node])
    with pytest.raises(TreeShapeError, match=rf"node L{MAX_DEPTH}/…/L2/L1/L0: the tree is deeper than {MAX_DEPTH}"):
        Agent(node, state_schema=S)
    Agent(node.children[0], state_schema=S)  # as deep as allowed: accepted


async def test_the_deepest_tree_allowed_runs():
    node = Success("leaf")
    for level in range(MAX_DEPTH):
        node = Sequence(f"L{level}", memory=True, children=[node])
    result = await Agent(node, state_schema=S).run({})
    assert result.status.value == "SUCCESS"


def test_the_cli_says_it_in_one_line(tmp_path):
    tree = tmp_path / "cycle.py"
    tree.write_text("from py_trees.composites import Sequence\nfrom runtime import Agent\n"
                    "def build():\n    a = Sequence('A\\x1b[31m', memory=True)\n    a.children.append(a)\n"
                    "    return Agent(a)\n")
    result = subprocess.run([sys.executable, "-m", "studio.cli", "run", str(tree), "--db", str(tmp_path / "r.db")],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"jianmu-studio: {tree}: build() raised TreeShapeError: node 'A\\x1b[31m' is its own ancestor "
        "(A\\x1b[31m/A\\x1b[31m): a behaviour tree has no cycles"]


def test_a_node_under_two_parents_is_named_with_both_paths():
    shared = Success("shared")
    second = Sequence("B", memory=True)
    second.children.append(shared)
    root = Sequence("Root", memory=True, children=[Sequence("A", memory=True, children=[shared]), second])
    with pytest.raises(TreeShapeError, match=r"node 'shared' is in the tree twice \(Root/A/shared and "
                                             r"Root/B/shared\): a node has one parent"):
        Agent(root, state_schema=S)


def test_a_name_no_store_can_keep_and_a_schema_that_is_no_model_are_refused_in_build():
    """Both passed `build()` and failed later with a traceback: the first save, the first state."""
    with pytest.raises(TreeShapeError) as raised:
        Agent(Sequence("Root", memory=True, children=[Success("Le\udc80af")]), state_schema=S)
    assert str(raised.value) == "node Root/Le\udc80af: a name that is no text a store can keep (a lone surrogate)"
    with pytest.raises(ValueError, match="a state schema is a pydantic model .*, not int"):
        Agent(Success("ok"), state_schema=42)
    with pytest.raises(ValueError, match="a state schema is a pydantic model .*, not dict"):
        Agent(Success("ok"), state_schema={"x": 0})
    Agent(Success("ok"), state_schema=S(x=3))  # an instance: its values the initial state


def test_a_root_checked_by_agent_is_not_walked_again_by_its_runner_but_by_the_next(monkeypatch):
    walked = []
    check = runner_module.check_shape

    def spying(root):
        walked.append(root)
        return check(root)

    monkeypatch.setattr(runner_module, "check_shape", spying)  # the runner's (Agent has its own)
    agent = Agent(Sequence("Root", memory=True, children=[Success("a")]), state_schema=S)
    assert list(agent.make_runner().nodes) == ["Root", "Root/a"]  # Agent's walk indexed it
    assert walked == []
    agent.make_runner()  # the tree may have changed since: walked again
    assert walked == [agent.root]


def test_a_child_added_after_agent_is_indexed_by_its_runner():
    root = Sequence("Root", memory=True, children=[Success("a")])
    agent = Agent(root, state_schema=S)
    root.add_child(Success("a"))
    assert list(agent.make_runner().nodes) == ["Root", "Root/a", "Root/a#2"]


def test_the_walk_indexes_as_paths_do():
    """Siblings that share a name numbered as `iter_paths` numbers them, in its order."""
    root = Sequence("Root", memory=True, children=[
        Success("Same"), Sequence("Same", memory=True, children=[Success("x"), Success("x")]), Success("Same#2"),
        Selector("Other", memory=False, children=[Success("y")])])
    index = shape.check_shape(root)
    assert list(zip(index.nodes, index.paths, strict=True)) == list(iter_paths(root))
    assert index.paths[:4] == ["Root", "Root/Same", "Root/Same#3", "Root/Same#3/x"]


def test_the_first_node_met_at_fault_is_named_whatever_its_fault():
    """A name no store can keep met before a cycle is named first, as the walk meets them."""
    looping = looped()
    looping.children.insert(0, Success("Le\udc80af"))
    with pytest.raises(TreeShapeError, match="^node Root/Le\udc80af: a name that is no text"):
        Agent(looping, state_schema=S)
    named = Sequence("Root", memory=True, children=[Success("a/b"), Success("Le\udc80af")])
    with pytest.raises(TreeShapeError, match="^node Root/Le\udc80af: a name that is no text"):
        Agent(named, state_schema=S)
    with pytest.raises(NameHoldsSlash, match="^node 'a/b' under 'Root'"):
        Agent(Sequence("Root", memory=True, children=[Success("a/b"), Success("ok")]), state_schema=S)


class Unhashable(Sequence):
    """A node class that compares by value (as a dataclass would) and so has no hash."""

    __hash__ = None

    def __eq__(self, other):
        return isinstance(other, Unhashable) and other.name == self.name


def test_a_root_of_a_node_class_without_a_hash_runs():
    agent = Agent(Unhashable("Root", memory=True, children=[Success("a")]), state_schema=S)
    assert agent.make_runner().root is agent.root
    assert shape.check_shape(agent.root).paths == ["Root", "Root/a"]  # indexed all the same (not walked again)


class LooksLikeANode:
    """A name and children, but no behaviour."""

    name = "fake"
    children: list = []


def test_a_child_that_looks_like_a_node_is_still_no_behaviour():
    root = Sequence("Root", memory=True, children=[Success("ok")])
    root.children.append(LooksLikeANode())
    with pytest.raises(TreeShapeError, match="^node Root: a child that is a LooksLikeANode, not a behaviour"):
        Agent(root, state_schema=S)
    index = shape.check_shape(Sequence("Root", memory=True, children=[Success("a"), Selector("b", memory=False)]))
    assert index.kinds == [Sequence, Success, Selector] and [node.name for node in index.parents] == ["Root"]


def test_a_node_shared_down_a_long_chain_is_named_without_walking_every_way_down():
    """60 levels, each node the two children of the one above (2^60 ways down): refused at the first repeat."""
    node = Success("leaf")
    for level in range(60):
        above = Sequence(f"L{level}", memory=True)
        above.children.extend([node, node])
        node = above
    with pytest.raises(TreeShapeError, match=r"^node 'leaf' is in the tree twice \(L59/…/L1/L0/leaf and L59/…/L1/L0/leaf\)"):
        Agent(node, state_schema=S)


class Named(str):
    """A name that formats otherwise than its text (as a `(str, Enum)` member does: `Named.X`)."""

    def __format__(self, spec: str) -> str:
        return "formatted"


def test_a_name_that_is_a_str_subclass_gets_the_path_iter_paths_gives_it():
    """`iter_paths` formats a name: the index the runner starts from, and the one it makes again when
    the tree changes, must agree."""
    root = Sequence("Root", memory=True, children=[Success(Named("x")), Success("y")])
    assert shape.check_shape(root).paths == [path for _, path in iter_paths(root)]
