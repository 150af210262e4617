"""A plain py_trees leaf guarded by the runner: its class's tick is the Jianmu leaf tick, so nothing is
added to the leaf (a 100,000-node tree has ~90,000 of them) and its class stays its own; its failure
is the ticking runner's, and ticked by no runner (or by one that does not index it) it raises."""

import sys

import py_trees
import pytest
from py_trees.common import Status
from py_trees.composites import Sequence
from pydantic import BaseModel

from runtime.engine import ReactiveRunner
from runtime.engine.events import EventType


class Empty(BaseModel):
    pass


class Breaks(py_trees.behaviour.Behaviour):
    def update(self) -> Status:
        raise ValueError("broken leaf")


class Exits(py_trees.behaviour.Behaviour):
    def update(self) -> Status:
        sys.exit(3)


def errors_of(runner: ReactiveRunner) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    runner.event_bus.subscribe(lambda event: seen.append((event.node, event.payload["error"])),
                               types=[EventType.NODE_ERROR])
    return seen


def test_a_guarded_leaf_keeps_its_class_and_gains_no_attribute():
    leaves = [py_trees.behaviours.Success("ok"), Breaks("b")]
    ReactiveRunner(Sequence("root", memory=True, children=leaves), Empty)
    for leaf, cls in zip(leaves, [py_trees.behaviours.Success, Breaks], strict=True):
        assert type(leaf) is cls
        assert "tick" not in vars(leaf)


async def test_a_leaf_failure_is_reported_by_the_runner_ticking_it():
    root = Sequence("root", memory=True, children=[Breaks("b")])
    first = ReactiveRunner(root, Empty)
    first_errors = errors_of(first)
    second = ReactiveRunner(root, Empty)
    second_errors = errors_of(second)
    report = await second.step()
    assert report.status == Status.FAILURE
    assert [node for node, _ in second_errors] == ["root/b"] and "broken leaf" in second_errors[0][1]
    assert first_errors == []
    await first.step()
    assert [node for node, _ in first_errors] == ["root/b"] and len(second_errors) == 1


def test_a_guarded_leaf_ticked_by_no_runner_raises_what_it_raised():
    leaf, exits = Breaks("b"), Exits("e")
    ReactiveRunner(Sequence("root", memory=True, children=[leaf, exits]), Empty)
    with pytest.raises(ValueError, match="broken leaf"):
        list(leaf.tick())
    with pytest.raises(SystemExit):
        list(exits.tick())


class TicksItsOwnTree(py_trees.behaviour.Behaviour):
    """A node that ticks a tree of its own, which no runner indexes: its leaf's failure is this node's."""

    def __init__(self, name: str):
        super().__init__(name)
        self.own = Sequence("own", memory=True, children=[Breaks("inner")])

    def update(self) -> Status:
        for _ in self.own.tick():
            pass
        return Status.SUCCESS


async def test_a_leaf_the_ticking_runner_does_not_index_raises_into_its_caller():
    node = TicksItsOwnTree("host")
    runner = ReactiveRunner(Sequence("root", memory=True, children=[Breaks("guarded"), node]), Empty)
    errors = errors_of(runner)
    await runner.step()  # (Breaks' class has the Jianmu leaf tick: the inner leaf's too)
    runner.root.children.remove(runner.nodes["root/guarded"])
    runner.refresh_tree()
    report = await runner.step()
    assert report.status == Status.FAILURE
    assert [node for node, _ in errors] == ["root/guarded", "root/host"]
    assert "broken leaf" in errors[1][1]


class ReturnsNonsense(py_trees.behaviour.Behaviour):
    def update(self) -> Status:
        return "done"  # type: ignore[return-value]


async def test_outside_a_runners_tick_a_guarded_leaf_ticks_as_py_trees_does():
    """Its class is guarded for every tree: a tree ticked by py_trees alone keeps py_trees' own tick
    (an invalid status made INVALID), while the runner's tick makes it the node's failure."""
    guarded = ReturnsNonsense("n")
    runner = ReactiveRunner(Sequence("root", memory=True, children=[guarded]), Empty)
    errors = errors_of(runner)
    plain = Sequence("plain", memory=True, children=[ReturnsNonsense("n")])
    plain.tick_once()
    assert plain.children[0].status == Status.INVALID
    await runner.step()
    assert guarded.status == Status.FAILURE and [node for node, _ in errors] == ["root/n"]


class OwnTick(py_trees.behaviour.Behaviour):
    def update(self) -> Status:
        return Status.SUCCESS

    def tick(self):
        yield from super().tick()


class Holding(py_trees.behaviour.Behaviour):
    """A plain leaf's class whose nodes hold children (py_trees' leaf tick never ticks them)."""

    def update(self) -> Status:
        return Status.SUCCESS


def test_the_runner_guards_a_class_at_a_time_and_a_node_only_where_its_class_cannot_say():
    """A class of plain leaves gets the leaf tick once it has a leaf in the tree; a node of such a class
    holding children, or of a class with its own tick, is guarded on the node; py_trees' own composites
    are left alone."""
    holding = Holding("holds")
    holding.children.append(Breaks("inner"))
    own, seq = OwnTick("own"), Sequence("seq", memory=True, children=[Exits("exits")])
    ReactiveRunner(Sequence("root", memory=True, children=[holding, own, seq]), Empty)
    assert Holding.tick is py_trees.behaviour.Behaviour.tick  # no leaf of it: its class left as it is
    assert holding._jianmu_guarded and own._jianmu_guarded
    assert Breaks.tick is not py_trees.behaviour.Behaviour.tick and Exits.tick is Breaks.tick
    assert not hasattr(seq, "_jianmu_guarded") and not hasattr(seq.children[0], "_jianmu_guarded")
    ReactiveRunner(Sequence("root2", memory=True, children=[Holding("leaf")]), Empty)
    assert Holding.tick is Breaks.tick
