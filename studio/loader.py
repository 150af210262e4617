"""The studio loads tree files with the runtime's loader (`runtime.treefile`): `check` and
`runtime.testing` load them too, and the runtime never imports the studio."""

from runtime.treefile import LoadedTree, TreeLoadError, load_tree, split_target

__all__ = ["LoadedTree", "TreeLoadError", "load_tree", "split_target"]
