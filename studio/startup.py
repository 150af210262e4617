"""The garbage collector held off while the studio starts, then run once.

Opening the studio allocates a few hundred thousand objects that all live on (Textual's modules,
the tree's behaviours, the runner's indexes, the widgets) and hardly any garbage, so every
collection in that time walks objects only to keep them: from loading sample_trees/large_tree.py
(10,000 nodes) to its first frame, ~240 young, ~23 middle and 2 full collections, ~120 ms of a
launch of ~800. Once a large tree is on screen the studio pays one full collection anyway, to move
it out of the collector's walks (`runtime.engine.long_lived`). So the studio pauses the collector
from loading the tree until then (`paused()`, around the launch) and `resume` runs that one
collection (a small tree's: one of its own): the start's collections are not moved later, they
are not made at all.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from runtime.engine.long_lived import keep_out_of_collections

_paused = False  # collections turned off here (an application's own gc.disable() is left alone)


@contextmanager
def paused() -> Iterator[None]:
    """Collections off until `resume` (the first frame) or, at the latest, the end of the block."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True
    try:
        yield
    finally:
        if _paused:
            _paused = False
            gc.enable()


def resume(nodes: int) -> None:
    """Collections back on, once the first frame of a tree of `nodes` nodes is drawn: the tree kept out
    of them (its one full collection), or for a tree too small to freeze, what the start left collected."""
    global _paused
    resumed, _paused = _paused, False
    if resumed:
        gc.enable()  # nothing allocated before the collection below: no young collection of everything
    if not keep_out_of_collections(nodes) and resumed:
        gc.collect()


__all__ = ["paused", "resume"]
