"""`InMemoryCheckpointStore`: the same store, in an SQLite database that lives in memory.

Sharing the SQLite code keeps one implementation of delta chains, list chunks and
queries; nothing touches the disk and everything is gone when the process ends.
"""

from __future__ import annotations

from .sqlite_store import SQLiteCheckpointStore


class InMemoryCheckpointStore(SQLiteCheckpointStore):
    def __init__(self) -> None:
        super().__init__(":memory:")


__all__ = ["InMemoryCheckpointStore"]
