"""A tree whose work outlasts any test (an hour's sleep): a run continued on it waits for that work, so
a test can pause it there without racing the work's end."""

import asyncio

from py_trees.common import Status
from pydantic import BaseModel

from runtime import Agent
from runtime.node import AsyncNode, Log, Sequence


class Waits(BaseModel):
    done: bool = False


class Outlasts(AsyncNode):
    async def update_async(self) -> Status:
        await asyncio.sleep(3600)
        return Status.SUCCESS


def build() -> Agent:
    return Agent(Sequence("Waits", memory=True, children=[Log("Starts", message="started"), Outlasts("Outlasts")]),
                 state_schema=Waits)
