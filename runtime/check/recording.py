"""Which tree a recorded run is checked with, and what to tell the user about it.

In order: the tree given (`--tree`, `tree=`); else the file the run was recorded from, where
the store says it was; else the text kept with the run (`tree_source`), which is how a run
file checks on another machine or after the file moved. Whenever the tree used is not the
text the run was recorded with, a note says so with both hashes: a fix being checked is
exactly such a change, and a user should see that it is the one in play.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..agent import Agent
from ..memory.checkpoint.naming import display_name
from ..memory.checkpoint.store import CheckpointError, CheckpointStore, StoreError
from ..memory.checkpoint.tree_source import TreeSource, text_hash, tree_source
from ..treefile import LoadedTree, load_tree, load_tree_source, split_target


@dataclass
class TreeChoice:
    """How to build the tree a run is checked with (`build()` each time a re-run starts)."""

    name: str  # what messages call it
    loader: Callable[[], LoadedTree]
    notes: list[str] = field(default_factory=list)
    _first: LoadedTree | None = None

    def __post_init__(self) -> None:
        self._first = self.loader()  # a tree that does not load says so before anything runs

    def load(self) -> LoadedTree:
        """The tree, built afresh each time (the first build, made when chosen, is handed out first)."""
        loaded, self._first = self._first, None
        return loaded or self.loader()

    def build(self) -> Agent:
        return self.load().agent


def tree_for_run(store: CheckpointStore, run_id: str, given: str | None = None) -> TreeChoice:
    """The tree to check run `run_id` with; `CheckpointError` when there is no such run,
    `TreeLoadError` when the tree does not load, `StoreError` when the run names no tree and
    none was given."""
    if not store.list(run_id):
        raise CheckpointError(f"{display_name(store.location)}: no run {run_id!r}")
    kept = tree_source(store, run_id)
    if given is not None:
        choice = TreeChoice(given, lambda: load_tree(given))
        _note_change(choice, split_target(given)[0], kept, "the tree given")
        return choice
    recorded = store.get_meta(f"tree:{run_id}")
    if recorded is not None and split_target(recorded)[0].is_file():
        choice = TreeChoice(recorded, lambda: load_tree(recorded))
        _note_change(choice, split_target(recorded)[0], kept, "the file")
        return choice
    if kept is not None:
        choice = TreeChoice(f"{kept.name} (as recorded)", lambda: load_tree_source(kept))
        if recorded is not None:
            choice.notes.append(f"note: {split_target(recorded)[0]} is gone; checking with the tree text kept "
                                f"with the run ({kept.name}, sha256 {kept.short_hash})")
        return choice
    raise StoreError(f"{display_name(store.location)}: run {run_id} has no recorded tree file (give it with --tree)")


def _note_change(choice: TreeChoice, path: Path, kept: TreeSource | None, what: str) -> None:
    if kept is None:
        return
    try:
        now = text_hash(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return
    if now != kept.sha256:
        choice.notes.append(f"note: {what} {path} differs from the tree the run was recorded with "
                            f"(sha256 {now[:12]} now, {kept.short_hash} recorded as {kept.name})")


__all__ = ["TreeChoice", "tree_for_run"]
