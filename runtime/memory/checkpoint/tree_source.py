"""The text of the tree file a run was recorded with, kept in the store beside the run.

A recording is a test case of a tree: checking it later needs that tree, and the file may
have moved (a run file sent to a colleague) or changed (the fix being checked). So when a
run starts, its tree file's text is kept in `meta`, once per distinct text
(`tree-text:<sha256>`), and the run names it (`tree-file:<run id>`: file name, function,
hash). `check` uses the file where the run says it was, else this text, and says when the
two differ.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .store import StoreError

TEXT_KEY = "tree-text:"
FILE_KEY = "tree-file:"


@dataclass(frozen=True)
class TreeSource:
    """A tree file as a run was recorded with it: its name, the function that builds it, its text."""

    name: str  # the file's name, e.g. react_calculator.py
    function: str
    text: str

    @property
    def sha256(self) -> str:
        return text_hash(self.text)

    @property
    def short_hash(self) -> str:
        return self.sha256[:12]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def keep_tree_source(store: Any, run_id: str, path: Path, function: str) -> None:
    """Keep the tree file's text for run `run_id` (a file that cannot be read is not kept)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    put_tree_source(store, run_id, TreeSource(path.name, function, text))


def put_tree_source(store: Any, run_id: str, source: TreeSource) -> None:
    key = TEXT_KEY + source.sha256
    if store.get_meta(key) is None:
        store.set_meta(key, source.text)
    store.set_meta(FILE_KEY + run_id, json.dumps({"name": source.name, "function": source.function,
                                                  "sha256": source.sha256}))


def tree_source(store: Any, run_id: str) -> TreeSource | None:
    """The tree text kept for a run, or None (a run recorded before texts were kept, or by a service)."""
    named = store.get_meta(FILE_KEY + run_id)
    if named is None:
        return None
    try:
        facts = json.loads(named)
        name, function, sha256 = facts["name"], facts["function"], facts["sha256"]
    except (ValueError, KeyError, TypeError):
        raise StoreError(f"{store.location}: the tree file kept for run {run_id} is damaged ({FILE_KEY}{run_id} "
                         "does not read)") from None
    if not (isinstance(name, str) and _plain_file_name(name) and isinstance(function, str)
            and function.isidentifier() and isinstance(sha256, str)):
        # the name becomes a file written to run the tree: never a path out of its folder
        raise StoreError(f"{store.location}: the tree file kept for run {run_id} is damaged "
                         f"(name {str(name)[:80]!r}, function {str(function)[:80]!r})")
    text = store.get_meta(TEXT_KEY + sha256)
    return None if text is None else TreeSource(name, function, text)


def _plain_file_name(name: str) -> bool:
    """A `.py` file's own name: no folder, no parent, nothing a file name cannot hold."""
    return name.endswith(".py") and Path(name).name == name and "\\" not in name and "\x00" not in name


__all__ = ["FILE_KEY", "TEXT_KEY", "TreeSource", "keep_tree_source", "put_tree_source", "text_hash", "tree_source"]
