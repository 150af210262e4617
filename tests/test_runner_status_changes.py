"""A tick's changes of status (`TickReport.changed`) are found from the nodes it returned and those
stopped under them: every change is there, in the tree's order, and a subtree the tick never
reached has its statuses left unread."""

import py_trees
from py_trees.common import Status
from py_trees.composites import Parallel, Selector, Sequence
from pydantic import BaseModel

from runtime.engine import ReactiveRunner
from runtime.node.composites import LoopUntilSuccess


class Empty(BaseModel):
    pass


class Script(py_trees.behaviour.Behaviour):
    """Returns its statuses in turn, one a tick (the last one from then on)."""

    def __init__(self, name: str, *statuses: Status) -> None:
        super().__init__(name)
        self.script = list(statuses)

    def update(self) -> Status:
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]


class Counted(py_trees.behaviours.Success):
    """Counts the reads of its status."""

    reads = 0

    @property
    def status(self) -> Status:
        Counted.reads += 1
        return self._status

    @status.setter
    def status(self, value: Status) -> None:
        self._status = value


def _changes(before: dict[str, Status], after: dict[str, Status]) -> dict[str, tuple[Status, Status]]:
    return {path: (before[path], status) for path, status in after.items() if before[path] is not status}


async def test_every_change_is_reported_in_the_trees_order_the_stopped_subtrees_too():
    """A selector's first child succeeding stops the running branch below (two levels deep, never
    ticked that tick); a parallel finishing; a loop failing a round (its child stopped after it failed)."""
    running = Sequence("work", memory=False, children=[
        py_trees.behaviours.Success("prepare"),
        Sequence("deep", memory=False, children=[Script("long", Status.RUNNING, Status.RUNNING, Status.SUCCESS)])])
    guard = Selector("guard", memory=False, children=[Script("ready", Status.FAILURE, Status.SUCCESS), running])
    fan = Parallel("fan", policy=py_trees.common.ParallelPolicy.SuccessOnAll(), children=[
        Script("a", Status.RUNNING, Status.SUCCESS), py_trees.behaviours.Success("b")])
    loop = LoopUntilSuccess("loop", Script("try", Status.FAILURE, Status.SUCCESS), max_iterations=5)
    root = Sequence("root", memory=False, children=[guard, fan, loop, Script("end", Status.RUNNING)])
    done = Sequence("done", memory=False, children=[py_trees.behaviours.Success(f"l{i}") for i in range(200)])
    runner = ReactiveRunner(Sequence("top", memory=True, children=[done, root]), Empty)  # (`done`: the first
    # tick's alone, so the later ticks return few of the tree's nodes, the walk's case)
    reports = []
    for _ in range(4):
        before, reported = runner.statuses(), runner.reported_statuses()  # (none before the first tick)
        runner.signal()  # (a running tree ticks again once woken)
        reports.append(report := await runner.step(detailed=True))
        expected = _changes(before, runner.statuses())
        if reported is not None:  # the places that moved, as the lists compared would give them
            assert runner.moved_between(reported[1], runner.status_lists()[1]) == [
                i for i, path in enumerate(runner.nodes) if path in expected]
        assert report.changed == expected
        assert list(report.changed) == [path for path in runner.nodes if path in expected]  # the tree's order
    assert reports[1].changed["top/root/guard/work/deep/long"] == (Status.RUNNING, Status.INVALID)  # never ticked


async def test_a_subtree_the_tick_never_reached_is_not_read():
    done = Sequence("done", memory=False, children=[Counted(f"leaf{i}") for i in range(50)])
    root = Sequence("root", memory=True, children=[done, Script("wait", Status.RUNNING)])
    runner = ReactiveRunner(root, Empty)
    await runner.step(detailed=True)  # the first tick finishes `done`; the next ticks only `wait`
    Counted.reads = 0
    runner.signal()
    report = await runner.step(detailed=True)
    assert report.changed == {}
    assert Counted.reads == 0
