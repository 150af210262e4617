"""The studio's objects that live as long as a tree, out of the garbage collector's reach.

A runner freezes its large tree when it first goes live (runtime/engine/long_lived.py); the
studio draws as many Textual `TreeNode`s and node views, alive for the whole session, which
every full collection would walk again (0.5-1 s at 10,000 nodes, two or three times in one
run). So the app calls the runtime's seam once the tree is drawn, before the first step: that
freezes the tree and its widgets in one collection (the runner then skips its own), and after
a restart it lets the replaced tree go (the seam thaws and collects before it freezes).
"""

from __future__ import annotations

from runtime.engine.long_lived import FREEZE_FROM, keep_out_of_collections

__all__ = ["FREEZE_FROM", "keep_out_of_collections"]
