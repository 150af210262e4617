"""A runner on a large tree takes the tree out of the collector's walks when it first goes live,
lets a replaced tree go, and still delivers every event (runtime/engine/long_lived.py)."""

import gc
import weakref

import py_trees
import pytest
from pydantic import BaseModel

from runtime.engine import EventType, ReactiveRunner, RuntimeEvent, RuntimeEventBus, long_lived

LARGE = long_lived.FREEZE_FROM  # leaves: a tree just over the line


class Empty(BaseModel):
    pass


def wide_tree(leaves: int) -> py_trees.behaviour.Behaviour:
    policy = py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=False)
    return py_trees.composites.Parallel("root", policy=policy, children=[
        py_trees.behaviours.Success(f"leaf{i}") for i in range(leaves)])


def tracked(obj: object) -> bool:
    """Whether a collection would walk `obj` (frozen objects are in no generation)."""
    return any(o is obj for o in gc.get_objects())


@pytest.fixture(autouse=True)
def thawed():
    gc.unfreeze()
    yield
    gc.unfreeze()


async def test_a_large_tree_is_out_of_the_collector_once_its_runner_steps():
    runner = ReactiveRunner(wide_tree(LARGE), Empty())
    assert tracked(runner.root)
    await runner.step()
    assert gc.get_freeze_count() >= len(runner.nodes)
    assert not tracked(runner.root) and not tracked(runner.nodes["root/leaf7"]) and not tracked(runner)


async def test_it_freezes_once_and_not_at_all_when_a_freeze_came_since_the_runner_was_built():
    runner = ReactiveRunner(wide_tree(LARGE), Empty())
    await runner.run()
    assert gc.get_freeze_count() > 0
    gc.unfreeze()
    await runner.run()  # a second run: frozen already
    assert gc.get_freeze_count() == 0
    other = ReactiveRunner(wide_tree(LARGE), Empty())
    long_lived.keep_out_of_collections(LARGE)  # what the studio does once the tree is drawn
    gc.unfreeze()
    await other.step()
    assert gc.get_freeze_count() == 0


async def test_a_small_tree_is_left_to_the_collector():
    runner = ReactiveRunner(wide_tree(10), Empty())
    await runner.step()
    assert gc.get_freeze_count() == 0 and tracked(runner.root)


async def test_nothing_is_frozen_while_the_application_has_the_collector_off():
    runner = ReactiveRunner(wide_tree(LARGE), Empty())
    gc.disable()
    try:
        await runner.step()
    finally:
        gc.enable()
    assert gc.get_freeze_count() == 0


async def test_a_replaced_tree_is_thawed_and_collected_when_the_next_large_runner_goes_live():
    runner = ReactiveRunner(wide_tree(LARGE), Empty())
    await runner.step()
    old_root = weakref.ref(runner.root)
    del runner
    gc.collect()
    assert old_root() is not None, "frozen: a collection cannot take it"
    await ReactiveRunner(wide_tree(LARGE), Empty()).step()
    assert old_root() is None, "the tree the new runner replaced is still alive"


async def two_ticks_seen_by_a_subscriber() -> tuple[list[RuntimeEvent], bool, int]:
    """(the events, whether the runner froze the tree, its node count)."""
    bus = RuntimeEventBus(history=0)
    seen: list[RuntimeEvent] = []
    bus.subscribe(seen.append)
    runner = ReactiveRunner(wide_tree(LARGE), Empty(), event_bus=bus)
    await runner.step()
    frozen = gc.get_freeze_count() > 0
    await runner.step()
    return seen, frozen, len(runner.nodes)


async def test_a_frozen_tree_s_runner_delivers_the_same_events(monkeypatch):
    seen, frozen, nodes = await two_ticks_seen_by_a_subscriber()
    monkeypatch.setattr(long_lived, "FREEZE_FROM", None)
    gc.unfreeze()
    plain, plain_frozen, _ = await two_ticks_seen_by_a_subscriber()
    assert frozen and not plain_frozen

    def shape(events: list[RuntimeEvent]) -> list[tuple]:
        return [(e.seq, e.type, e.tick, e.node, {k: v for k, v in e.payload.items() if k != "duration_ms"})
                for e in events]

    assert shape(seen) == shape(plain)
    assert sum(e.type == EventType.NODE_STATUS for e in seen) == nodes  # every node changed on the first tick
