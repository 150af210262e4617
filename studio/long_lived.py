"""The studio's objects that live as long as a tree, out of the garbage collector's reach.

The runner froze its tree when it was built (runtime/engine/long_lived.py); the studio then
draws as many Textual `TreeNode`s and node views, alive for the whole session, which every
full collection would walk again (0.5-1 s at 10,000 nodes, two or three times in one run).
So the app calls the runtime's seam once more after the tree is drawn: that freezes them too,
and after a restart it lets the replaced tree go, which the session still held when the new
runner was built (the seam thaws and collects before it freezes).
"""

from __future__ import annotations

from runtime.engine.long_lived import FREEZE_FROM, keep_out_of_collections

__all__ = ["FREEZE_FROM", "keep_out_of_collections"]
