"""`AwaitedWrites`: the writes a runner awaits (`RunnerCheckpoints`) instead of blocking its event loop.

A store becomes one by how it runs a write's plan without holding the loop (`_run_async`: the asyncio
PostgreSQL store over its async connections, the threaded SQLite store in its writer thread); the
plans themselves are the synchronous store's (`saving`, `adding_events`, `putting_io`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from ...engine.events import RuntimeEvent
from .model import CheckpointRecord, ListChunk
from .sql_plan import Plan
from .store import IORecord

T = TypeVar("T")


class AwaitedWrites:
    """`save_async`, `add_events_async` and `put_io_async` over the store's `_run_async`."""

    saving: Any
    adding_events: Any
    putting_io: Any

    def _run_async(self, plan: Plan[T]) -> Awaitable[T]:
        raise NotImplementedError

    def save_async(self, record: CheckpointRecord, events: Sequence[tuple[str, RuntimeEvent]] = ()) -> Awaitable[int]:
        """The record encoded now (the runner's picture moves on), written when awaited: its
        `parent_id` and `base_id` may be set until then."""
        return self._run_async(self.saving(record, events))

    async def add_events_async(self, events: Sequence[tuple[str, RuntimeEvent]]) -> None:
        await self._run_async(self.adding_events(events))

    async def put_io_async(self, record: IORecord, chunks: Sequence[ListChunk] = ()) -> None:
        await self._run_async(self.putting_io(record, chunks))


__all__ = ["AwaitedWrites"]
