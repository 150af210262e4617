"""A writer for the liveness tests: `python writer_process.py STORE` records a run into STORE whose
one node never finishes, prints the run's id once its first checkpoint is stored, and goes on
until it is killed (a test sends SIGKILL to see a dead writer, SIGTERM to end a live one)."""

from __future__ import annotations

import asyncio
import sys

from py_trees.common import Status
from pydantic import BaseModel

from runtime.engine import ReactiveRunner
from runtime.memory.checkpoint import open_store
from runtime.node import AsyncNode


class Nothing(BaseModel):
    pass


class Forever(AsyncNode):
    """Says which run it is in (its input checkpoint is stored by then), then waits for ever."""

    async def update_async(self) -> Status:
        print(runner.run_id, flush=True)
        await asyncio.Event().wait()
        return Status.SUCCESS


runner = ReactiveRunner(Forever("Forever"), Nothing(), checkpointer=open_store(sys.argv[1]))
asyncio.run(runner.run())
