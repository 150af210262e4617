"""A large tree's objects moved out of the garbage collector's walks.

A 100,000-node tree is about a million GC-tracked objects (behaviours, their children lists,
dicts, the runner's indexes) that live as long as its runner. CPython's full collection walks
every tracked object, and one comes each time the objects that survived since the last one add
up to a quarter of those it kept: a subscriber that keeps a run's events (one tracked
`RuntimeEvent` per changed node, every tick) brings one every few ticks, each walking the whole
tree again. `gc.freeze()` moves what is alive into the permanent generation, which collections
skip. A runner on a tree of `FREEZE_FROM` nodes or more calls `keep_out_of_collections` when it
first goes live (its first `run()` or `step()`), unless a freeze came since it was built (its
tree was alive then, so it is frozen already): the studio calls the seam once its widgets for
the tree exist (studio/app.py), before the first step, so it pays one collection, not two.

What this library freezing the process's objects means:

- Everything alive at that moment is frozen, not only the tree: the application's objects too.
  Nothing alive is harmed (a frozen object is only skipped by the collector); a frozen object
  that later becomes cyclic garbage is not freed until something thaws it.
- It thaws first (`gc.unfreeze()`), then collects, then freezes: what an earlier freeze kept
  (a tree since replaced, the application's own `gc.freeze()`) is collected if it died, and
  frozen again if not. An application that froze before `fork()` to keep its pages shared
  should not build a large runner in the child, or should set `FREEZE_FROM = None`.
- A dropped runner's tree is a reference cycle: once frozen it stays in memory until the next
  large runner is built (or the application calls `gc.unfreeze()`); at most the last one.
- It costs one full collection per large runner (~0.3-0.5 s at 110,000 nodes on the project's
  machine), paid once, as its first run or step starts, before the first tick.
- Nothing is done while the collector is disabled (`gc.disable()`: no walk to save), nor for
  trees under `FREEZE_FROM` nodes, whose walks cost less than the collection before a freeze.
"""

from __future__ import annotations

import gc

FREEZE_FROM: int | None = 1_000  # nodes; None: never freeze
_freezes = 0  # freezes done here: whatever was alive before the last one is frozen


def freezes() -> int:
    """How many freezes this seam has done: a runner built when this was lower than it is now
    has its tree frozen already."""
    return _freezes


def keep_out_of_collections(nodes: int) -> bool:
    """Freeze what is alive now, after thawing what an earlier freeze kept and collecting what
    died, when `nodes` (the tree's size) is at least `FREEZE_FROM`; returns whether it froze."""
    global _freezes
    if FREEZE_FROM is None or nodes < FREEZE_FROM or not gc.isenabled():
        return False
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _freezes += 1
    return True


__all__ = ["FREEZE_FROM", "freezes", "keep_out_of_collections"]
