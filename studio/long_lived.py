"""The objects that live as long as a tree, moved out of the garbage collector's reach.

A 10,000-node tree is some 10,000 py_trees behaviours, as many Textual `TreeNode`s and node
views, all alive for the whole session: every full collection walks them again (0.5-1 s at
10,000 nodes on the project's machine, two or three times in one run). `gc.freeze()` after
the tree is drawn puts them in the permanent generation, so collections walk only what the run
creates. Small trees are left alone: their walks cost little, and the collection before a
freeze would cost more than it saves.
"""

from __future__ import annotations

import gc

FREEZE_FROM = 1_000  # nodes


def keep_out_of_collections(nodes: int) -> None:
    """Freeze what is alive now, after collecting what is not: what an earlier freeze kept (a
    tree a restart replaced) is thawed first, so that collection takes it."""
    if nodes < FREEZE_FROM:
        return
    gc.unfreeze()
    gc.collect()
    gc.freeze()
